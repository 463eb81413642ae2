"""Structure of docker-compose.yml and the service Dockerfiles in deploy/, checked without a Docker engine.

The checkers return problems as a list of strings (empty = fine); the tests run them on the real files and on
bad samples, so a rule that stops catching its mistake fails here. The compose file is also validated against
the Compose Specification JSON schema (schemas/compose-spec.json, vendored from check-jsonschema 0.39.0,
Apache-2.0, see schemas/LICENSE.compose-spec).
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DEPLOY_README = ROOT / "deploy" / "README.md"
SCHEMA = Path(__file__).with_name("schemas") / "compose-spec.json"

WAITING_CONDITIONS = {"service_healthy", "service_completed_successfully"}
SECRET_KEY = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL", re.I)
URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^:/@\s{}$]+:(?P<password>[^@\s]+)@", re.I)
ABSOLUTE_HOST_PATH = re.compile(r"^(/|~|\$\{?HOME\b|[A-Za-z]:[\\/])")
DEV_MARKER = "dev"


# --- interpolation ---------------------------------------------------------------------------------------
def whole_interpolation(value: str) -> tuple[str, str | None] | None:
    """``("VAR", default)`` when ``value`` is exactly one ``${VAR...}`` expression, else None.

    ``default`` is the text after ``:-``/``-`` (None for ``${VAR}``, ``${VAR:?msg}`` and friends).
    """
    if not value.startswith("${") or not value.endswith("}"):
        return None
    depth = 0
    for i, ch in enumerate(value):
        if value.startswith("${", i):
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and i != len(value) - 1:
                return None  # "${A}${B}" or "${A}text}"
    match = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?\}", value, re.S)
    if match is None:
        return None
    name, operator, rest = match.groups()
    return name, rest if operator in (":-", "-") else None


def secret_value_problems(where: str, value: str, documented: str) -> list[str]:
    """A secret must be an interpolation whose default (if any) is a documented development default."""
    parsed = whole_interpolation(value)
    if parsed is None:
        return [f"{where}: secret in clear text; use ${{VAR:-dev-default}} or ${{VAR}}"]
    name, default = parsed
    problems = []
    if default and DEV_MARKER not in default.lower():
        problems.append(f"{where}: default of ${{{name}}} does not look like a development default")
    if default and name not in documented:
        problems.append(f"{where}: ${{{name}}} has a default but is not documented in deploy/README.md")
    return problems


# --- Dockerfiles -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined; comments and blank lines dropped (no heredocs)."""
    out: list[Instruction] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # inside a continuation too: Docker ignores comment lines there
        if not parts:
            start = number
        continued = line.endswith("\\")
        parts.append(line[:-1].strip() if continued else line)
        if not continued:
            keyword, _, args = " ".join(p for p in parts if p).partition(" ")
            out.append(Instruction(keyword.upper(), args.strip(), start))
            parts = []
    if parts:
        keyword, _, args = " ".join(parts).partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), start))
    return out


def final_stage(instructions: list[Instruction]) -> list[Instruction]:
    starts = [i for i, ins in enumerate(instructions) if ins.keyword == "FROM"]
    return instructions[starts[-1] :] if starts else instructions


def image_healthcheck(instructions: list[Instruction]) -> Instruction | None:
    """The HEALTHCHECK in force in the final image (None if absent or ``HEALTHCHECK NONE``)."""
    checks = [ins for ins in final_stage(instructions) if ins.keyword == "HEALTHCHECK"]
    if not checks or checks[-1].args.upper().startswith("NONE"):
        return None
    return checks[-1]


def copy_sources(ins: Instruction) -> list[str] | None:
    """Sources of a COPY/ADD from the build context (None for other instructions and ``--from=`` copies)."""
    if ins.keyword not in ("COPY", "ADD"):
        return None
    words = ins.args.split()
    if any(w.startswith("--from") for w in words):
        return None
    paths = [w for w in words if not w.startswith("--")]
    return paths[:-1]


def is_manifest_copy(sources: list[str]) -> bool:
    return bool(sources) and all(Path(s).name in ("pyproject.toml", "uv.lock") for s in sources)


def is_uv_sync(ins: Instruction) -> bool:
    return ins.keyword == "RUN" and "uv sync" in ins.args


def dependencies_only(ins: Instruction) -> bool:
    return is_uv_sync(ins) and ("--no-install-workspace" in ins.args or "--no-install-project" in ins.args)


def dockerfile_problems(text: str, *, package: str, members: list[str]) -> list[str]:
    """Rules for a service image: locked dependencies-only layer first, non-root USER, HEALTHCHECK."""
    instructions = parse_dockerfile(text)
    final = final_stage(instructions)
    problems: list[str] = []

    users = [ins for ins in final if ins.keyword == "USER"]
    if not users:
        problems.append("final stage has no USER (runs as root)")
    else:
        user = users[-1].args.split(":")[0]
        if user in ("root", "0"):
            problems.append(f"line {users[-1].line}: USER {user} is root")
        elif not user.isdigit():
            problems.append(f"line {users[-1].line}: USER {user} is not numeric (runAsNonRoot cannot verify)")
    if image_healthcheck(instructions) is None:
        problems.append("final stage has no HEALTHCHECK")
    if not any(ins.keyword in ("CMD", "ENTRYPOINT") for ins in final):
        problems.append("final stage has no CMD or ENTRYPOINT")

    dep = next((i for i, ins in enumerate(instructions) if dependencies_only(ins)), None)
    if dep is None:
        return [*problems, "no dependencies-only layer (RUN uv sync --no-install-workspace)"]
    manifests: set[str] = set()
    for ins in instructions[:dep]:
        sources = copy_sources(ins)
        if sources is None:
            continue
        if not is_manifest_copy(sources):
            problems.append(
                f"line {ins.line}: sources copied before the dependencies-only layer ({ins.args})"
            )
        manifests.update(s.rstrip("/") for s in sources)
    for needed in ["pyproject.toml", "uv.lock", *(f"{m}/pyproject.toml" for m in members)]:
        if needed not in manifests:
            problems.append(
                f"dependencies-only layer does not see {needed} (uv needs every member to check the lock)"
            )
    later = instructions[dep + 1 :]
    first_source = next((i for i, ins in enumerate(later) if copy_sources(ins)), None)
    installs = [ins for ins in later[first_source or 0 :] if is_uv_sync(ins) and not dependencies_only(ins)]
    if first_source is None or not installs:
        problems.append("the service is never installed after its sources are copied")
    for ins in [instructions[dep], *installs]:
        if "--locked" not in ins.args and "--frozen" not in ins.args:
            problems.append(f"line {ins.line}: uv sync without --locked")
        if f"--package {package}" not in ins.args:
            problems.append(f"line {ins.line}: uv sync does not select --package {package}")
    return problems


# --- compose ---------------------------------------------------------------------------------------------
def environment_items(service: dict[str, Any]) -> list[tuple[str, str]]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return [(item.partition("=")[0], item.partition("=")[2]) for item in env]
    return [(str(k), "" if v is None else str(v)) for k, v in env.items()]


def all_strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in all_strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in all_strings(v)]
    return []


def volume_problems(name: str, service: dict[str, Any], doc: dict[str, Any], root: Path) -> list[str]:
    problems = []
    declared = set((doc.get("volumes") or {}).keys())
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            parts = volume.split(":")
            source, kind = (parts[0], "bind" if parts[0].startswith((".", "/", "~", "$")) else "volume")
            if len(parts) == 1:
                continue  # anonymous volume
        else:
            source, kind = str(volume.get("source", "")), volume.get("type", "volume")
        if ABSOLUTE_HOST_PATH.match(source) or re.match(r"^[A-Za-z]:", source):
            problems.append(f"{name}: host-specific absolute path in volume {volume!r}")
        elif kind == "bind" and not (root / source).exists():
            problems.append(f"{name}: bind source {source} does not exist in the repository")
        elif kind == "volume" and source not in declared:
            problems.append(f"{name}: named volume {source} is not declared under top-level volumes")
    return problems


def healthcheck_problems(name: str, service: dict[str, Any], doc: dict[str, Any], root: Path) -> list[str]:
    check = service.get("healthcheck")
    if check is not None and check.get("disable"):
        dependants = [
            spec.get("condition")
            for other in doc["services"].values()
            if isinstance(other.get("depends_on"), dict)
            for dep, spec in other["depends_on"].items()
            if dep == name
        ]
        one_shot = str(service.get("restart", "no")) == "no"
        if one_shot and all(c == "service_completed_successfully" for c in dependants):
            return []
        return [f"{name}: health check disabled, but it is not a one-shot job waited on for completion"]
    if check is not None:
        return [] if check.get("test") else [f"{name}: healthcheck has no test"]
    build = service.get("build")
    if build is None:
        return [f"{name}: no healthcheck, and its image's HEALTHCHECK cannot be read (no build)"]
    context = root / (build if isinstance(build, str) else build.get("context", "."))
    dockerfile = context / ("Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile"))
    if not dockerfile.is_file():
        return [f"{name}: Dockerfile {dockerfile.relative_to(root)} does not exist"]
    if image_healthcheck(parse_dockerfile(dockerfile.read_text())) is None:
        return [f"{name}: no healthcheck in compose nor a HEALTHCHECK in {dockerfile.relative_to(root)}"]
    return []


def compose_problems(doc: dict[str, Any], *, root: Path, documented: str) -> list[str]:
    """Rules for docker-compose.yml: health everywhere, waiting dependencies, no host paths or clear secrets."""
    problems: list[str] = []
    services: dict[str, Any] = doc.get("services") or {}
    for name, service in services.items():
        problems += healthcheck_problems(name, service, doc, root)
        depends = service.get("depends_on")
        if isinstance(depends, list):
            problems.append(
                f"{name}: depends_on list form only waits for start; use condition: service_healthy"
            )
        for dep, spec in (depends or {}).items() if isinstance(depends, dict) else []:
            if dep not in services:
                problems.append(f"{name}: depends on unknown service {dep}")
            if (spec or {}).get("condition") not in WAITING_CONDITIONS:
                problems.append(f"{name}: depends_on {dep} does not wait for health or completion")
        problems += volume_problems(name, service, doc, root)
        build = service.get("build")
        if isinstance(build, dict) and build.get("context", ".") not in (".", "./"):
            problems.append(f"{name}: build context must be the repository root")
        for key, value in environment_items(service):
            if SECRET_KEY.search(key) and value:
                problems += secret_value_problems(f"{name}.environment.{key}", value, documented)
        for config in service.get("configs") or []:
            source = config if isinstance(config, str) else config.get("source")
            if source not in (doc.get("configs") or {}):
                problems.append(f"{name}: config {source} is not declared under top-level configs")
        for text in all_strings(service):
            for match in URL_PASSWORD.finditer(text):
                problems += secret_value_problems(f"{name}: password in URL", match["password"], documented)
    for kind in ("configs", "secrets"):
        for key, spec in (doc.get(kind) or {}).items():
            file = str((spec or {}).get("file", ""))
            if file and (ABSOLUTE_HOST_PATH.match(file) or not (root / file).is_file()):
                problems.append(f"{kind}.{key}: file {file} must be a relative path to a repository file")
    return problems


# --- fixtures --------------------------------------------------------------------------------------------
def workspace_members() -> list[str]:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]["members"]
    found = {p.parent for g in globs for p in ROOT.glob(f"{g}/pyproject.toml")}
    return sorted(str(p.relative_to(ROOT)) for p in found)


SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "pyproject.toml").is_file())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def documented() -> str:
    return DEPLOY_README.read_text()


# --- the real files --------------------------------------------------------------------------------------
def test_compose_file_is_valid_against_the_compose_specification(compose: dict[str, Any]) -> None:
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert errors == []


def test_compose_file_follows_the_deployment_rules(compose: dict[str, Any], documented: str) -> None:
    assert compose_problems(compose, root=ROOT, documented=documented) == []


def test_compose_runs_the_real_stack_and_every_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for infra in ("postgres", "nats", "mongo", "clickhouse", "dynamodb", "migrate"):
        assert infra in services
    for name in SERVICES:
        assert services[name]["build"]["dockerfile"] == f"deploy/{name}/Dockerfile"
    assert "-js" in services["nats"]["command"] or "--jetstream" in services["nats"]["command"]
    for name in ("prompt-api", "model-api"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


@pytest.mark.parametrize("service", SERVICES)
def test_service_dockerfile_follows_the_image_rules(service: str) -> None:
    text = (ROOT / "deploy" / service / "Dockerfile").read_text()
    assert dockerfile_problems(text, package=f"stockade-{service}", members=workspace_members()) == []


@pytest.mark.parametrize("service", SERVICES)
def test_service_image_runs_its_module_and_probes_health(service: str) -> None:
    instructions = parse_dockerfile((ROOT / "deploy" / service / "Dockerfile").read_text())
    module = "stockade." + service.replace("-", "_")
    cmd = [ins for ins in final_stage(instructions) if ins.keyword == "CMD"][-1]
    assert json.loads(cmd.args) == ["python", "-m", module]
    check = image_healthcheck(instructions)
    assert check is not None and "python -m stockade.runtime.probe" in check.args


def test_nats_container_gets_every_variable_its_config_references(compose: dict[str, Any]) -> None:
    # nats-server refuses to start when a $VARIABLE of its config (or of an included file) is unset.
    referenced = set()
    for conf in (ROOT / "deploy" / "nats").glob("*.conf"):
        text = "\n".join(line.split("#")[0] for line in conf.read_text().splitlines())
        unquoted = re.sub(r'"[^"]*"', "", text)  # "$JS.API..." in quotes is a subject, not a variable
        referenced.update(re.findall(r"\$([A-Z_][A-Z0-9_]*)", unquoted))
    provided = {key for key, _ in environment_items(compose["services"]["nats"])}
    assert referenced, "expected password variables in deploy/nats/*.conf"
    assert sorted(referenced - provided) == []


def compose_defaults(service: dict[str, Any]) -> dict[str, str]:
    """The environment a service gets when no variable is set on the host (defaults resolved)."""
    resolved = {}
    for key, value in environment_items(service):
        parsed = whole_interpolation(value)
        resolved[key] = parsed[1] or "" if parsed else value
    return resolved


def test_trust_broker_registry_loads_and_matches_the_nats_agents(compose: dict[str, Any]) -> None:
    from stockade.guardrails.trust.keys import KeyRing
    from stockade.guardrails.trust.loading import trust_config_from_path

    broker = compose["services"]["trust-broker"]
    target = broker["environment"]["TRUST_BROKER_CONFIG_PATH"]
    mounted = [c for c in broker["configs"] if c["target"] == target]
    assert len(mounted) == 1
    config = trust_config_from_path(ROOT / compose["configs"][mounted[0]["source"]]["file"])
    ring = KeyRing.from_config(config, environ=compose_defaults(broker))  # every secret_env set, 32+ bytes
    agents_conf = (ROOT / "deploy" / "nats" / "agents.conf").read_text()
    nats_agents = set(re.findall(r"(?m)^\s*user:\s*([A-Za-z0-9_-]+)", agents_conf))
    assert {agent.id for agent in config.agents} == nats_agents
    assert all(ring.signing_key_id(agent) for agent in nats_agents)


def test_dockerignore_keeps_local_state_and_secrets_out_of_the_context() -> None:
    patterns = [
        line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if not line.startswith("#")
    ]
    for needed in ("**/.venv", "**/.git", ".stockade", "**/.env", "**/__pycache__"):
        assert needed in patterns
    assert not any(p in ("**/*.md", "*.md", "libs", "services") for p in patterns)  # builds need README.md


def test_no_secret_detector_finding_in_the_compose_file() -> None:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with default_settings():
        found = SecretsCollection()
        found.scan_file(str(COMPOSE))
    assert [(s.type, s.line_number) for secrets in found.data.values() for s in secrets] == []


# --- the checkers catch their mistakes -------------------------------------------------------------------
GOOD_DOCKERFILE = """\
# syntax=docker/dockerfile:1
FROM python:3.11-slim AS builder
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /bin/uv
COPY pyproject.toml uv.lock ./
COPY libs/a/pyproject.toml libs/a/
RUN --mount=type=cache,target=/root/.cache/uv \\
    uv sync --locked --no-install-workspace --package stockade-x
COPY libs/ libs/
RUN uv sync --locked --no-editable --package stockade-x
FROM python:3.11-slim
COPY --from=builder /app/.venv /app/.venv
USER 10001:10001
HEALTHCHECK CMD python -m stockade.runtime.probe http://127.0.0.1:8101/healthz
CMD ["python", "-m", "stockade.x"]
"""


def dockerfile_check(text: str) -> list[str]:
    return dockerfile_problems(text, package="stockade-x", members=["libs/a"])


def test_dockerfile_checker_accepts_the_good_sample() -> None:
    assert dockerfile_check(GOOD_DOCKERFILE) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("USER 10001:10001\n", "", "no USER"),
        ("USER 10001:10001", "USER root", "is root"),
        ("USER 10001:10001", "USER 0", "is root"),
        ("USER 10001:10001", "USER app", "not numeric"),
        ("HEALTHCHECK CMD python", "HEALTHCHECK NONE\n# CMD python", "no HEALTHCHECK"),
        ("COPY pyproject.toml uv.lock ./\n", "COPY . .\n", "sources copied before"),
        ("COPY libs/a/pyproject.toml libs/a/\n", "", "does not see libs/a/pyproject.toml"),
        (" --no-install-workspace", "", "no dependencies-only layer"),
        ("uv sync --locked --no-editable", "uv sync --no-editable", "without --locked"),
        ("--no-editable --package stockade-x", "--no-editable", "does not select --package"),
        ("RUN uv sync --locked --no-editable --package stockade-x\n", "", "never installed"),
    ],
)
def test_dockerfile_checker_rejects_a_bad_sample(old: str, new: str, expected: str) -> None:
    bad = GOOD_DOCKERFILE.replace(old, new)
    assert bad != GOOD_DOCKERFILE
    assert any(expected in problem for problem in dockerfile_check(bad)), dockerfile_check(bad)


def test_dockerfile_parser_joins_continuations_and_skips_comments() -> None:
    parsed = parse_dockerfile("FROM a\n# c\nRUN one \\\n  # inside\n  two\nUSER 1\n")
    assert [(i.keyword, i.args, i.line) for i in parsed] == [
        ("FROM", "a", 1),
        ("RUN", "one two", 3),
        ("USER", "1", 6),
    ]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["services"]["postgres"].pop("healthcheck"), "postgres: no healthcheck"),
        (lambda d: d["services"]["nats"]["healthcheck"].pop("test"), "nats: healthcheck has no test"),
        (
            lambda d: d["services"]["prompt-api"]["depends_on"]["nats"].update(condition="service_started"),
            "prompt-api: depends_on nats does not wait",
        ),
        (lambda d: d["services"]["model-api"].update(depends_on=["nats"]), "list form"),
        (lambda d: d["services"]["mongo"]["volumes"].append("/srv/mongo:/data/db"), "absolute path"),
        (lambda d: d["services"]["mongo"]["volumes"].append("~/mongo:/data/db"), "absolute path"),
        (lambda d: d["services"]["mongo"]["volumes"].append("undeclared:/x"), "not declared"),
        (
            lambda d: d["services"]["postgres"]["environment"].update(POSTGRES_PASSWORD="hunter2"),
            "secret in clear text",
        ),
        (
            lambda d: d["services"]["postgres"]["environment"].update(POSTGRES_PASSWORD="${PG:-Xk29fj3}"),
            "does not look like a development default",
        ),
        (
            lambda d: d["services"]["postgres"]["environment"].update(
                POSTGRES_PASSWORD="${UNDOCUMENTED_PASSWORD:-dev-x}"
            ),
            "not documented",
        ),
        (
            lambda d: d["services"]["prompt-api"]["environment"].update(
                PROMPT_API_DB__URL="postgresql+asyncpg://stockade:hunter2@postgres:5432/stockade"
            ),
            "password in URL",
        ),
        (
            lambda d: d["services"]["migrate"].update(restart="unless-stopped"),
            "migrate: health check disabled",
        ),
        (lambda d: d["services"]["trust-broker"]["build"].update(context="deploy"), "build context"),
        (lambda d: d["configs"]["trust-registry"].update(file="/etc/trust.yaml"), "relative path"),
        (lambda d: d["services"]["trust-broker"]["configs"][0].update(source="nope"), "not declared"),
    ],
)
def test_compose_checker_catches_a_mistake_in_the_real_file(
    compose: dict[str, Any], documented: str, mutate: Any, expected: str
) -> None:
    bad = copy.deepcopy(compose)
    mutate(bad)
    problems = compose_problems(bad, root=ROOT, documented=documented)
    assert any(expected in problem for problem in problems), problems


def test_image_healthcheck_counts_only_when_the_dockerfile_has_one(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(GOOD_DOCKERFILE.replace("HEALTHCHECK", "# HEALTHCHECK"))
    doc = {"services": {"x": {"build": {"context": "."}}}}
    assert compose_problems(doc, root=tmp_path, documented="") == [
        "x: no healthcheck in compose nor a HEALTHCHECK in Dockerfile"
    ]
    (tmp_path / "Dockerfile").write_text(GOOD_DOCKERFILE)
    assert compose_problems(doc, root=tmp_path, documented="") == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("${A}", ("A", None)),
        ("${A:-dev}", ("A", "dev")),
        ("${A:?set A}", ("A", None)),
        ("${A:-x${B:-y}z}", ("A", "x${B:-y}z")),
        ("${A}${B}", None),
        ("pre${A}", None),
        ("plain", None),
    ],
)
def test_whole_interpolation(value: str, expected: tuple[str, str | None] | None) -> None:
    assert whole_interpolation(value) == expected
