"""Every NATS name is defined in ``stockade.contracts``, and deploy/nats grants only such names.

Code: the ``src/`` trees of libs/ and services/ (contracts excluded: it is where names are defined) are read with
``ast``, nothing imported. A string literal counts as a bus name when it looks like a versioned subject
(``<domain>.<fact>.v<N>``) or an agent subject, when it is the subject, stream or bucket argument of a NATS call,
or when it is the default of a parameter, field or variable named ``*subject``, ``*stream`` or ``*bucket``. Such a
literal must be a name ``stockade.contracts`` defines (better: the code uses the constant). JetStream API prefixes
(``$KV.``, ``$JS.``) are protocol, not names.

Permissions: every subject granted in deploy/nats/nats-server.conf and agents.conf must be a contracts subject, an
agent subject of the shapes contracts builds, a reply inbox, or JetStream API of a contracts stream or bucket; and
each service user is granted every contracts subject and bucket its code refers to, and its health subject (an
event read by a pull consumer: the consumer API of its stream).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from stockade.contracts import envelope, subjects
from stockade.contracts.streams import BUCKETS, CONSUMERS, GUARDRAIL_AUDIT_CONSUMER, STREAM_SPECS

ROOT = Path(__file__).resolve().parents[2]
SRC_FILES = [
    path
    for tree in sorted(ROOT.glob("libs/*/src"))
    + sorted(ROOT.glob("services/*/src"))
    + sorted(ROOT.glob("apps/*/src"))
    if tree.parent.name != "contracts"
    for path in sorted(tree.rglob("*.py"))
]
NATS_DIR = ROOT / "deploy" / "nats"

_VERSIONED = re.compile(r"^[a-z][a-z_]*(\.([a-z][a-z_]*|\*|>))*\.v[0-9]+$")
_AGENT = re.compile(r"^(trust\.submit|agent\.)")
_API_PREFIXES = ("$KV.", "$JS.")
# Methods of nats-py / FastStream whose first argument (or subject/stream/bucket keyword) is a bus name.
_BUS_CALLS = frozenset(
    {
        "publish", "subscribe", "request", "pull_subscribe", "subscriber", "publisher", "stream_info", "add_stream",
        "update_stream", "delete_stream", "purge_stream", "key_value", "create_key_value", "delete_key_value",
        "get_msg", "delete_msg", "get_last_msg", "add_consumer", "consumer_info", "delete_consumer",
    }
)  # fmt: skip
_NAME_KEYWORDS = frozenset({"subject", "stream", "bucket", "durable"})


def contract_names() -> set[str]:
    """Subjects (events, commands, wildcards), stream, bucket and consumer names defined in stockade.contracts."""
    names = {v for k, v in vars(subjects).items() if k.isupper() and isinstance(v, str)}
    consumers = {name for names in CONSUMERS.values() for name in names}
    return names | set(STREAM_SPECS) | set(BUCKETS) | consumers | {GUARDRAIL_AUDIT_CONSUMER}


def _named_for_bus(name: str) -> bool:
    return name.removesuffix("_name").rsplit("_", 1)[-1] in _NAME_KEYWORDS


def _literals(node: ast.AST | None) -> Iterator[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node


def bus_literals(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal in ``source`` that names a subject, stream or bucket."""
    tree = ast.parse(source)
    seen: set[int] = set()
    for node in ast.walk(tree):
        found: list[ast.Constant] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _VERSIONED.match(node.value) or _AGENT.match(node.value):
                found.append(node)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in _BUS_CALLS and node.args:
                found += _literals(node.args[0])
            for keyword in node.keywords:
                if (
                    keyword.arg
                    and (called in _BUS_CALLS or called == "Field")
                    and _named_for_bus(keyword.arg)
                ):
                    found += _literals(keyword.value)
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            for arg, default in zip(
                positional[len(positional) - len(node.defaults) :], node.defaults, strict=True
            ):
                if _named_for_bus(arg.arg):
                    found += _literals(default)
            for arg, kw_default in zip(node.kwonlyargs, node.kw_defaults, strict=True):
                if _named_for_bus(arg.arg):
                    found += _literals(kw_default)
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            names = [t.id if isinstance(t, ast.Name) else getattr(t, "attr", "") for t in targets]
            if any(_named_for_bus(n.lower()) for n in names):
                value = node.value
                if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field":
                    value = next((k.value for k in value.keywords if k.arg == "default"), None)
                found += _literals(value)
        for constant in found:
            if id(constant) not in seen and not constant.value.startswith(_API_PREFIXES):
                seen.add(id(constant))
                yield constant.lineno, constant.value


def undefined_names(files: Iterable[Path]) -> list[str]:
    known = contract_names()
    return [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in files
        for line, text in bus_literals(path.read_text(encoding="utf-8"))
        if text not in known
    ]


def test_every_bus_name_in_code_is_defined_in_contracts() -> None:
    assert undefined_names(SRC_FILES) == [], (
        "define these in stockade.contracts (subjects/streams) and use it"
    )


def test_the_scan_finds_names_that_contracts_lacks() -> None:
    source = (
        'async def f(js, nc, bucket: str = "stockade_rate_limits"):\n'
        '    await js.publish("orders", b"")\n'
        '    await nc.subscribe(subject="orders.created.v1")\n'
        '    await js.stream_info("ORDERS")\n'
        '    await js.pull_subscribe(GUARDRAIL_EVENTS, durable="other-sink")\n'
        'dead_letter_stream = Field(default="ORDERS_DLQ")\n'
        'ok = js.key_value(KV_RATE_LIMITS), "guardrail.events.v1", f"$KV.{bucket}."\n'
    )
    known = contract_names()
    flagged = [text for _, text in bus_literals(source) if text not in known]
    assert sorted(flagged) == [
        "ORDERS",
        "ORDERS_DLQ",
        "orders",
        "orders.created.v1",
        "other-sink",
        "stockade_rate_limits",
    ]


# --- deploy/nats -----------------------------------------------------------------------------------------------


def _conf_text(name: str) -> str:
    return "\n".join(line.split("#", 1)[0] for line in (NATS_DIR / name).read_text().splitlines())


def grants(name: str) -> dict[str, tuple[list[str], list[str]]]:
    """User -> (publish allow, subscribe allow) of a permission file."""
    users: dict[str, tuple[list[str], list[str]]] = {}
    for chunk in re.split(r"\buser:\s*", _conf_text(name))[1:]:
        user = chunk.split(None, 1)[0]
        allow = {
            side: re.search(side + r":\s*\{\s*allow:\s*\[(.*?)\]", chunk, re.DOTALL)
            for side in ("publish", "subscribe")
        }
        publish, subscribe = (re.findall(r'"([^"]+)"', m.group(1)) if m else [] for m in allow.values())
        users[user] = (publish, subscribe)
    return users


_JS_CONSUMER = re.compile(
    r"^\$JS\.(?:API\.CONSUMER\.(?:CREATE|DURABLE\.CREATE|INFO|DELETE|MSG\.NEXT)|ACK)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)"
    r"(?:\..*)?$"
)
_JS_API = re.compile(
    r"^\$JS\.(?:API\.(?:STREAM\.(?:INFO|CREATE|UPDATE|DELETE|PURGE|MSG\.GET|MSG\.DELETE)|DIRECT\.GET"
    r"|CONSUMER\.(?:CREATE|DURABLE\.CREATE|INFO|DELETE|MSG\.NEXT))|ACK|FC)\.([A-Za-z0-9_-]+)(?:\..*)?$"
)


def agent_bucket(name: str) -> bool:
    """Whether ``name`` is an agent's own rate-limit bucket, ``subjects.rate_limit_bucket(<agent id>)``."""
    prefix = subjects.KV_RATE_LIMITS + "_"
    return name.startswith(prefix) and subjects.is_agent_id(name[len(prefix) :])


def unknown_grant(grant: str) -> bool:
    """Whether ``grant`` names something stockade.contracts does not define."""
    streams = set(STREAM_SPECS) | {f"KV_{bucket}" for bucket in BUCKETS}
    if grant in contract_names() or grant in ("$JS.API.INFO", "$JS.API.STREAM.NAMES", "_INBOX.>"):
        return False
    if match := re.fullmatch(r"\$KV\.([^.]+)\.>", grant):
        return match.group(1) not in BUCKETS and not agent_bucket(match.group(1))
    if match := _JS_CONSUMER.match(grant):  # a named durable consumer of a stream
        return match.group(2) not in CONSUMERS.get(match.group(1), ())
    if match := _JS_API.match(grant):
        stream = match.group(1)
        return stream not in streams and not (stream.startswith("KV_") and agent_bucket(stream[3:]))
    for shape, build in (
        (r"agent\.([^.]+)\.inbox", subjects.agent_inbox),
        (r"agent\.([^.]+)\.reply\.\*", subjects.agent_replies),
        (r"(_INBOX_[^.]+)\.>", None),
    ):
        if match := re.fullmatch(shape, grant):
            try:
                agent = match.group(1)
                return build(agent) != grant if build else subjects.agent_reply_prefix(agent[7:]) != agent
            except ValueError:  # not an agent id
                return True
    return True


def all_grants() -> Iterator[tuple[str, str, str]]:
    """(file, user, granted subject) of both permission files, imports and exports of nats-server.conf included."""
    for name in ("nats-server.conf", "agents.conf"):
        for user, (publish, subscribe) in grants(name).items():
            for grant in publish + subscribe:
                yield name, user, grant
    for grant in re.findall(r'(?:stream|service|subject):\s*"([^"]+)"', _conf_text("nats-server.conf")):
        yield "nats-server.conf", "(imports/exports)", grant


def test_permission_files_grant_only_names_from_contracts() -> None:
    unknown = [f"{name} {user}: {grant}" for name, user, grant in all_grants() if unknown_grant(grant)]
    assert unknown == [], "deploy/nats grants names stockade.contracts does not define"


def test_the_grant_check_refuses_unknown_names() -> None:
    for bad in (
        "orders.created.v1",
        "$KV.stockade_rate_limits.>",
        "$JS.API.STREAM.INFO.ORDERS",
        "agent.a.b.inbox",
        "$JS.ACK.TRUST.x.>",
        "$JS.API.CONSUMER.INFO.GUARDRAIL_EVENTS.other",
    ):
        assert unknown_grant(bad), bad
    for good in (
        "agent.planner.inbox",
        "_INBOX_planner.>",
        "$JS.ACK.TRUST.guardrail-ingest-audit-trust.>",
        "$KV.trust_nonces.>",
    ):
        assert not unknown_grant(good), good


def _matches(pattern: str, subject: str) -> bool:
    """NATS wildcard match: ``*`` one token, ``>`` the rest."""
    want, have = pattern.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(have) > i
        if i >= len(have) or (token != "*" and token != have[i]):
            return False
    return len(want) == len(have)


def _granted(subject: str, granted: list[str]) -> bool:
    """Granted directly, or (an event kept in a stream) read through a pull consumer on that stream."""
    if any(_matches(g, subject) for g in granted):
        return True
    stream = next((name for name, spec in STREAM_SPECS.items() if subject in spec.subjects), None)
    return stream is not None and any(g.startswith(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.") for g in granted)


def referenced_names(service: Path) -> set[str]:
    """Subjects and buckets of stockade.contracts a service's code refers to (constants and event classes)."""
    events = {
        name: cls.subject
        for name, cls in vars(envelope).items()
        if isinstance(cls, type) and issubclass(cls, envelope.EventEnvelope) and cls.subject
    }
    found: set[str] = set()
    for path in sorted((service / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "subjects":
                names.append(node.attr)
            elif isinstance(node, ast.ImportFrom) and node.module in (
                "stockade.contracts.subjects",
                "stockade.contracts",
            ):
                names += [alias.name for alias in node.names]
            for name in names:
                value = getattr(subjects, name, None) if name.isupper() else events.get(name)
                if isinstance(value, str):
                    found.add(value)
    return found


def test_each_service_is_granted_the_names_its_code_uses() -> None:
    users = grants("nats-server.conf")
    missing = []
    for service, health in subjects.HEALTH_BY_SERVICE.items():
        publish, subscribe = users[service]
        granted = publish + subscribe
        if health not in subscribe:
            missing.append(f"{service}: subscribe {health}")
        for name in sorted(referenced_names(ROOT / "services" / service)):
            if name in BUCKETS:
                wanted = [f"$KV.{name}.>", f"$JS.API.STREAM.INFO.KV_{name}"]
            elif name == subjects.TRUST_BROKER_QUEUE or name == subjects.TRUST_SUBMIT_PREFIX:
                continue  # a queue group, and the prefix of trust.submit.* (granted as the wildcard)
            elif name == subjects.PROMPT_PUBLISHED:
                wanted = [subjects.prompt_published("any-project")]  # published per project
            elif name == subjects.POLICY_PUBLISHED:
                wanted = [subjects.policy_published("any-project")]  # published per project
            else:
                wanted = [name]
            missing += [f"{service}: {w}" for w in wanted if not _granted(w, granted)]
    assert missing == [], "deploy/nats/nats-server.conf lacks what these services use"
