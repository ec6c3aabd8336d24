"""The course: the labs, the seams each replaces, and how each is marked (lab.toml).

A lab is a folder `labs/NN-name/` with a handout (README.md), a skeleton (solution.py), a
grader (grader/) and an analysis (analysis.py). Which seams a lab hands out is read from
its skeleton: the functions it defines that kafka_ref declares with `@seam` (found in the
source, nothing is imported). The names the skeleton imports from a seam's module are the
only ones a solution may import from it (kafka_ref/tools/lab_guard.py).

Each lab's marks live in its manifest, `labs/NN-name/lab.toml`:

    hand_in = ["solution.py", "answers.md"]   # the files a student hands in
    [rules]        # the autograder: points per spec rule the grader checks
    TXN-4 = 35     #   (a rule earns them when every grader test citing it passes)
    [visibility]   # when Gradescope shows a rule: visible (default), hidden,
    CLIENT-14 = "after_due_date"  # after_due_date, after_published
    [answers]      # the analysis's numbered questions, marked by hand
    1 = 8

The rules must be exactly those the grader's tests cite, the answers exactly the numbered
questions of the handout's "The analysis", and all points add up to 100. The handout's
"What to hand in" section is generated from the manifest; `python -m
kafka_ref.tools.lab_course` rewrites it in every handout after a manifest changes.

Rules: LAB-7 (spec/labs.md).
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re
import sys
import tomllib
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
TOTAL = 100
HANDIN_HEADING = "## What to hand in"


class ManifestError(ValueError):
    """A lab.toml that does not say how its lab is marked, or says it wrongly."""


@dataclass(frozen=True)
class Seam:
    """A function kafka_ref declares with `@seam`."""

    name: str
    module: str  # kafka_ref.log.isolation
    path: pathlib.Path  # .../kafka_ref/log/isolation.py

    @property
    def key(self) -> str:
        """What kafka_ref/seams.py calls it: the module and the function's name."""
        return f"{self.module}.{self.name}"


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def seams(root: pathlib.Path = ROOT) -> dict[str, Seam]:
    """Every seam in kafka_ref's source, by function name."""
    found: dict[str, Seam] = {}
    for path in sorted((root / "kafka_ref").rglob("*.py")):
        source = path.read_text()
        if "@seam" not in source:
            continue
        for node in ast.parse(source).body:
            decorators = getattr(node, "decorator_list", [])
            if any(isinstance(d, ast.Name) and d.id == "seam" for d in decorators):
                assert node.name not in found, f"two seams named {node.name}"
                found[node.name] = Seam(node.name, module_name(path, root), path)
    return found


@dataclass(frozen=True)
class Manifest:
    """What lab.toml says: the files handed in and the points of each part."""

    hand_in: tuple[str, ...]
    rules: dict[str, int]
    visibility: dict[str, str]
    answers: dict[int, int]

    @property
    def code_points(self) -> int:
        return sum(self.rules.values())

    @property
    def answer_points(self) -> int:
        return sum(self.answers.values())


@dataclass(frozen=True)
class Lab:
    """One lab folder."""

    number: str  # "07"
    path: pathlib.Path

    @property
    def root(self) -> pathlib.Path:
        return self.path.parents[1]

    @property
    def title(self) -> str:
        return self.handout.splitlines()[0].lstrip("# ").strip()

    @property
    def handout(self) -> str:
        return (self.path / "README.md").read_text()

    @property
    def skeleton(self) -> pathlib.Path:
        return self.path / "solution.py"

    @functools.cached_property
    def seams(self) -> list[Seam]:
        """The seams this lab hands out: the functions its skeleton defines."""
        index = seams(self.root)
        tree = ast.parse(self.skeleton.read_text())
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        return [index[name] for name in defined if name in index]

    @functools.cached_property
    def allowed_imports(self) -> dict[str, set[str]]:
        """The names the skeleton imports from each module that holds one of its seams."""
        modules = {s.module for s in self.seams}
        allowed: dict[str, set[str]] = {m: set() for m in modules}
        for node in ast.walk(ast.parse(self.skeleton.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                allowed[node.module] |= {alias.name for alias in node.names}
        return allowed

    @functools.cached_property
    def manifest(self) -> Manifest:
        return read_manifest(self.path / "lab.toml")

    def grader_rules(self) -> set[str]:
        """The spec rules the grader's tests cite (`@pytest.mark.spec(...)`), read from the
        source."""
        rules: set[str] = set()
        for path in (self.path / "grader").glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                func = node.func if isinstance(node, ast.Call) else None
                if isinstance(func, ast.Attribute) and func.attr == "spec":
                    rules |= {a.value for a in node.args if isinstance(a, ast.Constant)}
        return rules

    def analysis_questions(self) -> list[int]:
        """The numbers of the questions in the handout's "The analysis" section."""
        section = handout_section(self.handout, "## The analysis")
        return [int(m[1]) for m in re.finditer(r"^(\d+)\. ", section, re.MULTILINE)]


def labs(root: pathlib.Path = ROOT) -> dict[str, Lab]:
    """Every lab folder by its number: {"02": Lab(02, labs/02-producer), ...}."""
    found = sorted((root / "labs").glob("[0-9][0-9]-*"))
    return {p.name[:2]: Lab(p.name[:2], p) for p in found if (p / "README.md").is_file()}


def read_manifest(path: pathlib.Path) -> Manifest:
    where = f"{path.parent.name}/{path.name}"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ManifestError(f"{where}: {error}") from error
    rules, answers = data.get("rules", {}), data.get("answers", {})
    visibility = data.get("visibility", {})
    if not rules or not all(isinstance(v, int) and v > 0 for v in rules.values()):
        raise ManifestError(f"{where}: [rules] must give each rule a positive number of points")
    if not all(k.isdigit() and isinstance(v, int) and v > 0 for k, v in answers.items()):
        raise ManifestError(f"{where}: [answers] maps question numbers to positive points")
    if bad := [f"{r} = {v!r}" for r, v in visibility.items() if v not in VISIBILITIES]:
        raise ManifestError(f"{where}: [visibility] {bad[0]}: not one of {VISIBILITIES}")
    if unknown := set(visibility) - set(rules):
        raise ManifestError(f"{where}: [visibility] names rules not in [rules]: {unknown}")
    manifest = Manifest(
        tuple(data.get("hand_in", ())), rules, visibility, {int(k): v for k, v in answers.items()}
    )
    if manifest.code_points + manifest.answer_points != TOTAL:
        points = f"{manifest.code_points} + {manifest.answer_points}"
        raise ManifestError(f"{where}: the points add up to {points}, not {TOTAL}")
    return manifest


def handout_section(markdown: str, heading: str) -> str:
    """The text of a `## ` section, heading included, up to the next `## ` heading."""
    lines = markdown.splitlines(keepends=True)
    if not any(line.rstrip("\n") == heading for line in lines):
        return ""
    start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "".join(lines[start:end])


def rule_titles(root: pathlib.Path = ROOT) -> dict[str, str]:
    """Every spec rule's title, by id."""
    heading = re.compile(r"^### ([A-Z]+-\d+) (.+)$", re.MULTILINE)
    titles: dict[str, str] = {}
    for path in sorted((root / "spec").glob("*.md")):
        titles |= dict(heading.findall(path.read_text()))
    return titles


HAND_IN = {
    "solution.py": "your functions, which `kafka-ref lab check {n}` grades",
    "answers.md": 'your answers to the questions of "The analysis", with the plot and the '
    "table `kafka-ref lab analyse {n}` wrote",
}


def render_hand_in(lab: Lab) -> str:
    """The handout's "What to hand in" section, from the lab's manifest."""
    m, titles, n = lab.manifest, rule_titles(lab.root), lab.number
    files = "\n".join(
        f"- `labs/{lab.path.name}/{name}`: {HAND_IN.get(name, '').format(n=n)}"
        for name in m.hand_in
    )
    rows = []
    for rule, points in m.rules.items():
        when = m.visibility.get(rule, "visible")
        shown = "" if when == "visible" else f" (result shown {when.replace('_', ' ')})"
        rows.append(f"| {rule} {titles.get(rule, '')} | {points} | the grader{shown} |")
    for question, points in m.answers.items():
        rows.append(f"| analysis question {question} | {points} | by hand |")
    table = "\n".join(rows)
    return f"""{HANDIN_HEADING}

{files}

The lab is marked out of {TOTAL}. The rules the grader checks earn {m.code_points} marks,
the written answers {m.answer_points}:

| part | marks | marked by |
|---|---|---|
{table}

A rule earns its marks when every grader test that cites it passes, and none otherwise:
`kafka-ref lab check {n}` prints the rules that hold, and the autograder runs the same
tests. A solution that imports or calls kafka-ref's own code of these functions is refused
before grading and earns no marks for the rules (LAB-5 in [spec/labs.md](../../spec/labs.md)).

"""


def with_hand_in(lab: Lab) -> str:
    """The handout with its "What to hand in" section as the manifest says: replaced where
    it is, or put before "The analysis"."""
    handout, section = lab.handout, render_hand_in(lab)
    current = handout_section(handout, HANDIN_HEADING)
    if current:
        return handout.replace(current, section)
    analysis = handout.index("## The analysis")
    return handout[:analysis] + section + handout[analysis:]


def main(argv: list[str] | None = None) -> int:
    """Rewrite every handout's "What to hand in" from its lab.toml."""
    for lab in labs().values():
        (lab.path / "README.md").write_text(with_hand_in(lab))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
