"""Every mutant is caught: the rules it declares fail against a broker that has its bug.

For each ready mutant, a pytest subprocess runs only the conformance tests citing the
mutant's rules (`--spec-filter`) against `--target kafka_ref:mutant=NAME`, and the per-rule
report it writes must show at least one of those rules failing (CONF-3). A subprocess,
because the mutant patches kafka-ref's classes in the broker process and the run must not
share state with this one.
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
    cmd = [sys.executable, "-m", "pytest", "tests/conformance", "-q", "-p", "no:cacheprovider",
           f"--target=kafka_ref:mutant={mutant}", f"--spec-filter={','.join(rules)}",
           f"--conformance-report={report_dir}"]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)


@pytest.mark.spec("CONF-3")
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_is_caught_by_a_rule_it_declares(name, tmp_path):
    mutant = MUTANTS[name]
    done = run_suite(name, mutant.rules, tmp_path)
    assert done.returncode == 1, f"exit {done.returncode}:\n{done.stdout[-3000:]}{done.stderr}"
    report = json.loads((tmp_path / f"kafka_ref-mutant-{name}.json").read_text())
    status = {row["id"]: row["status"] for row in report["rules"]}
    failed = [r for r in mutant.rules if status[r] == "fail"]
    assert failed, f"mutant {name} survived: {[(r, status[r]) for r in mutant.rules]}"
