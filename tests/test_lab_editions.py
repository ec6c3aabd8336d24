"""The labs' student editions (LAB-9): an export strips the reference of the labs handed out,
shows none of it in its docs, and grades a correct solution as the repository does, in a
fresh clone and in Gradescope's autograder bundle.

The graders, wrong solutions, marks and reports are test_labs.py's; the editions are a file
of their own so that CI's workers, each taking whole files, run them beside the graders.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from kafka_ref import seams
from kafka_ref.tools import lab_export
from kafka_ref.tools.lab_report import SCHEMA
from tests.test_labs import CHEAT, LABS, ROOT, SOLUTIONS, by_solution, lab_command, results

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    """labs 03 and 07 handed out; 01, 02, 04, 05, 06 stripped too (cumulative)."""
    directory = tmp_path_factory.mktemp("edition") / "course"
    done = lab_command("export", "--labs", "03,07", str(directory))
    assert done.returncode == 0, done.stdout + done.stderr
    return directory


def function_node(path: pathlib.Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def function_body(path: pathlib.Path, name: str) -> list[ast.stmt]:
    node = function_node(path, name)
    return node.body[1:] if ast.get_docstring(node) else node.body


def reference_code(path: pathlib.Path, name: str) -> str:
    return ast.get_source_segment(path.read_text(), function_node(path, name)) or ""


@pytest.mark.spec("LAB-9")
def test_an_edition_strips_the_labs_up_to_the_last_handed_out(edition):
    manifest = json.loads((edition / "kafka_ref" / "edition.json").read_text())
    assert manifest["stripped_labs"] == ["01", "02", "03", "04", "05", "06", "07"]
    assert (
        sorted(p.name[:2] for p in (edition / "labs").glob("[0-9]*")) == manifest["stripped_labs"]
    )
    for number, lab in LABS.items():
        for seam in lab.seams:
            path = edition / seam.path.relative_to(ROOT)
            body = function_body(path, seam.name)
            if number <= "07":
                assert seam.key in manifest["stripped"]
                assert len(body) == 1 and isinstance(body[0], ast.Raise), seam.key
                assert f"lab {number}" in ast.unparse(body[0])
                assert ast.get_docstring(ast.parse(path.read_text())), "the module's docstring"
            else:  # after the last lab handed out: kafka-ref needs the reference to run
                reference = function_body(seam.path, seam.name)
                assert [ast.dump(s) for s in body] == [ast.dump(s) for s in reference]
    assert not list(edition.rglob("wrong")), "wrong solutions are the instructor's"
    assert not (edition / "tests" / "test_labs.py").exists()
    assert (edition / "tests" / "sim" / "test_kip101.py").is_file()  # the lab 03 grader's
    log = subprocess.run(
        ["git", "-C", str(edition), "log", "--oneline"], capture_output=True, text=True, check=True
    ).stdout
    assert log.count("\n") == 1
    compiled = subprocess.run([sys.executable, "-m", "compileall", "-q", str(edition)])
    assert compiled.returncode == 0


@pytest.mark.spec("LAB-9")
def test_an_edition_shows_no_stripped_code_in_its_docs(edition):
    stripped = {
        (seam, number) for number, lab in LABS.items() if number <= "07" for seam in lab.seams
    }
    pages = list((edition / "docs").rglob("*.md")) + list((edition / "labs").rglob("*.md"))
    assert (edition / "docs" / "transactions.md") in pages
    texts = {page: page.read_text() for page in pages}
    for seam, _ in stripped:
        lines = lab_export.revealing_lines([reference_code(seam.path, seam.name)], edition)
        for page, text in texts.items():
            assert not [line for line in lines if line in text], (page, seam.name)
    assert not [p for p, t in texts.items() if "{{ code" in t or "{{ rules" in t]
    assert "yours to write (lab 07)" in texts[edition / "docs" / "transactions.md"]
    for handout in (edition / "labs").glob("*/README.md"):
        for target in lab_export.DOC_LINK.findall(handout.read_text()):
            assert (edition / "docs" / target[0]).is_file(), (handout, target)


@pytest.mark.spec("LAB-9")
def test_an_export_asked_wrongly_is_one_line_and_exit_code_2(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    for args in (
        ["--labs", "99", str(tmp_path / "a")],
        ["--labs", "03", "--with-reference", "07", str(tmp_path / "b")],
        ["--labs", "03,07", "--with-reference", "03", str(tmp_path / "c")],
        ["--labs", "03", str(tmp_path / "full")],
    ):
        done = lab_command("export", *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)
    kept = lab_export.plan("03,07", "earlier", LABS)
    assert kept.stripped == ("03", "07") and kept.kept == ("01", "02", "04", "05", "06")
    assert lab_export.plan("07", "01,02", LABS).stripped == ("03", "04", "05", "06", "07")


@pytest.mark.spec("LAB-9")
def test_a_student_edition_grades_like_the_repository(tmp_path):
    """The acceptance scenario: labs 03 and 07 handed out, the earlier ones keeping their
    reference; in a fresh clone with its own virtualenv (kafka-ref installed from the clone,
    its dependencies those of this environment), correct solutions pass, the skeleton
    fails, and a solution calling the reference is refused. The reference is gone."""
    directory = tmp_path / "course"
    done = lab_command(
        "export", "--labs", "03,07", "--with-reference", "earlier", "--gradescope", str(directory)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(directory), str(clone)], check=True)
    python = install_in_a_fresh_venv(clone)
    skeleton03 = tmp_path / "skeleton03.py"
    shutil.copy(clone / "labs" / "03-replication" / "solution.py", skeleton03)
    shutil.copy(SOLUTIONS / "lab03.py", clone / "labs" / "03-replication" / "solution.py")
    shutil.copy(SOLUTIONS / "lab07.py", clone / "labs" / "07-transactions" / "solution.py")
    cheat = tmp_path / "cheat.py"
    cheat.write_text(CHEAT)

    lab03 = lab_command(
        "check",
        "03",
        "--solution",
        "labs/03-replication/solution.py",
        "--solution",
        str(skeleton03),
        "--json",
        cwd=clone,
        python=python,
    )
    graded = list(by_solution(lab03).values())
    assert all(r["passed"] for r in graded[0]), lab03.stdout + lab03.stderr
    assert not any(r["passed"] for r in graded[1]), lab03.stdout
    assert "skeleton03.py is not written yet" in graded[1][0]["reason"]
    lab07 = lab_command("check", "07", "--solution", str(cheat), "--json", cwd=clone, python=python)
    assert lab07.returncode == 1 and "refused" in results(lab07)[0], lab07.stdout
    lab07 = lab_command("check", "07", cwd=clone, python=python)  # the student's own file
    assert lab07.returncode == 0, lab07.stdout + lab07.stderr
    reference = lab_command("check", "07", "--reference", cwd=clone, python=python)
    assert reference.returncode == 2 and "no reference for lab 07" in reference.stderr
    gradescope_autograder_grades(tmp_path / "course-gradescope" / "lab07.zip", tmp_path)


def gradescope_autograder_grades(bundle: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Lab 07's autograder bundle, unpacked as Gradescope does (/autograder/source), grades
    a submitted solution.py into a results.json that follows the schema."""
    import jsonschema

    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    edition = json.loads((root / "source" / "kafka_ref" / "edition.json").read_text())
    assert edition["stripped_labs"] == ["07"] and not list((root / "source").rglob("wrong"))
    install_in_a_fresh_venv(root / "source")
    (root / "submission").mkdir()
    shutil.copy(SOLUTIONS / "lab07.py", root / "submission" / "solution.py")
    env = {**os.environ, "AUTOGRADER": str(root)}
    env.pop(seams.ENV, None)
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True)
    doc = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    assert doc["score"] == LABS["07"].manifest.code_points, doc


def install_in_a_fresh_venv(clone: pathlib.Path) -> str:
    """A virtualenv in the clone with kafka-ref installed from it (editable, as the
    edition's Makefile does); its other dependencies come from this environment's
    site-packages, listed on its path (not this environment's own kafka-ref)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True
    )
    python = str(clone / ".venv" / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = next(p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p))
    pathlib.Path(site, "dependencies.pth").write_text(ours + "\n")
    install = [python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(clone)]
    done = subprocess.run(install, capture_output=True, text=True, cwd=clone)
    assert done.returncode == 0, done.stdout + done.stderr
    where = subprocess.run(
        [python, "-c", "import kafka_ref; print(kafka_ref.__file__)"],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    ).stdout
    assert where.startswith(str(clone)), where
    return python
