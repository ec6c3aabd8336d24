"""The labs' machinery: seams and graders (LAB-1..LAB-3; the analyses, LAB-4, are in
test_lab_analyses.py).

For every lab: its grader fails every test on the skeleton as handed out and passes every
test on the reference. The seam itself is checked by running a grader on a solution that
is wrong in one seam only.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_ref.tools.lab import ROOT, failure_reason, labs

LABS = sorted(labs())
pytestmark = pytest.mark.timeout(600)


def lab_command(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "kafka_ref.cli", "--log-level", "WARNING", "lab", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=500)


def results(done: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_there_are_labs():
    assert LABS, "labs/ has no lab"


@pytest.mark.spec("LAB-3", "LAB-2")
@pytest.mark.parametrize("lab", LABS)
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
def test_a_solution_wrong_in_one_seam_fails_only_that_seams_rule(tmp_path):
    """abs() instead of toPositive in partition_for_key, everything else the reference: only
    CLIENT-2 fails, and the failure shows the input hypothesis shrank to."""
    solution = tmp_path / "wrong.py"
    solution.write_text(
        "from kafka_ref.client.partitioner import murmur2\n\n\n"
        "def partition_for_key(key, n):\n"
        "    return abs(murmur2(key)) % n\n"
    )
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


@pytest.mark.spec("LAB-2")
def test_failure_reason_keeps_the_error_and_the_shrunk_example():
    longrepr = (
        "    def test_x(key):\n>       assert f(key) == 0\nE       AssertionError: assert 2 == 0\n"
        "E       Failing test case: test_x(\nE           key=b'\\t',\nE       )\n"
    )
    assert failure_reason(longrepr) == "AssertionError: assert 2 == 0  on  test_x(key=b'\\t')"
