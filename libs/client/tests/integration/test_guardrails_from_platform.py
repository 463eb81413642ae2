"""GuardrailSystem.from_platform on the real prompt-api and NATS (issue 31): an agent changes behaviour within
seconds of a publish without a restart; a version that does not build leaves it on the last good one with a
logged error; with prompt-api down at start it runs on its disk copy and says so."""

import logging
import time
from collections.abc import Callable

import pytest

from stockade.client import ClientSettings, PushSettings, StockadeClient
from stockade.contracts import PolicyRef
from stockade.guardrails import GuardrailError, GuardrailSystem, LLMRails

LENIENT = "guardrails:\n  checks:\n    pii:\n      enabled: false\n    exfiltration:\n      enabled: false\n"
STRICT = (
    "guardrails:\n  checks:\n    pii:\n      enabled: false\n    exfiltration:\n      enabled: true\n"
    "      secrets:\n        detect_secrets: false\n"
)
UNBUILDABLE = (
    "guardrails:\n  checks:\n    custom:\n      broken:\n        enabled: true\n"
    "        factory: 'stockade_no_such_module:make'\n"
)
LEAK = "the key is AKIAQ3EGRT7PLMZK5VXC"


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = 15) -> None:
    """Every wait has a deadline: the push path takes well under a second here."""
    end = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < end, f"no {what} within {deadline_s} s"
        time.sleep(0.05)


class Lines(logging.Handler):
    """The library's log lines, read from its own logger (whatever the process's logging set-up)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def library_log():
    logger, lines = logging.getLogger("stockade.guardrails.platform"), Lines()
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(lines)
    logger.setLevel(level)


@pytest.fixture
def platform(world, nats_url, tmp_path):
    settings = ClientSettings(base_url=world.base_url, push=PushSettings(nats_url=nats_url))
    made: list[GuardrailSystem] = []

    def make(**options) -> GuardrailSystem:
        options.setdefault("cache_dir", tmp_path / "policies")
        system = GuardrailSystem.from_platform(
            world.project_id, "agent", api_key=world.read_key, settings=settings, **options
        )
        made.append(system)
        return system

    yield make
    for system in made:
        system._platform_client.close()


def publisher(world) -> StockadeClient:
    return StockadeClient(world.write_key, ClientSettings(base_url=world.base_url))


async def test_a_publish_changes_the_running_agent_within_seconds(world, platform, library_log):
    with publisher(world) as admin:
        admin.publish_policy(world.project_id, "agent", LENIENT)
        system = platform()
        assert system.policy_ref == PolicyRef(name="agent", version=1)
        assert (await system.check_output(LEAK)).action.value == "allow"

        admin.publish_policy(world.project_id, "agent", STRICT, "block leaked keys")
        wait_for(lambda: system.policy_ref == PolicyRef(name="agent", version=2), "swap to version 2")
        assert (await system.check_output(LEAK)).action.value == "block"

        # a version that does not build on the agent: refused there, the agent stays on version 2
        admin.publish_policy(world.project_id, "agent", UNBUILDABLE)
        wait_for(lambda: "ERROR" in library_log.text and "version 3" in library_log.text, "the build error")
        assert "does not build" in library_log.text and "staying on version 2" in library_log.text
        assert system.policy_ref == PolicyRef(name="agent", version=2)
        assert (await system.check_output(LEAK)).action.value == "block"
        # an invalid version never reaches it: prompt-api refuses it (422) and stores nothing
        refused = admin._http.post(
            "/policies/active-version",
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.project_id, "policy_name": "agent", "yaml": "guardrails: {nope: 1}\n"},
        )
        assert refused.status_code == 422
        # and it still follows: a rollback to version 1 is version 4, active within seconds
        admin.rollback_policy(world.project_id, "agent", 1)
        wait_for(lambda: system.policy_ref == PolicyRef(name="agent", version=4), "swap to version 4")
        assert (await system.check_output(LEAK)).action.value == "allow"


async def test_prompt_api_down_at_start_runs_on_the_disk_copy(world, platform, library_log, tmp_path):
    with publisher(world) as admin:
        admin.publish_policy(world.project_id, "agent", STRICT)
    first = platform()  # keeps version 1 on disk
    assert first.policy_ref == PolicyRef(name="agent", version=1)
    await first.aclose()  # closes its own client and push
    world.server.stop()
    system = platform()
    assert system.policy_ref == PolicyRef(name="agent", version=1)
    assert "WARNING prompt-api is unreachable" in library_log.text and "disk copy" in library_log.text
    assert (await system.check_output(LEAK)).action.value == "block"
    with pytest.raises(GuardrailError, match="no disk copy"):
        platform(cache_dir=tmp_path / "empty")


def test_llm_rails_from_platform_runs_the_policy(world, platform, nats_url, tmp_path):
    with publisher(world) as admin:
        admin.publish_policy(world.project_id, "agent", STRICT)
    settings = ClientSettings(base_url=world.base_url, push=PushSettings(nats_url=nats_url))
    rails = LLMRails.from_platform(
        world.project_id,
        "agent",
        platform={"api_key": world.read_key, "settings": settings, "cache_dir": tmp_path / "rails"},
        provider=_NoModel(),
    )
    try:
        assert rails.system.policy_ref == PolicyRef(name="agent", version=1)  # type: ignore[attr-defined]
    finally:
        rails.system._platform_client.close()  # type: ignore[attr-defined]


class _NoModel:
    """A provider that is never called: the test only builds the rails."""

    model = "none"

    async def generate(self, request):  # pragma: no cover - never called
        raise AssertionError("not called")
