"""Structure of docker-compose.yml and deploy/Dockerfile (a build target a service), read without Docker.

The checkers return problems as a list of strings (empty = fine); the tests run them on the real files and on
bad samples, so a rule that stops catching its mistake fails here. The compose file is also validated against
the Compose Specification JSON schema (schemas/compose-spec.json, vendored from check-jsonschema 0.39.0,
Apache-2.0, see schemas/LICENSE.compose-spec).
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DEPLOY_README = ROOT / "deploy" / "README.md"
SCHEMA = Path(__file__).with_name("schemas") / "compose-spec.json"

WAITING_CONDITIONS = {"service_healthy", "service_completed_successfully"}
SECRET_KEY = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL", re.I)
URL_PASSWORD = re.compile(
    r"[a-z][a-z0-9+.-]*://[^:/@\s{}$]+:(?P<password>\$\{[^}]*\}|[^@\s]+)@", re.I
)  # an interpolated password may hold spaces (its :? message)
ABSOLUTE_HOST_PATH = re.compile(r"^(/|~|\$\{?HOME\b|[A-Za-z]:[\\/])")
REQUIRED_SECRET = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):\?[^}]+\}")


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
    """A secret must be a required interpolation, ``${VAR:?message}`` (compose refuses to start without it: no
    public default), and ``VAR`` must be documented in deploy/README.md."""
    parsed = whole_interpolation(value)
    if parsed is None:
        return [f"{where}: secret in clear text; use ${{VAR:?message}}"]
    name, default = parsed
    if default is not None:
        return [f"{where}: ${{{name}}} has a default (a public secret); use ${{{name}:?message}}"]
    if REQUIRED_SECRET.fullmatch(value) is None:
        return [
            f"{where}: ${{{name}}} may be unset (compose would start with an empty secret); use :?message"
        ]
    if f"`{name}`" not in documented:
        return [f"{where}: ${{{name}}} is not documented in deploy/README.md"]
    return []


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


@dataclass(frozen=True)
class Stage:
    name: str  # FROM ... AS <name>, else the stage's index
    instructions: list[Instruction]  # from its FROM on


def split_stages(instructions: list[Instruction]) -> tuple[list[Instruction], list[Stage]]:
    """The instructions before the first FROM (global ARGs) and the build stages, in file order."""
    head: list[Instruction] = []
    stages: list[Stage] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            words = [w for w in ins.args.split() if not w.startswith("--")]  # --platform=...
            named = len(words) == 3 and words[1].upper() == "AS"
            stages.append(Stage(words[2] if named else str(len(stages)), [ins]))
        elif stages:
            stages[-1].instructions.append(ins)
        else:
            head.append(ins)
    return head, stages


def declared_args(instructions: list[Instruction]) -> dict[str, str | None]:
    """ARG name -> its default (None when it has none)."""
    declared: dict[str, str | None] = {}
    for ins in instructions:
        if ins.keyword == "ARG":
            name, has_default, default = ins.args.partition("=")
            declared[name.strip()] = default if has_default else None
    return declared


VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_]\w*)\}|(?P<bare>[A-Za-z_]\w*))")


def expand_build_args(
    stage: Stage, build_args: dict[str, str], global_args: dict[str, str | None]
) -> list[Instruction]:
    """The stage's instructions as the build sees them. FROM sees the global ARGs; the other instructions
    see an ARG from where the stage declares it (value: --build-arg, else that ARG's default, else the global
    one's) and a global ARG the stage does not declare as empty. ENV and run-time variables are left alone."""
    in_from = {name: build_args.get(name, default or "") for name, default in global_args.items()}
    values = dict.fromkeys(global_args, "")
    out = []
    for ins in stage.instructions:
        if ins.keyword == "ARG":
            for name, default in declared_args([ins]).items():
                fallback = default if default is not None else global_args.get(name)
                values[name] = build_args.get(name, fallback or "")
        args = substitute(ins.args, in_from if ins.keyword == "FROM" else values)
        out.append(Instruction(ins.keyword, args, ins.line))
    return out


def substitute(text: str, values: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced for the names in ``values``; other variables left as written."""
    return VARIABLE.sub(lambda m: values.get(m["braced"] or m["bare"], m[0]), text)


def copied_from(ins: Instruction) -> str | None:
    """The stage or image of a ``COPY --from=...``."""
    words = ins.args.split() if ins.keyword == "COPY" else []
    return next((w.partition("=")[2] for w in words if w.startswith("--from=")), None)


@dataclass(frozen=True)
class BuildTarget:
    """What ``docker build --target <target> --build-arg ...`` runs and ships, build arguments expanded."""

    built: list[Instruction]  # every stage the target needs (its FROM chain, COPY --from), in file order
    image: list[Instruction]  # the target and the stages it is FROM, base first: what the image inherits
    own: list[Instruction]  # the target stage alone


def build_target(text: str, target: str | None, build_args: dict[str, str]) -> BuildTarget:
    """``target`` None builds the last stage, as without --target; KeyError when it is not a stage."""
    head, stages = split_stages(parse_dockerfile(text))
    global_args = declared_args(head)
    expanded = {s.name: expand_build_args(s, build_args, global_args) for s in stages}
    base = {name: instructions[0].args.split()[0] for name, instructions in expanded.items()}
    name = stages[-1].name if target is None else target
    if name not in expanded:
        raise KeyError(name)
    chain = [name]
    while base[chain[0]] in expanded:
        chain.insert(0, base[chain[0]])
    needed: set[str] = set()
    todo = [name]
    while todo:
        stage = todo.pop()
        if stage in expanded and stage not in needed:
            needed.add(stage)
            todo += [base[stage], *filter(None, map(copied_from, expanded[stage]))]
    return BuildTarget(
        built=[ins for s in stages if s.name in needed for ins in expanded[s.name]],
        image=[ins for stage in chain for ins in expanded[stage]],
        own=expanded[name],
    )


def image_healthcheck(image: list[Instruction]) -> Instruction | None:
    """The HEALTHCHECK in force in an image (None if absent or ``HEALTHCHECK NONE``)."""
    checks = [ins for ins in image if ins.keyword == "HEALTHCHECK"]
    if not checks or checks[-1].args.upper().startswith("NONE"):
        return None
    return checks[-1]


def command_module(command: Instruction) -> str | None:
    """The module of an exec-form ``CMD ["python", "-m", "<module>", ...]``."""
    try:
        words = json.loads(command.args)
    except json.JSONDecodeError:
        return None
    return words[2] if len(words) > 2 and words[1] == "-m" else None


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


def image_env(image: list[Instruction]) -> dict[str, str]:
    """The variables an image's ``ENV KEY=value ...`` instructions set."""
    words = [word for ins in image if ins.keyword == "ENV" for word in shlex.split(ins.args)]
    return dict(word.split("=", 1) for word in words if "=" in word)


def image_problems(target: str, build: BuildTarget) -> list[str]:
    """What the image of ``target`` inherits and runs: a numeric non-root USER, a HEALTHCHECK, EXPOSE of its
    HTTP port setting (``*_HTTP__PORT``) and nothing else, a command, and a build step that imports the
    command's module (so an environment built for another service fails the build)."""
    problems: list[str] = []
    users = [ins for ins in build.image if ins.keyword == "USER"]
    if not users:
        problems.append(f"target {target} has no USER (runs as root)")
    else:
        user = users[-1].args.split(":")[0]
        if user in ("root", "0"):
            problems.append(f"line {users[-1].line}: USER {user} is root")
        elif not user.isdigit():
            problems.append(f"line {users[-1].line}: USER {user} is not numeric (runAsNonRoot cannot verify)")
    if image_healthcheck(build.image) is None:
        problems.append(f"target {target} has no HEALTHCHECK")
    ports = sorted(value for key, value in image_env(build.image).items() if key.endswith("_HTTP__PORT"))
    exposed = sorted(port for ins in build.image if ins.keyword == "EXPOSE" for port in ins.args.split())
    if exposed != ports:
        problems.append(f"target {target} exposes {exposed}, but its HTTP port settings are {ports}")
    commands = [ins for ins in build.image if ins.keyword in ("CMD", "ENTRYPOINT")]
    if not commands:
        return [*problems, f"target {target} has no CMD or ENTRYPOINT"]
    module = command_module(commands[-1])
    if module is None:
        return [*problems, f"line {commands[-1].line}: the command is not python -m <module>"]
    imports = re.compile(rf"""python3? -c ["']import {re.escape(module)}["']$""")
    if not any(ins.keyword == "RUN" and imports.search(ins.args) for ins in build.own):
        problems.append(
            f"target {target} does not import {module} when it is built, so an environment built for "
            "another SERVICE would pass"
        )
    return problems


def dockerfile_problems(
    text: str, *, target: str, build_args: dict[str, str], package: str, members: list[str]
) -> list[str]:
    """Rules for a service image, the build target ``target``: the image rules above, and a locked
    dependencies-only layer that sees every member's manifest before any source in the stages it builds."""
    try:
        build = build_target(text, target, build_args)
    except KeyError:
        return [f"no build target {target}"]
    problems = image_problems(target, build)
    instructions = build.built
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
        if not re.search(rf"--package {re.escape(package)}(\s|$)", ins.args):
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


def build_spec(build: str | dict[str, Any]) -> tuple[str, str | None, dict[str, str]]:
    """(Dockerfile path from the repository root, target or None, build arguments) of a compose ``build``."""
    if isinstance(build, str):
        return str(Path(build) / "Dockerfile"), None, {}
    args = build.get("args") or {}
    if isinstance(args, list):
        args = dict(item.partition("=")[::2] for item in args)
    values = {str(k): "" if v is None else str(v) for k, v in args.items()}
    dockerfile = Path(build.get("context", ".")) / build.get("dockerfile", "Dockerfile")
    return str(dockerfile), build.get("target"), values


def build_problems(name: str, service: dict[str, Any], root: Path) -> list[str]:
    """A build from the repository root, of a Dockerfile and target that exist, with every build argument the
    Dockerfile requires (a global ARG without a default); SERVICE, when passed, names the target."""
    build = service.get("build")
    if build is None:
        return []
    problems = []
    if isinstance(build, dict) and build.get("context", ".") not in (".", "./"):
        problems.append(f"{name}: build context must be the repository root")
    path, target, args = build_spec(build)
    if not (root / path).is_file():
        return [*problems, f"{name}: Dockerfile {path} does not exist"]
    head, stages = split_stages(parse_dockerfile((root / path).read_text()))
    if target is not None and target not in {stage.name for stage in stages}:
        problems.append(f"{name}: target {target} is not a stage of {path}")
    for arg, default in declared_args(head).items():
        if default is None and not args.get(arg):
            problems.append(f"{name}: {path} needs the build argument {arg}")
    if "SERVICE" in args and args["SERVICE"] != target:
        problems.append(f"{name}: build argument SERVICE={args['SERVICE']} but target {target}")
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
    path, target, args = build_spec(build)
    if not (root / path).is_file():
        return []  # build_problems reports it
    try:
        image = build_target((root / path).read_text(), target, args).image
    except KeyError:
        return []  # an unknown target: build_problems reports it
    if image_healthcheck(image) is None:
        where = path if target is None else f"target {target} of {path}"
        return [f"{name}: no healthcheck in compose nor a HEALTHCHECK in {where}"]
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
        problems += build_problems(name, service, root)
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
        assert build_spec(services[name]["build"])[:2] == ("deploy/Dockerfile", name)
    assert services["migrate"]["build"] == services["prompt-api"]["build"]  # the prompt-api image
    assert "-js" in services["nats"]["command"] or "--jetstream" in services["nats"]["command"]
    for name in ("prompt-api", "model-api"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_the_dockerfile_has_one_target_per_service() -> None:
    _, stages = split_stages(parse_dockerfile(DOCKERFILE.read_text()))
    assert sorted(stage.name for stage in stages) == sorted(["builder", "runtime", *SERVICES])


def test_every_compose_build_names_a_target_and_passes_it_as_service(compose: dict[str, Any]) -> None:
    # compose_problems checks any build; this pins the real file: each image is its target, SERVICE agrees.
    for name, service in compose["services"].items():
        if "build" in service:
            path, target, args = build_spec(service["build"])
            assert (path, args) == ("deploy/Dockerfile", {"SERVICE": target}), name
            assert target in SERVICES and service["image"].startswith(f"stockade/{target}:"), name


@pytest.mark.parametrize("service", SERVICES)
def test_service_target_follows_the_image_rules(service: str) -> None:
    problems = dockerfile_problems(
        DOCKERFILE.read_text(),
        target=service,
        build_args={"SERVICE": service},
        package=f"stockade-{service}",
        members=workspace_members(),
    )
    assert problems == []


@pytest.mark.parametrize("service", SERVICES)
def test_service_image_runs_its_module_and_probes_health(service: str) -> None:
    image = build_target(DOCKERFILE.read_text(), service, {"SERVICE": service}).image
    module = "stockade." + service.replace("-", "_")
    cmd = [ins for ins in image if ins.keyword == "CMD"][-1]
    assert json.loads(cmd.args) == ["python", "-m", module]
    check = image_healthcheck(image)
    assert check is not None and "python -m stockade.runtime.probe" in check.args
    port_setting = service.upper().replace("-", "_") + "_HTTP__PORT"
    if service == "trust-broker":  # NATS only: no port, a NATS health request
        assert port_setting not in image_env(image) and "--subject trust.cmd.health.v1" in check.args
    else:  # the probe follows the port setting when it is overridden at run time
        assert image_env(image)[port_setting] and f"${{{port_setting}}}/healthz" in check.args


def test_nats_container_gets_every_variable_its_config_references(compose: dict[str, Any]) -> None:
    # nats-server refuses to start when a $VARIABLE of its config (or of an included file) is unset.
    # cluster.conf is the three-node variant (it includes nats-server.conf); compose runs one server.
    referenced = set()
    for conf in (ROOT / "deploy" / "nats").glob("*.conf"):
        if conf.name == "cluster.conf":
            continue
        text = "\n".join(line.split("#")[0] for line in conf.read_text().splitlines())
        unquoted = re.sub(r'"[^"]*"', "", text)  # "$JS.API..." in quotes is a subject, not a variable
        referenced.update(re.findall(r"\$([A-Z_][A-Z0-9_]*)", unquoted))
    provided = {key for key, _ in environment_items(compose["services"]["nats"])}
    assert referenced, "expected password variables in deploy/nats/*.conf"
    assert sorted(referenced - provided) == []


def compose_environment(service: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """The environment a service gets with ``env`` (an .env file) set: whole interpolations resolved."""
    resolved = {}
    for key, value in environment_items(service):
        parsed = whole_interpolation(value)
        resolved[key] = (env.get(parsed[0]) or parsed[1] or "") if parsed else value
    return resolved


def generated_env(tmp_path: Path) -> dict[str, str]:
    """What ``stockade compose-env`` writes for docker-compose.yml, as a dict."""
    from stockade.cli.compose_env import write_env

    env_file = tmp_path / ".env"
    write_env(COMPOSE, env_file)
    pairs = [line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line]
    return {name: value for name, value in pairs if not name.startswith("#")}


def test_trust_broker_registry_loads_and_matches_the_nats_agents(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    from stockade.guardrails.trust.keys import KeyRing
    from stockade.guardrails.trust.loading import trust_config_from_path

    broker = compose["services"]["trust-broker"]
    target = broker["environment"]["TRUST_BROKER_CONFIG_PATH"]
    # a bind mount (docker-compose v1 ignores `configs:` outside swarm)
    mounted = [v.split(":")[0] for v in broker["volumes"] if v.split(":")[1] == target]
    assert len(mounted) == 1
    config = trust_config_from_path(ROOT / mounted[0])
    environ = compose_environment(broker, generated_env(tmp_path))
    ring = KeyRing.from_config(config, environ=environ)  # every secret_env set by compose-env, 32+ bytes
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
ARG SERVICE
FROM python:3.11-slim AS builder
ARG SERVICE
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /bin/uv
COPY pyproject.toml uv.lock ./
COPY libs/a/pyproject.toml libs/a/
RUN --mount=type=cache,target=/root/.cache/uv \\
    uv sync --locked --no-install-workspace --package stockade-${SERVICE}
COPY libs/ libs/
RUN uv sync --locked --no-editable --package stockade-${SERVICE}
FROM python:3.11-slim AS runtime
COPY --from=builder /app/.venv /app/.venv
USER 10001:10001
FROM runtime AS x
RUN python -c "import stockade.x"
ENV X_HTTP__HOST=0.0.0.0 X_HTTP__PORT=8101
EXPOSE 8101
HEALTHCHECK CMD python -m stockade.runtime.probe http://127.0.0.1:8101/healthz
CMD ["python", "-m", "stockade.x"]
FROM runtime AS y
CMD ["python", "-m", "stockade.y"]
"""


def dockerfile_check(text: str, service: str = "x") -> list[str]:
    return dockerfile_problems(
        text, target="x", build_args={"SERVICE": service}, package="stockade-x", members=["libs/a"]
    )


def test_dockerfile_checker_accepts_the_good_sample() -> None:
    assert dockerfile_check(GOOD_DOCKERFILE) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("USER 10001:10001\n", "", "no USER"),
        ("USER 10001:10001", "USER root", "is root"),
        ("USER 10001:10001", "USER 0", "is root"),
        ("USER 10001:10001", "USER app", "not numeric"),
        ("FROM runtime AS x\n", "FROM runtime AS x\nUSER 0\n", "is root"),  # the target's own USER wins
        ("HEALTHCHECK CMD python", "HEALTHCHECK NONE\n# CMD python", "no HEALTHCHECK"),
        ("EXPOSE 8101\n", "", "exposes [], but its HTTP port settings are ['8101']"),
        ("EXPOSE 8101", "EXPOSE 8000", "exposes ['8000']"),
        (
            "X_HTTP__PORT=8101",
            "X_HTTP__PORT=8000",
            "exposes ['8101'], but its HTTP port settings are ['8000']",
        ),
        ('CMD ["python", "-m", "stockade.x"]\nFROM', "FROM", "no CMD"),
        ('"-m", "stockade.x"]', '"stockade/x.py"]', "not python -m"),
        ('RUN python -c "import stockade.x"\n', "", "does not import stockade.x"),
        ('import stockade.x"', 'import stockade.y"', "does not import stockade.x"),
        ("FROM runtime AS x", "FROM runtime AS z", "no build target x"),
        ("COPY pyproject.toml uv.lock ./\n", "COPY . .\n", "sources copied before"),
        ("COPY libs/a/pyproject.toml libs/a/\n", "", "does not see libs/a/pyproject.toml"),
        (" --no-install-workspace", "", "no dependencies-only layer"),
        ("COPY --from=builder /app/.venv /app/.venv\n", "", "no dependencies-only layer"),  # not built
        ("uv sync --locked --no-editable", "uv sync --no-editable", "without --locked"),
        ("--no-editable --package stockade-${SERVICE}", "--no-editable", "does not select --package"),
        ("AS builder\nARG SERVICE\n", "AS builder\n", "does not select --package stockade-x"),  # empty
        ("RUN uv sync --locked --no-editable --package stockade-${SERVICE}\n", "", "never installed"),
    ],
)
def test_dockerfile_checker_rejects_a_bad_sample(old: str, new: str, expected: str) -> None:
    bad = GOOD_DOCKERFILE.replace(old, new)
    assert bad != GOOD_DOCKERFILE
    assert any(expected in problem for problem in dockerfile_check(bad)), dockerfile_check(bad)


def test_dockerfile_checker_rejects_a_build_argument_naming_another_service() -> None:
    problems = dockerfile_check(GOOD_DOCKERFILE, service="y")
    assert sum("does not select --package stockade-x" in p for p in problems) == 2, problems


def test_dockerfile_checker_judges_each_target_by_its_own_stage() -> None:
    problems = dockerfile_problems(
        GOOD_DOCKERFILE, target="y", build_args={"SERVICE": "y"}, package="stockade-y", members=["libs/a"]
    )
    assert problems == [
        "target y has no HEALTHCHECK",
        "target y does not import stockade.y when it is built, so an environment built for another SERVICE "
        "would pass",
    ]


def test_build_target_follows_the_stages_it_needs_and_expands_build_arguments() -> None:
    text = (
        "ARG TAG=1\nARG SERVICE\n"
        "FROM img:${TAG} AS unused\n"
        "FROM img:${TAG} AS base\nRUN echo ${SERVICE}\nARG SERVICE\nRUN echo ${SERVICE} $SERVICE $HOME\n"
        "FROM img AS other\nARG TAG=2\nCOPY a${TAG} /\n"
        "FROM base AS t\nCOPY --from=other /a /a\n"
        "FROM img AS last\n"
    )
    build = build_target(text, "t", {"SERVICE": "s"})
    assert [ins.args for ins in build.image] == [
        "img:1 AS base",
        "echo ",  # not declared in the stage yet
        "SERVICE",
        "echo s s $HOME",  # not a build argument: left to the shell
        "base AS t",
        "--from=other /a /a",
    ]
    assert [ins.args for ins in build.own] == ["base AS t", "--from=other /a /a"]
    assert "a2 /" in [ins.args for ins in build.built] and "img:1 AS unused" not in str(build.built)
    assert build_target(text, None, {}).own[0].args == "img AS last"
    with pytest.raises(KeyError):
        build_target(text, "nope", {})


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
            lambda d: d["services"]["postgres"]["environment"].update(
                POSTGRES_PASSWORD="${POSTGRES_PASSWORD:-stockade-dev-password}"
            ),
            "has a default (a public secret)",
        ),
        (
            lambda d: d["services"]["postgres"]["environment"].update(
                POSTGRES_PASSWORD="${POSTGRES_PASSWORD}"
            ),
            "may be unset",
        ),
        (
            lambda d: d["services"]["postgres"]["environment"].update(
                POSTGRES_PASSWORD="${UNDOCUMENTED_PASSWORD:?set it}"
            ),
            "not documented",
        ),
        (
            lambda d: d["services"]["guardrail-ingest"]["environment"].update(
                GUARDRAIL_INGEST_SINK__URL="mongodb://stockade:${MONGO_PASSWORD:-dev-password}@mongo:27017/x"
            ),
            "password in URL: ${MONGO_PASSWORD} has a default",
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
        (
            lambda d: d["services"]["trust-broker"]["build"].update(
                dockerfile="deploy/trust-broker/Dockerfile"
            ),
            "trust-broker: Dockerfile deploy/trust-broker/Dockerfile does not exist",
        ),
        (
            lambda d: d["services"]["prompt-api"]["build"].update(target="prompt_api"),
            "prompt-api: target prompt_api is not a stage of deploy/Dockerfile",
        ),
        (
            lambda d: d["services"]["model-api"]["build"]["args"].update(SERVICE="prompt-api"),
            "model-api: build argument SERVICE=prompt-api but target model-api",
        ),
        (
            lambda d: d["services"]["guardrail-ingest"]["build"].pop("args"),
            "guardrail-ingest: deploy/Dockerfile needs the build argument SERVICE",
        ),
        (
            lambda d: d["services"]["migrate"]["build"].pop("target"),  # would build the last stage
            "migrate: build argument SERVICE=prompt-api but target None",
        ),
        (
            lambda d: d["services"]["trust-broker"]["volumes"].append("./deploy/nope.yaml:/etc/x.yaml:ro"),
            "bind source ./deploy/nope.yaml does not exist",
        ),
        (
            lambda d: d["services"]["trust-broker"].update(configs=[{"source": "nope", "target": "/x"}]),
            "not declared",
        ),
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
    doc = {"services": {"x": {"build": {"context": ".", "target": "x", "args": {"SERVICE": "x"}}}}}
    assert compose_problems(doc, root=tmp_path, documented="") == [
        "x: no healthcheck in compose nor a HEALTHCHECK in target x of Dockerfile"
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


def test_compose_file_uses_only_what_docker_compose_v1_runs(compose: dict[str, Any]) -> None:
    """Debian's docker-compose 1.29 (what tests/deploy/test_compose_up.py runs) rejects a top-level ``name``,
    cannot interpolate a nested ``${A:-${B}}``, and ignores ``configs:`` outside swarm (the service starts without
    the file): the file keeps to what both compose v1 and v2 accept."""
    lines = [line for line in COMPOSE.read_text().splitlines() if not line.lstrip().startswith("#")]
    assert [line for line in lines if re.search(r"\$\{[^}]*\$\{", line)] == []
    assert "name" not in compose
    assert "configs" not in compose
    assert [name for name, service in compose["services"].items() if "configs" in service] == []
