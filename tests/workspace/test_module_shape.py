"""The code's shape: no import cycle among the ``stockade.*`` modules, and no module in a ``src/`` tree longer
than MAX_LINES (STYLE: split past about 300 lines). Read from the source with ``ast``, nothing is imported.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy import hides a cycle
from the interpreter, not from the reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC_TREES = [tree for d in ("libs", "services", "apps") for tree in sorted(ROOT.glob(f"{d}/*/src"))]
MAX_LINES = 300
# Modules past MAX_LINES waiting for their split, at their size when listed: they may shrink, never grow. Remove
# an entry once its module is split (test_pending_splits_are_still_pending says when).
PENDING_SPLIT: dict[str, int] = {}


def modules(trees: Iterable[Path]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under each tree's ``stockade`` namespace."""
    found = {}
    for tree in trees:
        for path in sorted((tree / "stockade").rglob("*.py")):
            parts = path.relative_to(tree).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def import_graph(found: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``found`` it imports (``from p import x`` is ``p.x`` when that is a module)."""
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in found else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in found:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle (a path that ends where it starts) per strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path_back(min(c), c, graph) for c in components]


def _path_back(start: str, component: set[str], graph: Mapping[str, set[str]]) -> list[str]:
    """The shortest path from ``start`` back to itself inside its component."""
    paths = {nxt: [start, nxt] for nxt in sorted(graph[start] & component)}
    queue = list(paths)
    while start not in paths:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & component):
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    return paths[start]


def test_no_import_cycle_among_stockade_modules():
    found = cycles(import_graph(modules(SRC_TREES)))
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_cycle_finder_sees_a_cycle_through_relative_and_lazy_imports(tmp_path):
    pkg = tmp_path / "stockade" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import thing\n")
    (pkg / "b.py").write_text("def f():\n    from stockade.demo import c\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    (pkg / "d.py").write_text("from stockade.demo.a import thing\n")
    graph = import_graph(modules([tmp_path]))
    assert graph["stockade.demo.d"] == {"stockade.demo.a"}
    assert cycles(graph) == [["stockade.demo.a", "stockade.demo.b", "stockade.demo.c", "stockade.demo.a"]]


def test_no_module_in_src_is_longer_than_max_lines():
    too_long, grown = [], []
    for path in modules(SRC_TREES).values():
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if rel in PENDING_SPLIT:
            if lines > PENDING_SPLIT[rel]:
                grown.append(
                    f"{rel}: {lines} lines (listed at {PENDING_SPLIT[rel]}; split it, do not grow it)"
                )
        elif lines > MAX_LINES:
            too_long.append(f"{rel}: {lines} lines")
    assert not too_long, f"modules over {MAX_LINES} lines (split along a seam):\n" + "\n".join(too_long)
    assert not grown, "\n".join(grown)


def test_pending_splits_are_still_pending():
    """An entry of PENDING_SPLIT goes once its module is split (or gone)."""
    done = [
        rel
        for rel in PENDING_SPLIT
        if not (ROOT / rel).exists()
        or len((ROOT / rel).read_text(encoding="utf-8").splitlines()) <= MAX_LINES
    ]
    assert not done, f"remove from PENDING_SPLIT: {done}"
