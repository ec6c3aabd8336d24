"""A student edition: kafka-ref without the code the students are to write.

    kafka-ref lab export --labs 03,07 DIR                          # 01..06 stripped too
    kafka-ref lab export --labs 03,07 --with-reference earlier DIR  # only 03 and 07 stripped
    kafka-ref lab export --labs 07 --with-reference 01,02 DIR

writes DIR, a git repository of one commit, that a student clones and works in. The labs
handed out (`--labs`) lose their reference: each of their seam functions (kafka_ref/seams.py)
keeps its signature and its docstring, which are the contract, and its body becomes
`raise NotImplementedError` naming the lab. Helpers and imports that only those bodies used
go too, when nothing else in the edition uses them, and so does every embedded copy of the
code in the docs. The course is cumulative: the labs numbered below the highest one handed
out are stripped as well, and the student's own earlier solutions run there, unless
`--with-reference` keeps their reference (a list of labs, or `earlier` for all of them).
The labs after the highest one handed out keep their reference: kafka-ref needs their code
to run at all (a broker answering a Fetch computes the last stable offset of lab 07).

In the edition, `kafka_ref/edition.json` names, for each stripped seam, its lab's
`solution.py`: the seam runs the student's file without any setting, in the graders, the
analyses, a broker or a client the student starts. The edition holds:

* kafka_ref/, stripped as above; pyproject.toml; spec/ whole;
* labs/NN-name/ of every stripped lab: the handout, the skeleton, the grader, the analysis
  and lab.toml, never the wrong solutions (`wrong/`);
* the tests/ modules the graders import, and nothing else of tests/;
* docs/: the pages the handouts link to, with their embedded rules and code written out
  (as the site shows them) except the code of a stripped function;
* a README.md and a Makefile for students (`make lab LAB=03`, `make analyse LAB=03`).

`--gradescope` also writes, next to DIR, `DIR-gradescope/labNN.zip` per lab handed out:
Gradescope's autograder bundle (setup.sh, run_autograder, and an edition in which that lab
alone has no reference: a submission holds that lab's solution.py only), whose
run_autograder grades the submitted solution.py into results.json.

Rules: LAB-9 (spec/labs.md).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import pathlib
import re
import shutil
import subprocess
import tempfile
import textwrap
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.seams import EDITION
from kafka_ref.tools import docs_embed
from kafka_ref.tools.lab_course import ROOT, Lab, Seam, labs

SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "wrong", "edition.json")
DOC_LINK = re.compile(r"\]\(\.\./\.\./docs/([\w./-]+?\.md)(#[\w-]*)?\)")
MARKDOWN_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


class ExportError(ValueError):
    """An export that cannot be made as asked: one line for the command."""


@dataclass(frozen=True)
class Plan:
    """Which labs an edition hands out, strips and keeps."""

    assigned: tuple[str, ...]
    stripped: tuple[str, ...]  # the assigned ones and the earlier ones not kept
    kept: tuple[str, ...]  # earlier labs that keep their reference


def plan(assigned: str, with_reference: str, known: dict[str, Lab]) -> Plan:
    """The plan for `--labs` and `--with-reference` (comma-separated numbers)."""
    handed = sorted({n.strip().zfill(2) for n in assigned.split(",") if n.strip()})
    if not handed:
        raise ExportError("--labs names no lab, e.g. --labs 03,07")
    if unknown := [n for n in handed if n not in known]:
        raise ExportError(f"no lab {unknown[0]}: the labs are {', '.join(known)}")
    earlier = [n for n in known if n < handed[-1] and n not in handed]
    if with_reference.strip() == "earlier":
        kept = earlier
    else:
        kept = sorted({n.strip().zfill(2) for n in with_reference.split(",") if n.strip()})
        if bad := [n for n in kept if n not in earlier]:
            raise ExportError(
                f"--with-reference {bad[0]}: only labs before {handed[-1]} that are not handed "
                f"out can keep their reference ({', '.join(earlier) or 'none'})"
            )
    stripped = sorted([*handed, *(n for n in earlier if n not in kept)])
    return Plan(tuple(handed), tuple(stripped), tuple(kept))


# ---------------------------------------------------------------------- stripping the code
def stub(seam: Seam, lab: Lab, indent: str) -> str:
    """The body a stripped seam is left with."""
    where = f"labs/{lab.path.name}/solution.py"
    message = f'"lab {lab.number}: {seam.name} is yours to write, in {where}"'
    return f"{indent}raise NotImplementedError(\n{indent}    {message}\n{indent})"


def names_loaded(nodes: list[ast.AST]) -> set[str]:
    """Every name read in `nodes`, and every attribute's base name."""
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def used_from_outside(module: str, sources: dict[pathlib.Path, str]) -> set[str]:
    """The names of `module` that other files import from it or read as its attributes."""
    last = module.rsplit(".", 1)[-1]
    used: set[str] = set()
    for source in sources.values():
        if module not in source and last not in source:
            continue
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == module:
                used |= {alias.name for alias in node.names}
        used |= set(re.findall(rf"\b{re.escape(last)}\.(\w+)", source))
    return used


def strip_module(
    source: str, stripped: dict[str, Callable[[str], str]], outside: set[str]
) -> tuple[str, dict[str, str]]:
    """`source` with each function of `stripped` (name -> its stub, given the indent) reduced to its
    signature, docstring and stub, and the helpers and imports only they used removed. Also
    returns the removed code: name -> source, to keep it out of the docs."""
    lines = source.splitlines()
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in stripped]
    removed = {f.name: ast.get_source_segment(source, f) or "" for f in functions}
    only_theirs = names_loaded([stmt for f in functions for stmt in f.body])
    for function in sorted(functions, key=lambda f: f.lineno, reverse=True):
        body = function.body
        docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        keep_to = body[0].end_lineno if docstring else function.body[0].lineno - 1
        indent = " " * (body[0].col_offset)
        lines[keep_to : function.end_lineno] = [stripped[function.name](indent)]
    source = "\n".join(lines) + "\n"
    while True:  # remove what only the stripped bodies used, until nothing more goes
        tree = ast.parse(source)
        candidates = removable(tree, only_theirs, outside)
        if not candidates:
            return re.sub(r"\n{4,}", "\n\n\n", source), removed
        lines = source.splitlines()
        for node, names in sorted(candidates, key=lambda c: c[0].lineno, reverse=True):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            if not names:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    removed[node.name] = "\n".join(lines[first - 1 : node.end_lineno])
                lines[first - 1 : node.end_lineno] = []
                continue
            keep = [a for a in node.names if (a.asname or a.name).split(".")[0] not in names]
            node.names = keep
            statement = [ast.unparse(node)] if keep else []
            lines[first - 1 : node.end_lineno] = statement
        source = "\n".join(lines) + "\n"


def removable(tree: ast.Module, only_theirs: set[str], outside: set[str]) -> list:
    """Module-level definitions and imported names the stripped bodies used that nothing
    else uses now: (node, set()) for a definition, (import node, names) for imports."""
    exported = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            exported = {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
    found = []
    for node in tree.body:
        others = [n for n in tree.body if n is not node]
        loaded = names_loaded(others)
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined = {node.name}
            loaded |= names_loaded(node.decorator_list)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined = {t.id for t in targets if isinstance(t, ast.Name)}
            if len(defined) != len(targets):
                continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound = {(a.asname or a.name).split(".")[0] for a in node.names}
            unused = {
                name
                for name in bound & only_theirs
                if name not in loaded and name not in outside and name not in exported
            }
            if unused:
                found.append((node, unused))
            continue
        else:
            continue
        if defined <= only_theirs and not defined & (loaded | outside | exported):
            found.append((node, set()))
    return found


def strip_sources(root: pathlib.Path, edition: pathlib.Path, stripped: list[tuple[Seam, Lab]]):
    """Strip the seams in the edition's copy of kafka_ref; return the removed code."""
    sources = {p: p.read_text() for p in edition.rglob("*.py") if ".venv" not in p.parts}
    removed: dict[tuple[str, str], str] = {}  # (file relative to the root, name) -> code
    by_module: dict[str, list[tuple[Seam, Lab]]] = {}
    for seam, lab in stripped:
        by_module.setdefault(seam.module, []).append((seam, lab))
    for module, items in by_module.items():
        relative = items[0][0].path.relative_to(root)
        path = edition / relative
        others = {p: s for p, s in sources.items() if p != path}
        stubs = {seam.name: functools.partial(stub, seam, lab) for seam, lab in items}
        text, gone = strip_module(path.read_text(), stubs, used_from_outside(module, others))
        compile(text, str(path), "exec")
        path.write_text(text)
        removed |= {(str(relative), name): code for name, code in gone.items()}
    return removed


# ---------------------------------------------------------------------- what the graders need
def tests_modules(root: pathlib.Path, files: list[pathlib.Path]) -> set[pathlib.Path]:
    """The files of tests/ that `files` import, directly or through each other."""
    found: set[pathlib.Path] = set()
    todo = list(files)
    while todo:
        for node in ast.walk(ast.parse(todo.pop().read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests"):
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("tests")]
            for name in names:
                base = root / name.replace(".", "/")
                for path in (base.with_suffix(".py"), base / "__init__.py"):
                    if path.is_file() and path not in found:
                        found.add(path)
                        todo.append(path)
    return found


# ---------------------------------------------------------------------- the docs
def render_doc(
    text: str, roots: list[pathlib.Path], removed: dict, pages: set[str], labs_of: dict[str, str]
) -> str:
    """A docs page as plain Markdown for the edition: rules and code written out (but not
    a stripped function's), links to pages the edition lacks turned into text. The code
    comes from the first of `roots` that has its file: the edition, then the repository."""
    rules = docs_embed.spec_rules()

    def embed(match: re.Match) -> str:
        kind, words = match[1], match[2].split()
        if kind == "rules":
            boxes = []
            for rule in docs_embed.expand_ids(words):
                title, body, spec_file = rules[rule]
                quoted = textwrap.indent(f"**{rule} {title}**\n\n{body}", "> ", lambda _: True)
                boxes.append(f"{quoted}\n>\n> [{rule} in the spec](../spec/{spec_file})\n")
            return "\n".join(boxes)
        relative, qualname = words
        name = qualname.split(".")[0]
        if (relative, name) in removed:
            lab = labs_of.get(name, "")
            return f"*The code of `{qualname}` is not shown: it is yours to write (lab {lab}).*\n"
        root = next(r for r in roots if (r / relative).is_file())
        code = docs_embed.source_of(relative, qualname, root)
        return f"`{qualname}` in `{relative}`:\n\n```python\n{code}\n```\n"

    text = docs_embed.EMBED.sub(embed, text)

    def link(match: re.Match) -> str:
        bang, label, target = match[1], match[2], match[3]
        if bang or "://" in target or target.startswith("#"):
            return match[0]
        page = target.split("#")[0]
        if page.startswith("spec/"):
            return f"[{label}](../{target})"
        if page.endswith(".md") and not page.startswith("../") and page not in pages:
            return label  # a page this edition does not have
        return match[0]

    return MARKDOWN_LINK.sub(link, text)


def docs_pages(handouts: list[str]) -> set[str]:
    """The docs pages (relative to docs/) the handouts link to."""
    return {m[1] for text in handouts for m in DOC_LINK.finditer(text)}


# ---------------------------------------------------------------------- the edition
def export(
    root: pathlib.Path, the_plan: Plan, directory: pathlib.Path, *, gradescope: bool = False
) -> pathlib.Path:
    """Write the edition into `directory` (new or empty) and commit it."""
    known = labs(root)
    if directory.exists() and any(directory.iterdir()):
        raise ExportError(f"{directory} is not empty")
    directory.mkdir(parents=True, exist_ok=True)
    folders = [known[n] for n in the_plan.stripped]
    stripped = [(seam, lab) for lab in folders for seam in lab.seams]

    shutil.copytree(root / "kafka_ref", directory / "kafka_ref", ignore=SKIP)
    shutil.copytree(root / "spec", directory / "spec", ignore=SKIP)
    for lab in folders:
        shutil.copytree(lab.path, directory / "labs" / lab.path.name, ignore=SKIP)
    shutil.copy(root / "labs" / "conftest.py", directory / "labs" / "conftest.py")
    graders = [
        p
        for lab in folders
        for p in [*(lab.path / "grader").glob("*.py"), lab.path / "analysis.py"]
    ]
    for path in tests_modules(root, graders):
        target = directory / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    removed = strip_sources(root, directory, stripped)
    (directory / EDITION.relative_to(EDITION.parents[1])).write_text(
        json.dumps(edition_manifest(the_plan, stripped), indent=2) + "\n"
    )

    handouts = [(lab.path / "README.md").read_text() for lab in folders]
    pages = docs_pages(handouts)
    labs_of = {seam.name: lab.number for seam, lab in stripped}
    for page in sorted(pages):
        target = directory / "docs" / page
        target.parent.mkdir(parents=True, exist_ok=True)
        text = render_doc(
            (root / "docs" / page).read_text(), [directory, root], removed, pages, labs_of
        )
        target.write_text(text)
        for image in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text):
            if (root / "docs" / image).is_file():
                (directory / "docs" / image).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(root / "docs" / image, directory / "docs" / image)
    check_no_stripped_code(directory, removed)

    shutil.copy(root / "pyproject.toml", directory / "pyproject.toml")
    (directory / ".gitignore").write_text(".venv/\n__pycache__/\n*.egg-info/\nout/\n")
    (directory / "Makefile").write_text(MAKEFILE)
    (directory / "README.md").write_text(readme(the_plan, known))
    (directory / "labs" / "README.md").write_text(labs_readme(folders, the_plan))
    commit(directory, f"kafka-ref labs {', '.join(the_plan.assigned)}: the student edition")
    if gradescope:  # after the commit: the bundles are the instructor's, not the students'
        write_gradescope_bundles(root, the_plan, directory.parent / f"{directory.name}-gradescope")
    return directory


def edition_manifest(the_plan: Plan, stripped: list[tuple[Seam, Lab]]) -> dict:
    return {
        "assigned": list(the_plan.assigned),
        "stripped_labs": list(the_plan.stripped),
        "kept_labs": list(the_plan.kept),
        "stripped": {
            seam.key: {"lab": lab.number, "solution": f"labs/{lab.path.name}/solution.py"}
            for seam, lab in stripped
        },
    }


def body_lines(code: str) -> set[str]:
    """The lines of a function's code worth looking for elsewhere: its body's statements,
    not its signature or docstring, and not the short ones any code has (`return x`)."""
    tree = ast.parse(textwrap.dedent(code))
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            body = node.body[1:] if ast.get_docstring(node) else node.body
            for stmt in body:
                segment = ast.get_source_segment(textwrap.dedent(code), stmt) or ""
                lines |= {line.strip() for line in segment.splitlines() if len(line.strip()) > 24}
    return lines


def revealing_lines(codes: list[str], directory: pathlib.Path) -> set[str]:
    """The body lines of the stripped `codes` that the edition's kafka_ref does not have
    elsewhere (a line such as Java's signed-int conversion is shared, and gives nothing
    away)."""
    lines = {line for code in codes for line in body_lines(code)}
    kept = {
        line.strip()
        for path in directory.joinpath("kafka_ref").rglob("*.py")
        for line in path.read_text().splitlines()
    }
    return lines - kept


def check_no_stripped_code(directory: pathlib.Path, removed: dict) -> None:
    """No docs page and no handout of the edition shows a line of a stripped function."""
    lines = revealing_lines(list(removed.values()), directory)
    pages = [*directory.joinpath("docs").rglob("*.md"), *directory.joinpath("labs").rglob("*.md")]
    for page in pages:
        text = page.read_text()
        if found := [line for line in lines if line in text]:
            raise ExportError(f"{page.relative_to(directory)} shows stripped code: {found[0]}")


def commit(directory: pathlib.Path, message: str) -> None:
    git = [
        "git",
        "-C",
        str(directory),
        "-c",
        "user.name=kafka-ref",
        "-c",
        "user.email=kafka-ref@localhost",
        "-c",
        "init.defaultBranch=main",
    ]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run([*git, *command], check=True, capture_output=True)


MAKEFILE = """\
# Your kafka-ref labs: `make lab LAB=03` grades labs/03-*/solution.py; `make analyse LAB=03`
# runs the lab's analysis. The first run creates .venv and installs kafka-ref and what the
# graders and analyses need.
PY ?= python3
BIN := .venv/bin
STAMP := .venv/.installed

.PHONY: lab analyse list

$(STAMP): pyproject.toml
\ttest -x $(BIN)/python || $(PY) -m venv .venv
\t$(BIN)/pip install --quiet --upgrade pip
\t$(BIN)/pip install --quiet -e '.[test,spark,labs]'
\ttouch $(STAMP)

lab: $(STAMP)
\t$(BIN)/kafka-ref lab check $${LAB:?which lab? make lab LAB=03}

analyse: $(STAMP)
\t$(BIN)/kafka-ref lab analyse $${LAB:?which lab? make analyse LAB=03} --out out/lab$${LAB}

list: $(STAMP)
\t$(BIN)/kafka-ref lab list
"""


def readme(the_plan: Plan, known: dict[str, Lab]) -> str:
    handed = "\n".join(
        f"- [{known[n].title}](labs/{known[n].path.name}/README.md)" for n in the_plan.assigned
    )
    earlier = [n for n in the_plan.stripped if n not in the_plan.assigned]
    cumulative = ""
    if earlier:
        cumulative = (
            f"\nLabs {', '.join(earlier)} came before: their folders are here, and your "
            "solutions of them run wherever kafka-ref needs that code (a grader of a later "
            "lab included), so keep them working.\n"
        )
    return f"""# kafka-ref: your labs

kafka-ref is an educational implementation of Apache Kafka in Python that is also a real
broker. In this copy, the functions of the labs below have no code: you write it, in each
lab's `solution.py`, and kafka-ref runs your functions in their place everywhere (the
broker, the clients, the simulator). Each lab's handout says what to do and what to hand in.

{handed}
{cumulative}
    make lab LAB=03        # grade your labs/03-*/solution.py, rule by rule
    make analyse LAB=03    # run the lab's analysis: a plot and a table in out/lab03

The first `make` creates `.venv` and installs what the labs need (Python 3.11 or later, and a
Java runtime for the analyses' Spark). `spec/` holds the rules the graders check, `docs/` the
pages the handouts point to. `kafka-ref lab check` refuses a solution that imports the module
a lab's functions live in (other than the names the skeleton imports): write them yourself.
"""


def labs_readme(folders: list[Lab], the_plan: Plan) -> str:
    rows = "\n".join(
        f"| [{lab.path.name}]({lab.path.name}/README.md) | {lab.title} |" for lab in folders
    )
    return f"""# Labs

Each folder holds a handout (`README.md`), your `solution.py`, the grader (`grader/`), the
analysis (`analysis.py`) and how the lab is marked (`lab.toml`).

| lab | |
|---|---|
{rows}
"""


# ---------------------------------------------------------------------- Gradescope
SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (kafka-ref needs
# Python 3.11 or later: choose a base image that has it, such as Ubuntu 24.04).
set -euo pipefail
apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
cd /autograder/source
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test,labs]'
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission: grade the submitted solution.py of lab {number}
# into results.json (one test per rule, the points of labs/{folder}/lab.toml).
set -uo pipefail
root=${{AUTOGRADER:-/autograder}}
cd "$root/source"
mkdir -p "$root/results"
submitted=$(find "$root/submission" -name solution.py | head -n 1)
cp "${{submitted:-labs/{folder}/solution.py}}" labs/{folder}/solution.py
.venv/bin/kafka-ref lab check {number} --format gradescope --output "$root/results/results.json"
exit 0
"""


def write_gradescope_bundles(root: pathlib.Path, the_plan: Plan, out: pathlib.Path) -> None:
    """out/labNN.zip per lab handed out: setup.sh, run_autograder and an edition in which
    that lab alone has no reference (a submission holds that lab's solution.py only)."""
    out.mkdir(exist_ok=True)
    known = labs(root)
    for number in the_plan.assigned:
        lab = known[number]
        earlier = ",".join(n for n in known if n < number)
        with tempfile.TemporaryDirectory() as tmp:
            source = export(root, plan(number, earlier, known), pathlib.Path(tmp) / "source")
            files = [p for p in sorted(source.rglob("*")) if p.is_file() and ".git" not in p.parts]
            run = RUN_AUTOGRADER.format(number=number, folder=lab.path.name)
            with zipfile.ZipFile(out / f"lab{number}.zip", "w", zipfile.ZIP_DEFLATED) as bundle:
                for name, text in (("setup.sh", SETUP_SH), ("run_autograder", run)):
                    info = zipfile.ZipInfo(name)
                    info.external_attr = 0o755 << 16
                    bundle.writestr(info, text)
                for path in files:
                    bundle.write(path, str(path.relative_to(source)))


def export_command(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError

    try:
        the_plan = plan(args.labs, args.with_reference, labs())
        directory = export(ROOT, the_plan, pathlib.Path(args.directory), gradescope=args.gradescope)
    except ExportError as error:
        raise UsageError(str(error)) from error
    stripped = ", ".join(the_plan.stripped)
    print(f"{directory}: labs {', '.join(the_plan.assigned)} handed out; stripped: {stripped}")
    return 0
