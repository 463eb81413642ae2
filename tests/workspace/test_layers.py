"""The layers of docs/architecture.md, read from the source with the import graph of ``test_module_shape``
(every import counts, lazy ones and those under ``TYPE_CHECKING`` too):

- a library (``libs/``) never imports a service or an application;
- a service (``services/``) never imports another service or an application;
- the guardrails library and the client import, among our packages, only ``stockade.contracts``, apart from the
  exceptions listed below with their reasons;
- no cycle between the sibling subpackages of a package (model-api's ``catalogue/`` and ``console/``, the
  guardrails ``checks/``, ``llm/``, ``trust/`` ...). A package's own
  top-level modules (model-api's ``main.py`` and ``deps.py``) are what its rooms share and compose, so an import
  through them is not an edge between rooms; ``test_module_shape`` still forbids any cycle among modules.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

# The graph helpers of test_module_shape (pytest's importlib mode puts no test folder on sys.path).
_spec = importlib.util.spec_from_file_location(
    "_module_shape", Path(__file__).with_name("test_module_shape.py")
)
assert _spec is not None and _spec.loader is not None
_shape = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shape)
ROOT, SRC_TREES, cycles, import_graph, modules = (
    _shape.ROOT,
    _shape.SRC_TREES,
    _shape.cycles,
    _shape.import_graph,
    _shape.modules,
)

LAYER_OF_FOLDER = {"libs": "library", "services": "service", "apps": "application"}

ONLY_CONTRACTS = ("guardrails", "client")
ALLOWED_BEYOND_CONTRACTS: dict[tuple[str, str], str] = {
    (
        "guardrails",
        "guardrails_model",
    ): "the default attack classifier's weights and loader, imported lazily and "
    "only with the optional [ml] extra",
    (
        "guardrails",
        "client",
    ): "GuardrailSystem.from_platform reads the published guardrail policy through the "
    "prompt-api client (ETag cache, push refresh) instead of a second HTTP client",
}


def _package(module: str) -> str:
    return module.split(".")[1]


def layers() -> dict[str, str]:
    """Our top-level package (``guardrails``, ``model_api`` ...) -> its layer, from the folder it lies in."""
    return {
        pkg.name: LAYER_OF_FOLDER[tree.parents[1].name]
        for tree in SRC_TREES
        for pkg in (tree / "stockade").iterdir()
        if pkg.is_dir() and pkg.name != "__pycache__"
    }


def package_edges(graph: Mapping[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the module imports that make the edge, between our packages."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            if _package(module) != _package(target):
                edges.setdefault((_package(module), _package(target)), []).append(f"{module} -> {target}")
    return edges


def layer_violations(graph: Mapping[str, set[str]], layer_of: Mapping[str, str]) -> list[str]:
    bad = []
    for (src, dst), why in sorted(package_edges(graph).items()):
        src_layer, dst_layer = layer_of.get(src), layer_of.get(dst)
        if src_layer == "library" and dst_layer in ("service", "application"):
            bad.append(f"library {src} imports {dst_layer} {dst}: {why[0]}")
        elif src_layer == "service" and dst_layer in ("service", "application"):
            bad.append(f"service {src} imports {dst_layer} {dst}: {why[0]}")
        elif src in ONLY_CONTRACTS and dst != "contracts" and (src, dst) not in ALLOWED_BEYOND_CONTRACTS:
            bad.append(f"{src} may import only contracts among our packages, not {dst}: {why[0]}")
    return bad


def sibling_cycles(graph: Mapping[str, set[str]], found: Mapping[str, Path]) -> list[tuple[str, list[str]]]:
    """For each package, the cycles of the graph whose nodes are its direct subpackages (an edge when any module
    of one imports any module of the other)."""
    packages = {name for name, path in found.items() if path.name == "__init__.py"}
    out = []
    for parent in sorted(packages):
        subs = {p for p in packages if p.rpartition(".")[0] == parent}
        if len(subs) < 2:
            continue

        def room(module: str, subs: set[str] = subs) -> str | None:
            return next((s for s in subs if module == s or module.startswith(s + ".")), None)

        collapsed: dict[str, set[str]] = {s: set() for s in subs}
        for module, targets in graph.items():
            if (src := room(module)) is None:
                continue
            collapsed[src] |= {dst for t in targets if (dst := room(t)) is not None and dst != src}
        for cycle in cycles(collapsed):
            out.append((parent, [c.rpartition(".")[2] for c in cycle]))
    return out


def test_libraries_and_services_import_only_what_their_layer_allows():
    graph = import_graph(modules(SRC_TREES))
    bad = layer_violations(graph, layers())
    assert not bad, "layer violations (docs/architecture.md, Packages and layers):\n" + "\n".join(bad)


def test_every_allowed_exception_is_still_needed():
    edges = package_edges(import_graph(modules(SRC_TREES)))
    unused = [edge for edge in ALLOWED_BEYOND_CONTRACTS if edge not in edges]
    assert not unused, f"remove from ALLOWED_BEYOND_CONTRACTS: {unused}"


def test_no_cycle_between_sibling_subpackages():
    found = modules(SRC_TREES)
    found_cycles = [
        f"{parent}: {' -> '.join(cycle)}" for parent, cycle in sibling_cycles(import_graph(found), found)
    ]
    assert not found_cycles, "cycles between sibling subpackages:\n" + "\n".join(found_cycles)


def test_the_layer_check_sees_a_library_importing_a_service(tmp_path):
    for folder, pkg, source in (
        ("libs", "lowly", "def f():\n    from stockade.lofty import x\n"),
        ("services", "lofty", "x = 1\n"),
    ):
        src = tmp_path / folder / pkg / "src"
        (src / "stockade" / pkg).mkdir(parents=True)
        (src / "stockade" / pkg / "__init__.py").write_text(source)
    found = modules([tmp_path / "libs" / "lowly" / "src", tmp_path / "services" / "lofty" / "src"])
    bad = layer_violations(import_graph(found), {"lowly": "library", "lofty": "service"})
    assert bad == ["library lowly imports service lofty: stockade.lowly -> stockade.lofty"]


def test_the_cycle_check_sees_two_rooms_importing_each_other(tmp_path):
    pkg = tmp_path / "stockade" / "house"
    for room, source in (("kitchen", "from stockade.house.hall import door\n"), ("hall", "")):
        (pkg / room).mkdir(parents=True)
        (pkg / room / "__init__.py").write_text("")
        (pkg / room / "door.py" if room == "hall" else pkg / room / "stove.py").write_text(source)
    (pkg / "__init__.py").write_text("")
    (pkg / "hall" / "bell.py").write_text("from stockade.house.kitchen import stove\n")
    found = modules([tmp_path])
    assert [(p, sorted(c)) for p, c in sibling_cycles(import_graph(found), found)] == [
        ("stockade.house", ["hall", "hall", "kitchen"])
    ]


def test_every_member_folder_is_a_known_layer():
    folders = {p.parents[1].name for p in ROOT.glob("*/*/pyproject.toml") if p.parents[1].name != "tests"}
    assert folders <= set(LAYER_OF_FOLDER), folders - set(LAYER_OF_FOLDER)
