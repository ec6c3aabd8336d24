"""Grade a lab and run its analysis: `kafka-ref lab list | check NN | analyse NN`.

    kafka-ref lab list
    kafka-ref lab check 02                          # your labs/02-producer/solution.py
    kafka-ref lab check 02 --solution ~/my_lab2.py  # another file
    kafka-ref lab check 02 --reference              # kafka-ref's own code: all rules hold
    kafka-ref lab analyse 02 --out /tmp/lab02       # the PySpark analysis: a plot and a table

Each lab (`labs/NN-name/`) has a handout (`README.md`), a skeleton the student completes
(`solution.py`), a grader (`grader/`, pytest tests that each cite the spec rules they check)
and a PySpark analysis (`analysis.py`). `check` runs the grader in a child process with
`KAFKA_REF_SOLUTION` naming the solution (kafka_ref/seams.py), so every seam the solution
defines runs the student's code, in our clients, the broker and the simulator alike, and
prints one line per test: the rules it checks, PASS or FAIL, and for a failure the reason
(for a property test, the shrunk counter-example hypothesis found). It exits 0 only when
every test passes. `make lab LAB=NN` runs `check` on the lab's own solution.

Rules: LAB-1, LAB-2, LAB-3, LAB-4 (spec/labs.md).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from kafka_ref.seams import ENV

ROOT = pathlib.Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"
REPORT_ENV = "KAFKA_REF_LAB_REPORT"


def labs() -> dict[str, pathlib.Path]:
    """Every lab folder by its number: {"02": labs/02-producer, ...}."""
    return {p.name[:2]: p for p in sorted(LABS.glob("[0-9][0-9]-*")) if (p / "README.md").is_file()}


def find_lab(number: str) -> pathlib.Path:
    from kafka_ref.cli import UsageError

    found = labs().get(number.zfill(2))
    if found is None:
        raise UsageError(f"no lab {number!r}: the labs are {', '.join(labs()) or 'none'}")
    return found


def title(lab: pathlib.Path) -> str:
    first = (lab / "README.md").read_text().splitlines()[0]
    return first.lstrip("# ").strip()


# ---------------------------------------------------------------------- the pytest plugin
# Loaded into the grader's pytest with `-p kafka_ref.tools.lab`: one JSON line per test.
def pytest_runtest_logreport(report) -> None:  # pragma: no cover - runs inside pytest
    path = os.environ.get(REPORT_ENV)
    if not path or not (report.when == "call" or report.outcome == "failed"):
        return
    entry = {
        "test": report.nodeid.split("::")[-1],
        "rules": dict(report.user_properties).get("rules", []),
        "passed": report.passed,
        "reason": "" if report.passed else failure_reason(str(report.longrepr)),
    }
    with open(path, "a") as out:
        out.write(json.dumps(entry) + "\n")


def pytest_runtest_setup(item) -> None:  # pragma: no cover - runs inside pytest
    rules = [r for mark in item.iter_markers("spec") for r in mark.args]
    item.user_properties.append(("rules", rules))


def failure_reason(longrepr: str) -> str:
    """What a student needs from a failure: the error, and for a property test the shrunk
    input hypothesis found (its "Failing test case" / "Falsifying example" note)."""
    lines = [line[1:].strip() if line.startswith("E ") else line for line in longrepr.splitlines()]
    errors = [line[2:].strip() for line in longrepr.splitlines() if line.startswith("E ")]
    reason = (errors[0] if errors else lines[-1] if lines else "")[:300]
    for i, line in enumerate(lines):
        if line.startswith(("Failing test case", "Falsifying example")):
            example = [line.split(":", 1)[1].strip()]
            for more in lines[i + 1 :]:
                example.append(more.strip())
                if more.strip() == ")":
                    break
            return f"{reason}  on  {''.join(example).replace(',)', ')')}"
    return reason


# ---------------------------------------------------------------------- the command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["list", "check", "analyse"], help="what to do")
    parser.add_argument("lab", nargs="?", help="the lab's number, e.g. 02")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--solution", metavar="PATH", help="the solution file (the lab's own)")
    who.add_argument("--reference", action="store_true", help="kafka-ref's own code")
    parser.add_argument("--json", action="store_true", help="check: one JSON object per test")
    parser.add_argument("--out", metavar="DIR", help="analyse: where the plot and table go")
    parser.add_argument("--master", metavar="URL", help="analyse: Spark master (local[*])")


def solution_env(lab: pathlib.Path, args: argparse.Namespace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if not args.reference:
        env[ENV] = str(pathlib.Path(args.solution or lab / "solution.py").resolve())
    return env


def check(lab: pathlib.Path, args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.jsonl"
        env = solution_env(lab, args) | {REPORT_ENV: str(report)}
        cmd = [
            sys.executable, "-m", "pytest", str(lab / "grader"), "-q", "-p", "no:cacheprovider",
            "-p", "kafka_ref.tools.lab", f"--rootdir={ROOT}", "--no-header",
        ]  # fmt: skip
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
        results = (
            [json.loads(line) for line in report.read_text().splitlines()]
            if (report.exists())
            else []
        )
    if not results:
        print(f"kafka-ref lab: the grader of {lab.name} ran no test:\n{done.stdout}{done.stderr}")
        return 1
    who = "the reference" if args.reference else env.get(ENV, "")
    if args.json:
        for entry in results:
            print(json.dumps(entry))
    else:
        print(f"{title(lab)}\nsolution: {who}\n")
        for r in results:
            verdict = "PASS" if r["passed"] else "FAIL"
            print(f"{verdict}  {','.join(r['rules']):<22} {r['test']}")
            if not r["passed"]:
                print(f"      {r['reason']}")
        holding = sorted({x for r in results for x in r["rules"]} - failing_rules(results))
        print(
            f"\n{sum(r['passed'] for r in results)} of {len(results)} tests pass; rules that "
            f"hold: {', '.join(holding) or 'none'}; failing: "
            f"{', '.join(sorted(failing_rules(results))) or 'none'}"
        )
    return 0 if all(r["passed"] for r in results) else 1


def failing_rules(results: list[dict]) -> set[str]:
    return {rule for r in results if not r["passed"] for rule in r["rules"]}


def analyse(lab: pathlib.Path, args: argparse.Namespace) -> int:
    out = args.out or os.path.join(tempfile.gettempdir(), f"kafka-ref-{lab.name}")
    cmd = [sys.executable, str(lab / "analysis.py"), "--out", out]
    if args.master:
        cmd += ["--master", args.master]
    code = subprocess.run(cmd, env=solution_env(lab, args), cwd=ROOT).returncode
    if code == 0:
        print(f"the plot and the table are in {out}")
    return code


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError

    if args.action == "list":
        for number, lab in labs().items():
            print(f"{number}  {title(lab)}")
        return 0
    if not args.lab:
        raise UsageError(f"lab {args.action} needs the lab's number, e.g. 02")
    lab = find_lab(args.lab)
    if args.solution and not os.path.isfile(args.solution):
        raise UsageError(f"--solution {args.solution}: no such file")
    return check(lab, args) if args.action == "check" else analyse(lab, args)
