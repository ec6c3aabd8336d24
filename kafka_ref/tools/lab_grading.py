"""Grading a lab: run its grader on one solution, or on many in one process.

`grade(lab, solutions)` first refuses every solution that reaches the reference
(kafka_ref/tools/lab_guard.py), then runs the lab's grader (pytest, in a child process)
with kafka_ref/tools/lab_plugin.py loaded. The plugin writes the collected tests and each
test's outcome into a report file; `grade` reads them back as `GradedTest`s, in the
grader's order, each with the spec rules its test cites and, for a failure, the reason.

**Many solutions, one grader process.** Grading a solution costs the grader's own time
plus starting Python and pytest and collecting the grader (importing kafka_ref, the tests
it borrows, hypothesis): about two seconds a solution. With several solutions the plugin
collects once, then forks one child per solution (lab_plugin.py).

**The reason of a failure** (`failure_reason`): the grader's assertion message, which names
the inputs in words, or the error; for a property test, the counter-example hypothesis
shrank to, as one call without hypothesis' comments (`# or any other generated value`).

**Nothing of the lab falls back to the reference.** The grader runs with the lab's seams
named in KAFKA_REF_GRADED_SEAMS (kafka_ref/seams.py): a function the solution leaves out
raises NotImplementedError, so its rules fail, instead of running kafka-ref's own code.

**First failure.** `first_failure=True` stops a solution's grading at its first failing
test (pytest's `-x`): the verdict, FAIL, is known then. The tests not run are reported as
such.

**A solution that never returns.** Each test has a time limit, `timeout` seconds
(pytest-timeout; the plugin sets it). One limit for all: a test that is not a property
test may still run hypothesis (a simulator's stateful hunt, kafka-ref's own property tests),
and shrinking a wrong solution's counter-example takes far longer than passing. A test
that runs out of time fails, saying so, and ends that solution's grading, like a first
failure: a function that loops forever would otherwise hold every later test for the whole
limit, and may still be spinning in a broker's thread.

Rules: LAB-2, LAB-6 (spec/labs.md).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import tokenize
from dataclasses import dataclass, field

from kafka_ref import seams
from kafka_ref.tools.lab_course import Lab
from kafka_ref.tools.lab_guard import refusals

BATCH_ENV = "KAFKA_REF_LAB_BATCH"
TIMEOUT_ENV = "KAFKA_REF_LAB_TIMEOUT"
TIMEOUT = 300.0  # seconds a grader test may run (LAB-2); the reference's slowest: 12 s, loaded
NOT_RUN = "not run"


@dataclass
class GradedTest:
    """One grader test's outcome for one solution."""

    test: str
    rules: list[str]
    outcome: str  # "passed", "failed" or "not run"
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def as_json(self) -> dict:
        return {
            "test": self.test,
            "rules": self.rules,
            "passed": self.passed,
            "outcome": self.outcome,
            "reason": self.reason,
        }


@dataclass
class Grading:
    """One solution's grading: refused, or the result of every grader test."""

    lab: Lab
    solution: str | None  # None: kafka-ref's own code
    refused: list[str] = field(default_factory=list)
    results: list[GradedTest] = field(default_factory=list)
    problem: str = ""  # the grader's output when it ran no test
    timed_out: str = ""  # the test that ran out of time and ended the grading

    @property
    def passed(self) -> bool:
        return not self.refused and bool(self.results) and all(r.passed for r in self.results)

    def rules(self) -> list[str]:
        """Every rule the grader checks, in the order its tests first cite them."""
        seen: dict[str, None] = {}
        for result in self.results:
            seen |= dict.fromkeys(result.rules)
        return list(seen) or sorted(self.lab.grader_rules())

    def failing_rules(self) -> set[str]:
        if self.refused or not self.results:
            return set(self.rules())
        return {rule for r in self.results if not r.passed for rule in r.rules}

    def holding_rules(self) -> list[str]:
        return sorted(set(self.rules()) - self.failing_rules())


def grade(
    lab: Lab,
    solutions: list[str] | None,
    *,
    first_failure: bool = False,
    timeout: float = TIMEOUT,
) -> list[Grading]:
    """Grade each solution file (None: the reference) with the lab's grader, in one pytest
    process. The solutions are absolute paths; `timeout` is each test's limit (seconds)."""
    gradings = [Grading(lab, None)] if solutions is None else [Grading(lab, s) for s in solutions]
    for grading in gradings:
        if grading.solution is not None:
            source = pathlib.Path(grading.solution).read_text()
            grading.refused = [str(r) for r in refusals(source, lab)]
    to_run = [g for g in gradings if not g.refused]
    if not to_run:
        return gradings
    with tempfile.TemporaryDirectory() as tmp:
        reports = [pathlib.Path(tmp) / f"{i}.jsonl" for i in range(len(to_run))]
        batch = pathlib.Path(tmp) / "batch.json"
        pairs = zip(to_run, reports, strict=True)
        entries = [{"solution": g.solution, "report": str(r)} for g, r in pairs]
        batch.write_text(json.dumps(entries))
        drop = {seams.ENV, seams.GRADED}
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env |= {BATCH_ENV: str(batch), TIMEOUT_ENV: str(timeout)}
        if to_run[0].solution is not None:
            env[seams.ENV] = to_run[0].solution  # the seams dispatch; each child sets its own
            # the lab's seams run the solution's functions or fail, never the reference
            env[seams.GRADED] = ",".join(s.key for s in lab.seams)
        plugins = ["-p", "no:cacheprovider", "-p", "kafka_ref.tools.lab_plugin"]
        cmd = [sys.executable, "-m", "pytest", str(lab.path / "grader"), "-q", "--no-header"]
        cmd += [*plugins, f"--rootdir={lab.root}", *(["-x"] if first_failure else [])]
        done = subprocess.run(cmd, env=env, cwd=lab.root, capture_output=True, text=True)
        for grading, report in zip(to_run, reports, strict=True):
            read_report(grading, report, first_failure)
            if not grading.results:
                grading.problem = done.stdout + done.stderr
    return gradings


def read_report(grading: Grading, report: pathlib.Path, first_failure: bool) -> None:
    text = report.read_text() if report.exists() else ""
    lines = [json.loads(line) for line in text.splitlines()]
    if not lines or "collected" not in lines[0]:
        return
    outcomes: dict[str, dict] = {}
    for entry in lines[1:]:  # a test's setup, call and teardown: it fails if any fails
        if "timed_out" in entry:
            grading.timed_out = entry["timed_out"]
            continue
        seen = outcomes.setdefault(entry["nodeid"], entry)
        if seen["passed"] and not entry["passed"]:
            outcomes[entry["nodeid"]] = entry
    stopped = first_failure and any(not e["passed"] for e in outcomes.values())
    stopped = stopped or bool(grading.timed_out)
    for test in lines[0]["collected"]:
        entry = outcomes.get(test["nodeid"])
        if entry is not None:
            outcome, reason = ("passed" if entry["passed"] else "failed"), entry["reason"]
        elif stopped:
            outcome, reason = NOT_RUN, ""
        else:
            outcome = "failed"
            reason = "the grading ended before this test ran (did the solution end the process?)"
        grading.results.append(GradedTest(test["test"], test["rules"], outcome, reason))


def failure_reason(error: BaseException) -> str:
    """What a student needs from a failure: the grader's message in words (or the error),
    and for a property test the shrunk input, as one call."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    message = str(error)
    if isinstance(error, AssertionError) and message:
        # pytest appends its explanation ("assert 2 == 0", "+  where ...") to the message
        lines = message.splitlines()
        words = [line for line in lines[: first_assert(lines)] if line.strip()]
        reason = " ".join(words) if words else lines[0]
    else:
        first = message.splitlines()[0] if message else ""
        reason = f"{type(error).__name__}: {first}" if first else type(error).__name__
    reason = reason if len(reason) <= 500 else reason[:497] + "..."
    for note in getattr(error, "__notes__", ()):
        if note.startswith(("Failing test case", "Falsifying example")):
            return f"{reason}  on  {counter_example(note)}"
    return reason


def first_assert(lines: list[str]) -> int:
    return next((i for i, line in enumerate(lines) if line.startswith("assert ")), len(lines))


def counter_example(note: str) -> str:
    """hypothesis' "Failing test case: test_x(\\n    key=b'\\t',  # or any other generated
    value\\n)" as `test_x(key=b'\\t')`: comments dropped, one line."""
    code = note.split(":", 1)[1].strip()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return " ".join(line.strip() for line in code.splitlines())
    lines = code.splitlines()
    for token in reversed(tokens):  # cut each comment off its line, right to left
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    parts = [line.strip() for line in lines if line.strip()]
    if len(parts) >= 2 and parts[-1] == ")":
        return parts[0] + " ".join(parts[1:-1]).rstrip(",") + ")"
    return " ".join(parts)
