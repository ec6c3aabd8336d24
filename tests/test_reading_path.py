"""docs/reading-path.md is in step with the tree.

The reading path lists the core files of kafka_ref in the order of the notes, each with its
line count and the function or class that holds its rule, then names every other file (or
its directory) for what it is. Every Python file of the package is named exactly once (a
directory of the rest stands for its files the core does not list); the
line counts and the total are the files' own; each named holder is defined in its file;
and the README's "What is here" table points to the reading path and names every package.

`python tests/test_reading_path.py` rewrites the line counts and the total in place.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reading-path.md"
CORE_ROW = re.compile(r"^\| (\d+) \| `([^`]+)` \| (\d+) \| [^|]+ \| (.+) \|$", re.M)
TOTAL = re.compile(r"^(\d+) files, (\d+) lines in all\.$", re.M)
PACKAGE_SIZE = re.compile(r"kafka-ref is ([\d,]+) lines of Python")

# Imports that point forward along the core, each with its reason. A file is read after the
# files it imports; one of these asks the reader to take a later file on trust.
WIRED_IN = (
    "offsets committed in a transaction wait in the group coordinator until the commit "
    "marker, as Kafka's GroupMetadata holds its pending transactional offset commits; the "
    "store is the transactions chapter's, the coordinator that owns it the groups'"
)
FORWARD_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("kafka_ref.group.coordinator", "kafka_ref.group.txn_offsets"): WIRED_IN,
}


def sections() -> tuple[str, str]:
    text = DOC.read_text()
    core, rest = text.split("## The rest", 1)
    return core, rest


def core_rows() -> list[tuple[int, str, int, list[str]]]:
    """(number, path, lines, holders) of each core row."""
    core, _ = sections()
    return [
        (int(n), path, int(lines), re.findall(r"`([^`]+)`", holders))
        for n, path, lines, holders in CORE_ROW.findall(core)
    ]


def rest_paths() -> list[str]:
    _, rest = sections()
    rows = [line.split("|")[1] for line in rest.splitlines() if line.startswith("| `")]
    return [path for row in rows for path in re.findall(r"`([^`]+)`", row)]


def package_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kafka_ref").rglob("*.py"))


def line_count(path: str) -> int:
    return (ROOT / path).read_text().count("\n")


def test_the_core_is_numbered_in_order_and_about_thirty_files_and_ten_thousand_lines():
    rows = core_rows()
    assert [n for n, *_ in rows] == list(range(1, len(rows) + 1))
    assert 25 <= len(rows) <= 50  # about thirty, and transactions came last
    assert 7_000 <= sum(line_count(path) for _, path, _, _ in rows) <= 12_000


def package_lines() -> int:
    return sum(line_count(path) for path in package_files())


def test_the_size_of_the_package_is_its_own():
    [said] = PACKAGE_SIZE.findall(DOC.read_text())
    assert int(said.replace(",", "")) == package_lines(), f"run python {__file__}"


def import_graph() -> dict[str, set[str]]:
    path = ROOT / "tests" / "test_import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph_of_kafka_ref", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.import_graph()


def module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def forward_imports(order: list[str], graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) for every import of a file later in `order` than its importer."""
    position = {name: i for i, name in enumerate(order)}
    return {
        (name, imported)
        for name in order
        for imported in graph.get(name, ())
        if position.get(imported, -1) > position[name]
    }


def test_a_forward_import_is_found():
    graph = {"a": {"b"}, "b": set(), "c": {"a", "b", "elsewhere"}}
    assert forward_imports(["a", "b", "c"], graph) == {("a", "b")}


@pytest.mark.spec("SRC-3")
def test_no_core_file_imports_a_file_later_on_the_reading_path():
    order = [module_of(path) for _, path, _, _ in core_rows()]
    found = forward_imports(order, import_graph())
    unexplained = sorted(found - FORWARD_IMPORTS_ALLOWED.keys())
    assert not unexplained, f"imports of a later file on the reading path: {unexplained}"
    stale = sorted(FORWARD_IMPORTS_ALLOWED.keys() - found)
    assert not stale, f"allowed forward imports that no longer exist: {stale}"


def test_line_counts_and_the_total_are_the_files_own():
    rows = core_rows()
    wrong = {
        path: (said, line_count(path)) for _, path, said, _ in rows if said != line_count(path)
    }
    assert not wrong, f"stale counts (said, actual): {wrong}; run python {__file__}"
    [(files, lines)] = TOTAL.findall(sections()[0])
    assert (int(files), int(lines)) == (len(rows), sum(line_count(p) for _, p, _, _ in rows))


def test_every_file_of_the_package_is_named_exactly_once():
    core = [path for _, path, _, _ in core_rows()]
    rest = rest_paths()
    named_files = core + [p for p in rest if p.endswith(".py")]
    directories = [p for p in rest if p.endswith("/")]
    assert len(named_files) == len(set(named_files)), "a file is named twice"
    unknown = [p for p in named_files + directories if not (ROOT / p).exists()]
    assert not unknown, f"named but not in the tree: {unknown}"
    unnamed = [
        f
        for f in package_files()
        if f not in named_files and not any(f.startswith(d) for d in directories)
    ]
    assert not unnamed, f"files the reading path does not name: {unnamed}"
    # A directory of the rest means its files the core does not list: it must have some.
    empty = [
        d
        for d in directories
        if not [f for f in package_files() if f.startswith(d) and f not in core]
    ]
    assert not empty, f"directories of the rest with only core files: {empty}"


def defined_names(path: str) -> set[str]:
    """`name` for every top-level def and class, `Class.method` for methods."""
    names = set()
    for node in ast.parse((ROOT / path).read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{n.name}" for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


def test_each_core_file_defines_the_holder_of_its_rule():
    missing = {
        path: [h for h in holders if h not in defined_names(path)]
        for _, path, _, holders in core_rows()
    }
    missing = {path: names for path, names in missing.items() if names}
    assert all(holders for *_, holders in core_rows()), "a core row names no holder"
    assert not missing, f"holders not defined in their file: {missing}"


def test_the_readme_table_points_to_the_reading_path_and_names_every_package():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## What is here", 1)[1].split("\n## ", 1)[0]
    assert "docs/reading-path.md" in table
    packages = {p.parent.name for p in (ROOT / "kafka_ref").glob("*/__init__.py")}
    unnamed = sorted(p for p in packages if f"kafka_ref/{p}/" not in table)
    assert not unnamed, f"packages the README's table does not name: {unnamed}"


def rewrite_counts() -> None:
    text = DOC.read_text()
    rows = core_rows()

    def row(match: re.Match) -> str:
        start, end = match.span(3)  # the count, by position: a row number may look the same
        line = match.group(0)
        offset = match.start(0)
        return line[: start - offset] + str(line_count(match.group(2))) + line[end - offset :]

    text = CORE_ROW.sub(row, text)
    total = sum(line_count(p) for _, p, _, _ in rows)
    text = TOTAL.sub(f"{len(rows)} files, {total} lines in all.", text)
    text = PACKAGE_SIZE.sub(f"kafka-ref is {package_lines():,} lines of Python", text)
    DOC.write_text(text)


if __name__ == "__main__":
    rewrite_counts()
    sys.exit(0)
