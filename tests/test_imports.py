"""The import graph of `rag`: no cycle between modules or between packages, deferred imports included;
imports between rooms run one way (`LAYERS`); terminal code only in `rag.cli`; the environment read
only by `rag.config`.

`import_graph()` reads module-level imports (what runs when a module loads; `if TYPE_CHECKING:` counts
too: a cycle there still tangles the design); `import_graph(deferred=True)` adds the imports inside
functions, which tangle the design as much even though they run later.
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


def import_graph(*, deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the `rag` modules it imports at module level, or anywhere with `deferred` (packages as
    their `__init__`)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in known.items():
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree) if deferred else _top_level(tree.body):
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


def test_rag_imports_without_cycles_counting_deferred_imports() -> None:
    graph = import_graph(deferred=True)
    assert find_cycle(graph) == []
    assert find_cycle(package_graph(graph)) == []


# Each room (package, or top-level module) and the rooms it may import: api -> answer -> support/reader
# -> language -> types, with the store, embeddings and the top-level helpers beside them.
_BASE = {"rag.types", "rag.errors"}
_CORE = _BASE | {"rag.config", "rag.access", "rag.breaker", "rag.serialize", "rag.voyage"}
_BELOW_ANSWER = {
    "rag.language",
    "rag.calibration",
    "rag.support",
    "rag.reader",
    "rag.embeddings",
    "rag.store",
}
LAYERS: dict[str, set[str]] = {
    "rag": set(),
    "rag.__main__": {"rag.cli"},
    "rag.types": set(),
    "rag.errors": set(),
    "rag.breaker": set(),
    "rag.access": _BASE,
    "rag.config": _BASE | {"rag.access"},
    "rag.serialize": _BASE,
    "rag.voyage": _BASE | {"rag.config", "rag.breaker"},
    "rag.language": _BASE,
    "rag.calibration": _BASE,
    "rag.examples": _BASE | {"rag.language"},
    "rag.review": _BASE | {"rag.language"},
    "rag.support": _BASE | {"rag.language", "rag.calibration"},
    "rag.reader": _BASE | {"rag.language", "rag.calibration"},
    "rag.embeddings": _CORE | {"rag.language"},
    "rag.store": _CORE | {"rag.language"},
    "rag.ingest": _CORE | {"rag.language", "rag.embeddings", "rag.store"},
    "rag.answer": _CORE | _BELOW_ANSWER,
    "rag.evals": _CORE | _BELOW_ANSWER | {"rag.ingest", "rag.answer"},
    "rag.api": _CORE
    | {"rag", "rag.language", "rag.embeddings", "rag.store", "rag.answer", "rag.examples", "rag.review"},
    "rag.cli": _CORE
    | {"rag.language", "rag.embeddings", "rag.store", "rag.ingest", "rag.answer", "rag.api", "rag.evals"},
}


def test_every_room_has_a_place_in_the_layers() -> None:
    assert sorted(set(package_graph(import_graph())) - set(LAYERS)) == []


def test_rooms_import_only_the_rooms_below_them() -> None:
    graph = package_graph(import_graph(deferred=True))
    strays = {room: sorted(targets - LAYERS.get(room, set())) for room, targets in graph.items()}
    assert {room: found for room, found in strays.items() if found} == {}


def test_layer_check_reports_an_upward_import() -> None:
    graph = {"rag.language": {"rag.answer"}, "rag.answer": {"rag.language"}}
    strays = {room: sorted(targets - LAYERS[room]) for room, targets in graph.items()}
    assert strays == {"rag.language": ["rag.answer"], "rag.answer": []}


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


# What reads or writes the process environment through `os`.
_ENVIRONMENT = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


def touches_environment(source: str) -> bool:
    """Whether Python `source` reads or writes the environment: `os.environ`, `os.getenv`, `os.putenv`,
    ... (also through `import os as x`), or imports one of them from `os`. Text that only names them
    (a docstring, a comment) does not count."""
    tree = ast.parse(source)
    names = {"os"} | {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "os"
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            if any(alias.name in _ENVIRONMENT for alias in node.names):
                return True
        elif isinstance(node, ast.Attribute) and node.attr in _ENVIRONMENT:
            if isinstance(node.value, ast.Name) and node.value.id in names:
                return True
    return False


def test_only_config_reads_or_writes_the_environment() -> None:
    touching = [
        module
        for module, (path, _) in _modules().items()
        if touches_environment(path.read_text(encoding="utf-8"))
    ]
    assert [module for module in touching if module != "rag.config"] == []


def test_environment_check_reports_reads_and_writes() -> None:
    assert touches_environment('import os\nsetting = os.environ.get("RAG_PARSER", "")')
    assert touches_environment('import os\nos.environ["RAG_ANSWER_GATE"] = "off"')
    assert touches_environment('import os as system\nsystem.putenv("RAG_ENCODER", "off")')
    assert touches_environment("from os import getenv\n")
    assert not touches_environment('"""Reads os.environ."""\nimport os\nos.path.join("a", "b")')
