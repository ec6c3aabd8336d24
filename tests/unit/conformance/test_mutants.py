"""Every mutant is caught: the rules it declares fail against code that has its bug.

For a mutant judged over the wire, a pytest subprocess runs only the conformance tests
citing the mutant's rules (`--spec-filter`) against `--target kafka_ref:mutant=NAME`, and
the per-rule report it writes must show at least one of those rules failing (CONF-3). For
a mutant of an internal rule, a pytest subprocess applies it in process (`--mutant`) and
runs only the unit tests citing its rules; at least one must fail. A subprocess, because
the mutant patches kafka-ref's classes and the run must not share state with this one.

Each run stops at its first failing test (`-x`): one failure of a declared rule is the
verdict, and the tests after it, each starting brokers or replaying a history, would only
repeat it.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from kafka_ref.conformance.mutants import MUTANTS

ROOT = pathlib.Path(__file__).resolve().parents[3]


def run_suite(mutant: str, rules: tuple[str, ...], report_dir: pathlib.Path):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests/conformance",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--target=kafka_ref:mutant={mutant}",
        f"--spec-filter={','.join(rules)}",
        f"--conformance-report={report_dir}",
        "-x",
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)


def run_unit_tests(mutant: str):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        MUTANTS[mutant].suite,
        "-q",
        "-p",
        "no:cacheprovider",
        f"--mutant={mutant}",
        "-rf",
        "-x",
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)


WIRE = sorted(n for n, m in MUTANTS.items() if m.suite == "tests/conformance")
IN_PROCESS = sorted(n for n, m in MUTANTS.items() if m.suite != "tests/conformance")


@pytest.mark.spec("CONF-3")
@pytest.mark.parametrize("name", IN_PROCESS)
def test_each_mutant_of_an_internal_rule_fails_a_unit_test_of_its_rules(name):
    done = run_unit_tests(name)
    assert done.returncode == 1, f"exit {done.returncode}:\n{done.stdout[-3000:]}{done.stderr}"
    failed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    assert failed, f"mutant {name} survived:\n{done.stdout[-3000:]}"
    passed_without = run_unit_tests_without_mutant(failed)
    assert passed_without.returncode == 0, passed_without.stdout[-3000:]


def run_unit_tests_without_mutant(node_ids: list[str]):
    """The tests the mutant failed pass on the real code: the mutant, not them, is at fault."""
    cmd = [sys.executable, "-m", "pytest", *node_ids, "-q", "-p", "no:cacheprovider"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)


@pytest.mark.spec("CONF-3")
@pytest.mark.parametrize("name", WIRE)
def test_each_mutant_is_caught_by_a_rule_it_declares(name, tmp_path):
    mutant = MUTANTS[name]
    done = run_suite(name, mutant.rules, tmp_path)
    assert done.returncode == 1, f"exit {done.returncode}:\n{done.stdout[-3000:]}{done.stderr}"
    report = json.loads((tmp_path / f"kafka_ref-mutant-{name}.json").read_text())
    status = {row["id"]: row["status"] for row in report["rules"]}
    failed = [r for r in mutant.rules if status[r] == "fail"]
    assert failed, f"mutant {name} survived: {[(r, status[r]) for r in mutant.rules]}"
