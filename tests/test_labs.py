"""The labs' machinery: seams, graders, wrong solutions, marks and reports.

For every lab: its grader fails every test on the skeleton as handed out and passes every
test on the reference (LAB-3), fails every wrong solution of `labs/NN-name/wrong/` (LAB-6),
and marks what lab.toml says (LAB-7, LAB-8). A solution that reaches the reference is
refused (LAB-5), and a student edition has no reference for its labs yet grades a correct
solution as the repository does (LAB-9, test_lab_editions.py). The analyses (LAB-4) are
test_lab_analyses.py's.
"""

from __future__ import annotations

import ast
import gc
import json
import os
import pathlib
import subprocess
import sys
import weakref
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref import seams
from kafka_ref.tools.lab_course import (
    ManifestError,
    handout_section,
    labs,
    read_manifest,
    render_hand_in,
    with_hand_in,
)
from kafka_ref.tools.lab_grading import GradedTest, Grading, failure_reason
from kafka_ref.tools.lab_guard import refusals
from kafka_ref.tools.lab_report import SCHEMA, gradescope, junit

ROOT = pathlib.Path(__file__).resolve().parents[1]
LABS = labs()
SOLUTIONS = ROOT / "tests" / "data" / "lab_solutions"  # correct solutions, written by hand
WRONG = {n: sorted((lab.path / "wrong").glob("*.py")) for n, lab in LABS.items()}
LONG = os.environ.get("KAFKA_REF_LONG") == "1"
CHEAT = (  # passed lab 07 six times out of six before LAB-5
    "from kafka_ref.log import isolation\n\n\n"
    "def last_stable_offset(*a):\n"
    "    return isolation.last_stable_offset.reference(*a)\n"
)
pytestmark = pytest.mark.timeout(900)


def lab_command(*args: str, cwd: pathlib.Path = ROOT, python: str = sys.executable):
    cmd = [python, "-m", "kafka_ref.cli", "--log-level", "WARNING", "lab", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=800)


def results(done: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def by_solution(done: subprocess.CompletedProcess) -> dict[str, list[dict]]:
    graded: dict[str, list[dict]] = {}
    for entry in results(done):
        graded.setdefault(entry["solution"], []).append(entry)
    return graded


def test_there_are_labs():
    assert LABS, "labs/ has no lab"


# ---------------------------------------------------------------------- graders (LAB-2, LAB-3)
@pytest.mark.spec("LAB-3", "LAB-2")
@pytest.mark.parametrize("lab", sorted(LABS))
def test_the_grader_fails_the_skeleton_and_passes_the_reference(lab):
    skeleton = lab_command("check", lab, "--json")
    assert skeleton.returncode == 1, skeleton.stdout + skeleton.stderr
    graded = results(skeleton)
    assert graded and not any(r["passed"] for r in graded), graded
    assert all(r["rules"] for r in graded), "every grader test cites its rules"
    reference = lab_command("check", lab, "--reference", "--json")
    assert reference.returncode == 0, reference.stdout + reference.stderr
    assert [r["test"] for r in results(reference)] == [r["test"] for r in graded]
    assert all(r["passed"] for r in results(reference))


@pytest.mark.spec("LAB-1", "LAB-2")
def test_a_solution_wrong_in_one_seam_fails_only_that_seams_rule():
    """abs() instead of toPositive in partition_for_key, everything else right: only
    CLIENT-2 fails, and the failure shows the input hypothesis shrank to, as one call."""
    solution = LABS["02"].path / "wrong" / "abs_instead_of_to_positive.py"
    done = lab_command("check", "02", "--solution", str(solution))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failing: CLIENT-2\n" in done.stdout, done.stdout
    assert "rules that hold: CLIENT-4, CLIENT-5" in done.stdout, done.stdout
    assert "test_a_key_goes_where_the_java_client_sends_it(key=" in done.stdout, done.stdout


@pytest.mark.spec("LAB-2")
def test_a_lab_that_does_not_exist_is_one_line_and_exit_code_2():
    done = lab_command("check", "99")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("kafka-ref lab: no lab '99'")
    missing = lab_command("check", "02", "--solution", "/nonexistent.py")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1, missing.stderr


@pytest.mark.spec("LAB-2")
def test_a_test_out_of_time_fails_and_ends_that_solutions_grading(tmp_path):
    """An HW rule that loops forever fails its first test when the time limit is up, and its
    later tests are not run; the next solution of the batch is graded in full."""
    looping = tmp_path / "looping.py"
    source = (SOLUTIONS / "lab03.py").read_text()
    looping.write_text(
        source.replace("def leader_high_watermark(", "def _unused(", 1)
        + "\n\ndef leader_high_watermark(leader, followers, hw):\n    while True:\n        pass\n"
    )
    solutions = ["--solution", str(looping), "--solution", str(SOLUTIONS / "lab03.py")]
    done = lab_command("check", "03", *solutions, "--timeout", "20", "--json")
    graded = by_solution(done)
    looped, correct = graded[str(looping)], graded[str(SOLUTIONS / "lab03.py")]
    failed = [e for e in looped if e["outcome"] == "failed"]
    assert len(failed) == 1 and "ran out of time (20 s)" in failed[0]["reason"], looped
    after = looped[looped.index(failed[0]) + 1 :]
    assert after and all(e["outcome"] == "not run" for e in after), after
    assert all(e["passed"] for e in correct), done.stdout + done.stderr
    bad = lab_command("check", "03", "--timeout", "0")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr


@pytest.mark.spec("LAB-2")
def test_the_reason_of_a_failure_is_the_message_in_words_and_the_shrunk_input():
    """pytest's explanation is dropped after a message in words; hypothesis' comments
    (`# or any other generated value`) never get into the counter-example."""
    error = AssertionError("the list [10] sums to 10, not below 10\nassert 10 < 10\n+ where")
    error.add_note(
        "Failing test case: test_x(\n    xs=[10],\n    s='#',  # or any other generated value\n)"
    )
    assert failure_reason(error) == (
        "the list [10] sums to 10, not below 10  on  test_x(xs=[10], s='#')"
    )
    assert failure_reason(AssertionError("assert 2 == 0")) == "assert 2 == 0"
    assert failure_reason(KeyError("x")) == "KeyError: 'x'"
    group = ExceptionGroup("two", [NotImplementedError(), ValueError("v")])
    assert failure_reason(group) == "NotImplementedError"


@pytest.mark.spec("LAB-2")
@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), st.text(), max_size=4))
def test_a_counter_example_never_carries_a_comment(arguments):
    lines = [f"    {k}={v!r},  # or any other generated value" for k, v in arguments.items()]
    note = "Falsifying example: test_y(\n" + "\n".join(lines) + "\n)"
    error = AssertionError("assert False")
    error.add_note(note)
    example = failure_reason(error).split("  on  ", 1)[1]
    assert "generated value" not in example
    call = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    assert example == f"test_y({call})"


@pytest.mark.spec("LAB-2", "LAB-6")
def test_a_batch_grades_each_solution_as_it_grades_it_alone():
    """Several solutions in one grader process (a child forked per solution) get the
    verdicts each gets alone: nothing of one reaches the next."""
    wrong = str(LABS["02"].path / "wrong" / "abs_instead_of_to_positive.py")
    skeleton = str(LABS["02"].skeleton)
    batch = lab_command("check", "02", "--solution", wrong, "--solution", skeleton, "--json")
    assert batch.returncode == 1, batch.stdout + batch.stderr
    together = by_solution(batch)
    for solution in (wrong, skeleton):
        alone = results(lab_command("check", "02", "--solution", solution, "--json"))
        verdicts = [(r["test"], r["passed"]) for r in alone]
        assert [(r["test"], r["passed"]) for r in together[solution]] == verdicts


# ---------------------------------------------------------------------- wrong solutions (LAB-6)
def verdicts(done: subprocess.CompletedProcess) -> dict[str, list[tuple[str, str]]]:
    return {s: [(r["test"], r["outcome"]) for r in rs] for s, rs in by_solution(done).items()}


@pytest.mark.spec("LAB-6")
@pytest.mark.parametrize("lab", sorted(n for n in LABS if WRONG[n]))
def test_every_wrong_solution_fails_its_grader(lab):
    """Each `wrong/*.py` is graded, not refused, and fails. In one grader process for the
    lab; CI stops each at its first failing test (the verdict is known then), the long run
    grades each in full twice and wants the same verdict, test by test."""
    wrong = [str(path) for path in WRONG[lab]]
    for path in WRONG[lab]:
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring, f"{path.name}: its docstring says how it is wrong"
    options = [arg for path in wrong for arg in ("--solution", path)] + ["--json"]
    if LONG:
        runs = [lab_command("check", lab, *options) for _ in range(2)]
    else:
        runs = [lab_command("check", lab, *options, "--first-failure")]
    for run in runs:
        assert run.returncode == 1, run.stdout + run.stderr
        graded = by_solution(run)
        assert sorted(graded) == sorted(wrong), run.stdout + run.stderr
        for solution, entries in graded.items():
            assert "refused" not in entries[0], f"{solution} is refused: {entries[0]}"
            assert any(e["outcome"] == "failed" for e in entries), f"{solution} passes"
    if LONG:
        assert verdicts(runs[0]) == verdicts(runs[1])


# ---------------------------------------------------------------------- the reference (LAB-5)
@pytest.mark.spec("LAB-5")
@pytest.mark.parametrize(
    "source, line",
    [
        (CHEAT, 1),
        ("import kafka_ref.log.isolation as iso\n", 1),
        ("import kafka_ref.log\n\nx = kafka_ref.log.isolation\n", 3),
        ("from kafka_ref.log.isolation import FetchedBatch, heapq\n", 1),
        ("from kafka_ref.seams import seam\n", 1),
        ("from kafka_ref.log.log import last_stable_offset\n", 1),
        ("import importlib\n", 1),
        ("m = __import__('kafka_ref.log.isolation')\n", 1),
        ("import sys\n\nm = sys.modules['kafka_ref.log.isolation']\n", 3),
        ("def f(g):\n    return g.__closure__\n", 2),
        ("def f(g, name):\n    return getattr(g, name)\n", 2),
        ("from kafka_ref.log import log\n\nlog.isolation.last_stable_offset(1)\n", 3),
        ("get = getattr\n", 1),  # a getattr out of sight: get(module, computed name)
        ("import functools\n\nf = functools.reduce(getattr, ['a'], 1)\n", 3),
        ("import operator\n\nfind = operator.attrgetter('a' + 'b')\n", 3),
        ("from operator import methodcaller\n", 1),
        ("import pickle\n", 1),  # pickle.loads finds any object by module and name
        ("import runpy\n", 1),
        ("from pydoc import locate\n", 1),
        ("import subprocess\n", 1),  # another process runs the reference untouched
        ("import os\n\nos.system('python -c ...')\n", 3),
        ("from os import execv\n", 1),
    ],
)
def test_a_solution_that_reaches_the_reference_is_refused(source, line):
    found = refusals(source, LABS["07"])
    assert found and found[0].line == line, found


@pytest.mark.spec("LAB-5")
def test_what_a_lab_hands_out_is_never_refused():
    """The skeletons, the wrong solutions and correct solutions that import the names a
    skeleton imports (lab 07's FetchedBatch) pass the check."""
    for number, lab in LABS.items():
        for path in [lab.skeleton, *WRONG[number], *SOLUTIONS.glob(f"lab{number}.py")]:
            assert refusals(path.read_text(), lab) == [], path
    harmless = "import sys\nfrom kafka_ref.log.isolation import FetchedBatch\n\nX = sys.maxsize\n"
    assert refusals(harmless, LABS["07"]) == []


@pytest.mark.spec("LAB-5")
def test_check_refuses_before_grading(tmp_path):
    """Refused at once, in every format, with the line and the reason; nothing graded. (A
    correct solution importing FetchedBatch passes: test_a_student_edition_grades_...)"""
    cheat = tmp_path / "cheat.py"
    cheat.write_text(CHEAT)
    done = lab_command("check", "07", "--solution", str(cheat))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REFUSED" in done.stdout and "line 1: imports kafka_ref.log.isolation" in done.stdout
    assert "PASS" not in done.stdout and "FAIL" not in done.stdout  # nothing was graded
    xml = lab_command("check", "07", "--solution", str(cheat), "--format", "junit")
    suite = ET.fromstring(xml.stdout).find("testsuite")
    assert suite.get("failures") == suite.get("tests") == "2", xml.stdout
    assert any(p.get("name") == "refused" for p in suite.iter("property"))


@pytest.fixture
def seam_in(tmp_path, monkeypatch):
    """A seam declared here, with KAFKA_REF_SOLUTION naming files written in tmp_path."""

    def make(reference, **files: str):
        paths = []
        for name, text in files.items():
            (tmp_path / f"{name}.py").write_text(text)
            paths.append(str(tmp_path / f"{name}.py"))
        monkeypatch.setenv(seams.ENV, os.pathsep.join(paths))
        return seams.seam(reference)

    yield make
    for key in [k for k in seams.RESOLVED if k.startswith(__name__)]:
        del seams.RESOLVED[key]


@pytest.mark.spec("LAB-5", "LAB-1")
def test_a_seam_forgets_its_reference_once_a_solution_replaces_it(seam_in):
    def twice(x):
        return 2 * x

    alive = weakref.ref(twice)
    dispatch = seam_in(twice, mine="def twice(x):\n    return x + x + 1\n")
    del twice
    assert not hasattr(dispatch, "reference") and not hasattr(dispatch, "__wrapped__")
    assert dispatch(3) == 7  # the solution's
    gc.collect()
    assert alive() is None, "the reference is still reachable"


@pytest.mark.spec("LAB-5", "LAB-1")
def test_a_graded_seam_never_holds_its_reference(seam_in, monkeypatch):
    """Under `lab check` the lab's seams are built without their reference: one the
    solution leaves out raises NotImplementedError, and nothing of the process (a frame
    while the solution loads, a closure before it is resolved) keeps the reference."""

    def half(x):
        return x // 2

    alive = weakref.ref(half)
    monkeypatch.setenv(seams.GRADED, seams.seam_key(half))
    dispatch = seam_in(half, mine="def other(x):\n    return x\n")
    del half
    gc.collect()
    assert alive() is None, "a graded seam keeps its reference"
    with pytest.raises(NotImplementedError, match=r"half is not defined in .*mine\.py"):
        dispatch(4)


@pytest.mark.spec("LAB-5")
def test_check_never_runs_the_reference_of_a_function_left_out(tmp_path):
    """A lab 03 solution without `leader_high_watermark` fails REPL-3: the reference does
    not stand in for it (it did, and earned the rule's marks)."""
    skeleton = LABS["03"].skeleton.read_text()
    without = skeleton[: skeleton.index("def leader_high_watermark(")]
    without += skeleton[skeleton.index("def truncation_step(") :]
    (tmp_path / "partial.py").write_text(without)
    done = lab_command("check", "03", "--solution", str(tmp_path / "partial.py"), "--json")
    hw = [e for e in results(done) if e["rules"] == ["REPL-3"]]
    assert hw and not any(e["passed"] for e in hw), done.stdout + done.stderr
    assert "leader_high_watermark is not defined in" in hw[0]["reason"], hw[0]


@pytest.mark.spec("LAB-1")
def test_several_solution_files_each_replace_their_seams(seam_in):
    def first(x):
        return "reference"

    def second(x):
        return "reference"

    files = {
        "a": "def first(x):\n    return 'a'\n",
        "b": "def first(x):\n    return 'b'\ndef second(x):\n    return 'b'\n",
    }
    assert seam_in(first, **files)(0) == "a"  # the first file that defines it wins
    assert seam_in(second, **files)(0) == "b"

    def third(x):
        return "reference"

    assert seam_in(third, **files)(0) == "reference"  # no file defines it


@pytest.mark.spec("LAB-1")
def test_a_skeleton_says_which_function_of_which_file_is_not_written(seam_in):
    def todo(x):
        return x

    dispatch = seam_in(todo, skeleton="def todo(x):\n    raise NotImplementedError\n")
    with pytest.raises(NotImplementedError, match=r"todo in .*skeleton\.py is not written yet"):
        dispatch(1)


# ---------------------------------------------------------------------- marks (LAB-7, LAB-8)
@pytest.mark.spec("LAB-7")
@pytest.mark.parametrize("lab", sorted(LABS))
def test_lab_toml_marks_what_the_grader_checks_and_the_handout_says_so(lab):
    manifest = LABS[lab].manifest
    assert set(manifest.rules) == LABS[lab].grader_rules(), "lab.toml's [rules] and the grader"
    assert list(manifest.answers) == LABS[lab].analysis_questions(), "[answers], the questions"
    assert manifest.code_points + manifest.answer_points == 100
    assert LABS[lab].handout == with_hand_in(LABS[lab]), (
        "the handout's What to hand in is stale: python -m kafka_ref.tools.lab_course"
    )
    section = render_hand_in(LABS[lab])
    assert all(f"| {points} |" in section for points in manifest.rules.values())
    background = handout_section(LABS[lab].handout, "## Background").split("\n- ")[1]
    assert "](../../docs/" in background, "the Background points at the docs pages first"


@pytest.mark.spec("LAB-7")
@pytest.mark.parametrize(
    "text, error",
    [
        ("[rules]\nTXN-4 = 60\n[answers]\n1 = 30\n", r"add up to 60 \+ 30"),
        ('[rules]\nTXN-4 = 70\n[visibility]\nTXN-4 = "later"\n[answers]\n1 = 30\n', "later"),
        ('[rules]\nTXN-4 = 70\n[visibility]\nTXN-5 = "hidden"\n[answers]\n1 = 30\n', "TXN-5"),
        ("[rules]\nTXN-4 = 70\n[answers]\nfirst = 30\n", "question numbers"),
        ("[rules\n", "lab.toml"),
    ],
)
def test_a_wrong_lab_toml_says_what_is_wrong(tmp_path, text, error):
    (tmp_path / "lab.toml").write_text(text)
    with pytest.raises(ManifestError, match=error):
        read_manifest(tmp_path / "lab.toml")


def a_grading(outcomes: dict[str, bool], refused: list[str] | None = None) -> Grading:
    """A grading of lab 07: each test's name -> passed; the tests cite the grader's rules."""
    rules = {"lso": ["TXN-4"], "filter": ["CLIENT-14"], "broker": ["TXN-4", "CLIENT-14"]}
    results = [
        GradedTest(test, rules[test], "passed" if ok else "failed", "" if ok else f"{test} is off")
        for test, ok in outcomes.items()
    ]
    return Grading(LABS["07"], "/s.py", refused or [], [] if refused else results)


@pytest.fixture(scope="module")
def validator():
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.spec("LAB-8")
def test_gradescope_results_score_each_rule_by_lab_toml(validator):
    manifest = LABS["07"].manifest
    doc = gradescope(a_grading({"lso": True, "filter": False, "broker": True}))
    validator.validate(doc)
    tests = {t["tags"][0]: t for t in doc["tests"]}
    assert tests["TXN-4"]["score"] == tests["TXN-4"]["max_score"] == manifest.rules["TXN-4"]
    assert tests["CLIENT-14"]["score"] == 0 and tests["CLIENT-14"]["status"] == "failed"
    assert "filter is off" in tests["CLIENT-14"]["output"]
    assert doc["score"] == manifest.rules["TXN-4"]
    refused = gradescope(a_grading({}, refused=["line 1: imports kafka_ref.seams"]))
    validator.validate(refused)
    assert refused["score"] == 0 and "imports kafka_ref.seams" in refused["output"]


@pytest.mark.spec("LAB-8")
def test_the_schema_refuses_what_gradescope_does_not_read(validator):
    good = gradescope(a_grading({"lso": True, "filter": True, "broker": True}))
    assert validator.is_valid(good)
    for broken in (
        {**good, "visibility": "sometimes"},
        {**good, "tests": [{**good["tests"][0], "status": "ok"}]},
        {"tests": [{"name": "no score anywhere"}]},
        {**good, "scor": 1},
    ):
        assert not validator.is_valid(broken), broken


@pytest.mark.spec("LAB-8", "LAB-2")
def test_check_writes_gradescope_results(tmp_path, validator):
    wrong = LABS["02"].path / "wrong" / "forced_is_ignored.py"
    out = tmp_path / "results.json"
    done = lab_command(
        "check", "02", "--solution", str(wrong), "--format", "gradescope", "--output", str(out)
    )
    assert done.returncode == 1 and done.stdout == "", done.stdout + done.stderr
    doc = json.loads(out.read_text())
    validator.validate(doc)
    scores = {t["tags"][0]: t["score"] for t in doc["tests"]}
    rules = LABS["02"].manifest.rules
    assert scores == {**rules, "CLIENT-5": 0} and doc["score"] == sum(rules.values()) - 20
    failing = next(t for t in doc["tests"] if t["tags"][0] == "CLIENT-5")["output"]
    assert "forced=True" in failing and "generated value" not in failing


@pytest.mark.spec("LAB-8")
def test_junit_has_a_suite_per_solution_and_a_case_per_rule():
    both = junit(
        [
            a_grading({"lso": True, "filter": True, "broker": True}),
            a_grading({"lso": True, "filter": False, "broker": True}),
        ]
    )
    suites = ET.fromstring(both).findall("testsuite")
    assert [s.get("failures") for s in suites] == ["0", "1"]
    failed = [c.get("name") for c in suites[1].iter("testcase") if c.find("failure") is not None]
    assert failed == ["CLIENT-14"] and "filter is off" in suites[1].find(".//failure").text
