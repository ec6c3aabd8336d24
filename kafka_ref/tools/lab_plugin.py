"""The pytest plugin `kafka-ref lab check` loads into a lab's grader (`-p
kafka_ref.tools.lab_plugin`): it reports every test to the grading (lab_grading.py).

The batch file named by KAFKA_REF_LAB_BATCH lists the solutions and, for each, the report
file to write: first the collected tests with the spec rules each cites, then one line per
test phase that fails and per test that passes, with the failure's reason in words.

The tests run cheapest first: the hand-worked examples, then the property tests, then the
tests on a real broker (those that use a `broker` fixture). A student reads the smallest
failing case first, and `--first-failure` stops most wrong solutions within a second
instead of after a broker's start and a real group's rebalances.

Each test gets a time limit (KAFKA_REF_LAB_TIMEOUT seconds), and a test that runs out of
time stops the solution's grading: the report names it, and the tests after it are not run.

With one solution the tests run as usual, in this process. With several, the plugin takes
over pytest's loop: collected once, it forks one child per solution; the child sets
KAFKA_REF_SOLUTION to its file, runs every collected test, tears its fixtures down and
exits. Each child starts from the same collected state, and nothing a solution does (a
module it patched, a thread it left) reaches the next one. The seams must not have been
resolved before a fork (`seams.RESOLVED` is empty): collecting a grader never calls a seam,
and a child resolves them with its own file.

Rules: LAB-2, LAB-6 (spec/labs.md).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest
from hypothesis import is_hypothesis_test

from kafka_ref import seams
from kafka_ref.tools.lab_grading import BATCH_ENV, TIMEOUT, TIMEOUT_ENV, failure_reason

_report: list[str] = []  # the report file of the solution graded in this process
_collected: list[dict] = []


def write(entry: dict) -> None:
    if _report:
        with open(_report[0], "a") as out:
            out.write(json.dumps(entry) + "\n")


def cost(item: pytest.Item) -> int:
    """0 for a hand-worked example, 1 for a property test, 2 for a test on a real broker."""
    if "broker" in getattr(item, "fixturenames", ()):
        return 2
    return 1 if is_hypothesis_test(getattr(item, "obj", None)) else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=cost)  # stable: within a cost, the grader's own order
    limit = float(os.environ.get(TIMEOUT_ENV, TIMEOUT))
    for item in items:
        item.add_marker(pytest.mark.timeout(limit))


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        rules = [r for mark in item.iter_markers("spec") for r in mark.args]
        _collected.append({"nodeid": item.nodeid, "test": item.name, "rules": rules})


def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """With one solution, pytest's own loop in this process; with several, a child each."""
    entries = json.loads(pathlib.Path(os.environ[BATCH_ENV]).read_text())
    if session.config.option.collectonly or session.testsfailed:
        return None
    if len(entries) == 1:
        _report[:] = [entries[0]["report"]]
        write({"collected": _collected})
        return None
    from _pytest.main import pytest_runtestloop as run_tests
    from _pytest.runner import pytest_sessionfinish as tear_down

    assert not seams.RESOLVED, f"seams resolved before the fork: {seams.RESOLVED}"
    for entry in entries:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            grade_in_child(session, entry, run_tests, tear_down)
        os.waitpid(pid, 0)
    return True


def grade_in_child(session: pytest.Session, entry: dict, run_tests, tear_down) -> None:
    """Run every test with `entry`'s solution, then leave the process (never returns)."""
    code = 0
    try:
        os.environ[seams.ENV] = entry["solution"]
        _report[:] = [entry["report"]]
        write({"collected": _collected})
        run_tests(session)
    except (session.Failed, session.Interrupted):
        pass  # -x: the first failure stops this solution's grading
    except BaseException:
        code = 1
    finally:
        tear_down(session)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    if call.excinfo is not None:
        outcome.get_result().kafka_ref_reason = failure_reason(call.excinfo.value)
        if ran_out_of_time(call.excinfo.value):
            # the solution may loop forever, here or in a broker's thread: grade no further
            limit = item.get_closest_marker("timeout").args[0]
            outcome.get_result().kafka_ref_reason = (
                f"ran out of time ({limit:g} s): does the solution loop forever? The tests "
                "after this one were not run"
            )
            write({"timed_out": item.name})
            item.session.shouldstop = f"{item.name} ran out of time"


def ran_out_of_time(error: BaseException) -> bool:
    """pytest-timeout's failure (its signal method fails the test with this message)."""
    return isinstance(error, pytest.fail.Exception) and "from pytest-timeout" in str(error)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":
        reason = "" if report.passed else getattr(report, "kafka_ref_reason", "")
        if not report.passed and not reason:  # a skip: its reason
            reason = f"{report.outcome}: {report.longrepr}"
        write({"nodeid": report.nodeid, "passed": report.passed, "reason": reason})
