"""No two files of kafka_ref import each other, directly or round a loop.

A cycle makes a reader hold two files in mind at once and leaves the order in which
modules load to chance. Every import counts: at module level, inside a function (run later,
but a dependency all the same) and under `if TYPE_CHECKING:` (a type names the other file).
The graph is read from the source with `ast`, nothing is imported.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafka_ref"


def module_names() -> dict[str, pathlib.Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(name: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    """The kafka_ref modules `name` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:  # `from pkg import module` imports the module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    resolved = set()
    for target in found:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    graph = import_graph()
    assert "kafka_ref.log.segment" in graph["kafka_ref.log.log"]
    assert "kafka_ref.log.abstract_index" in graph["kafka_ref.log.offset_index"]


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]


@pytest.mark.spec("SRC-1")
def test_no_import_cycles_between_files():
    found = [sorted(c) for c in cycles(import_graph())]
    assert not found, f"import cycles: {found}"


# The layers: docs/architecture.md's table, read here so that the docs' claim is the checked one.
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LAYER_ROW = re.compile(r"^\| (\d+) \| ((?:`\w+`(?:, )?)+) \|", re.M)
CORE = ("record", "log", "replication", "raft", "group", "txn")
# What the core may not import: it is driven, it does not drive (time comes from a Clock).
NOT_IN_THE_CORE = ("socket", "selectors", "threading", "asyncio", "concurrent", "time")


def layers() -> dict[str, int]:
    """package (or top-level module) of kafka_ref -> its layer, 1 at the top."""
    found = {}
    for number, packages in LAYER_ROW.findall(ARCHITECTURE.read_text()):
        for package in re.findall(r"`(\w+)`", packages):
            assert package not in found, f"{package} is in two layers"
            found[package] = int(number)
    return found


def top_level(module: str) -> str | None:
    """The package or top-level module of kafka_ref that `module` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def upward_imports(graph: dict[str, set[str]], layer: dict[str, int]) -> list[tuple[str, str]]:
    return sorted(
        (name, imported)
        for name, imports in graph.items()
        for imported in imports
        if top_level(name) and top_level(imported)
        if layer[top_level(imported)] < layer[top_level(name)]
    )


def test_an_upward_import_is_found():
    graph = {"kafka_ref.log.a": {"kafka_ref.server.b"}, "kafka_ref.server.b": {"kafka_ref.log.a"}}
    assert upward_imports(graph, {"server": 1, "log": 2}) == [
        ("kafka_ref.log.a", "kafka_ref.server.b")
    ]


@pytest.mark.spec("SRC-4")
def test_every_package_has_one_layer():
    names = {top_level(name) for name in module_names() if top_level(name)}
    assert names == set(layers()), (
        f"not in a layer: {sorted(names - set(layers()))}; "
        f"no such package: {sorted(set(layers()) - names)}"
    )


@pytest.mark.spec("SRC-4")
def test_no_import_runs_upward():
    found = upward_imports(import_graph(), layers())
    assert not found, f"imports of a higher layer (docs/architecture.md): {found}"


def stdlib_imports(path: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.spec("SRC-5")
def test_the_core_imports_no_sockets_threads_or_clock():
    found = {
        str(path.relative_to(ROOT)): sorted(stdlib_imports(path) & set(NOT_IN_THE_CORE))
        for package in CORE
        for path in (PACKAGE / package).rglob("*.py")
    }
    found = {path: names for path, names in found.items() if names}
    assert not found, f"the core imports what drives it: {found}"
