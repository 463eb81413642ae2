"""The workspace's shape: every member is a src-layout namespace package with its own tests and py.typed,
declares every third-party package it imports, and connects to nothing at import time."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = [p.parent for d in ("libs", "services", "apps") for p in sorted(ROOT.glob(f"{d}/*/pyproject.toml"))]
STDLIB = set(sys.stdlib_module_names)


def project(member: Path) -> dict:
    return tomllib.loads((member / "pyproject.toml").read_text())["project"]


def package_dir(member: Path) -> Path:
    (pkg,) = [p for p in (member / "src" / "stockade").iterdir() if p.is_dir() and p.name != "__pycache__"]
    return pkg


def test_every_architecture_member_exists():
    names = {f"{m.parent.name}/{m.name}" for m in MEMBERS}
    expected = {
        "libs/contracts",
        "libs/identity",
        "libs/runtime",
        "libs/guardrails",
        "libs/testing",
        "apps/cli",
        "services/prompt-api",
        "services/model-api",
        "services/guardrail-ingest",
        "services/trust-broker",
    }
    assert expected <= names


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.name)
def test_member_is_a_namespace_src_package_with_tests(member):
    assert not (member / "src" / "stockade" / "__init__.py").exists(), (
        "stockade must stay a namespace package"
    )
    pkg = package_dir(member)
    assert (pkg / "__init__.py").exists() and (pkg / "py.typed").exists()
    assert pkg.name == project(member)["name"].removeprefix("stockade-").replace("-", "_")
    assert (member / "tests").is_dir() and any((member / "tests").rglob("test_*.py")), "each member has tests"
    assert (member / "README.md").exists()


def _requirement_names(member: Path) -> set[str]:
    names = set()
    for req in project(member).get("dependencies", []):
        names.add(re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def _closure(member: Path, by_name: dict[str, Path]) -> set[str]:
    """Declared distributions of a member plus those of the workspace members it depends on."""
    seen, todo, out = set(), [member], set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for name in _requirement_names(m):
            out.add(name)
            if name in by_name:
                todo.append(by_name[name])
    return out


def _top_level_imports(pkg: Path) -> set[str]:
    """Modules imported at module level (not inside functions: those are optional/lazy by design)."""
    found = set()
    for path in pkg.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            nodes = [node]
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Try):
                continue  # guarded optional import
            for n in nodes:
                if isinstance(n, ast.Import):
                    found.update(a.name.split(".")[0] for a in n.names)
                elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                    found.add(n.module.split(".")[0])
    return found - STDLIB - {"stockade", "__future__"}


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.name)
def test_member_declares_what_it_imports(member):
    by_name = {project(m)["name"]: m for m in MEMBERS}
    declared = _closure(member, by_name)
    dists = importlib.metadata.packages_distributions()
    missing = []
    for module in sorted(_top_level_imports(package_dir(member))):
        owners = {d.lower().replace("_", "-") for d in dists.get(module, [])}
        if owners and not owners & declared:
            missing.append(f"{module} (from {', '.join(sorted(owners))})")
    assert not missing, f"{member.name} imports packages it does not declare: {missing}"


NO_NETWORK_IMPORT = r"""
import importlib, pkgutil, socket, sys
def refuse(*a, **k):
    raise AssertionError("connected at import time")
socket.socket.connect = refuse
socket.create_connection = refuse
import stockade
failed = []
for info in pkgutil.walk_packages(stockade.__path__, "stockade."):
    name = info.name
    if ".tests" in name or name.endswith("__main__") or ".migrations" in name:
        continue
    try:
        importlib.import_module(name)
    except AssertionError as exc:
        failed.append(f"{name}: {exc}")
    except ImportError:
        pass  # optional extras may be missing; they are tested where they are used
print("\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_nothing_connects_at_import_time():
    result = subprocess.run(
        [sys.executable, "-c", NO_NETWORK_IMPORT], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]


def test_default_install_has_no_torch_requirement():
    """torch belongs to the optional torch extra only (a default install must never pull a CUDA build)."""
    for member in MEMBERS:
        assert not any(r.startswith("torch") for r in project(member).get("dependencies", [])), member.name
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert not any(
        r.split("[")[0] == "stockade-guardrails" and re.search(r"[\[,](ml|torch)[\],]", r)
        for r in root["project"]["dependencies"]
    )
