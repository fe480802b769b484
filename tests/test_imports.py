"""The import graph of `rag`: no cycle between modules or between packages; terminal code only in `rag.cli`.

Only module-level imports count (a function-level import runs when called, not when the module
loads). Imports inside `if TYPE_CHECKING:` count as well: a cycle there still tangles the design.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted((SRC / "rag").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run on import: the body, and the branches of top-level if/try blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)


def _imported(module: str, is_package: bool, node: ast.stmt, known: dict[str, tuple[Path, bool]]) -> set[str]:
    names: set[str] = set()
    if isinstance(node, ast.Import):
        names.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            names.add(submodule if submodule in known else source)
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the `rag` modules it imports at module level (packages as their `__init__`)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in known.items():
        edges: set[str] = set()
        for node in _top_level(ast.parse(path.read_text(encoding="utf-8")).body):
            for name in _imported(module, is_package, node, known):
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    edges.add(name)
        graph[module] = edges
    return graph


def package_of(module: str) -> str:
    """`rag.answer.verify` -> `rag.answer`; a top-level module (`rag.types`) is its own node."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, edges in graph.items():
        node = package_of(module)
        targets = packages.setdefault(node, set())
        targets.update(package_of(e) for e in edges if package_of(e) != node)
    return packages


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle as a path `a -> b -> ... -> a`, or [] when the graph is acyclic."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_find_cycle_reports_a_cycle_and_accepts_a_dag() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_import_graph_sees_relative_and_submodule_imports() -> None:
    graph = import_graph()
    assert "rag.answer.pipeline" in graph["rag.cli.ask"]
    assert "rag.cli.commands" in graph["rag.cli"]


def test_rag_modules_import_without_cycles() -> None:
    assert find_cycle(import_graph()) == []


def test_rag_packages_import_without_cycles() -> None:
    assert find_cycle(package_graph(import_graph())) == []


def test_only_the_cli_imports_click() -> None:
    offenders = []
    for module, (path, _) in _modules().items():
        if package_of(module) == "rag.cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "click" for a in node.names):
                offenders.append(module)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "click":
                offenders.append(module)
    assert offenders == []
