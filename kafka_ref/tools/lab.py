"""Grade a lab, run its analysis, hand the course out: `kafka-ref lab list | check | export`.

    kafka-ref lab list
    kafka-ref lab check 02                          # your labs/02-producer/solution.py
    kafka-ref lab check 02 --solution ~/my_lab2.py  # another file
    kafka-ref lab check 02 --solution a.py --solution b.py   # several, in one grader process
    kafka-ref lab check 02 --reference              # kafka-ref's own code: all rules hold
    kafka-ref lab check 02 --format gradescope --output results.json
    kafka-ref lab analyse 02 --out /tmp/lab02       # the PySpark analysis: a plot and a table
    kafka-ref lab export --labs 03,07 /tmp/course   # a student edition of labs 03 and 07

Each lab (`labs/NN-name/`) has a handout (`README.md`), a skeleton the student completes
(`solution.py`), a grader (`grader/`, pytest tests that each cite the spec rules they check),
a PySpark analysis (`analysis.py`) and its marks (`lab.toml`). `check` refuses a solution
that imports or calls kafka-ref's own code of the lab (lab_guard.py), then runs the grader
in a child process with `KAFKA_REF_SOLUTION` naming the solution (kafka_ref/seams.py), so
every seam the solution defines runs the student's code, in our clients, the broker and the
simulator alike. It prints one line per test: the rules it checks, PASS or FAIL and for a
failure the reason in words (for a property test, the shrunk counter-example hypothesis
found); `--format json`, `gradescope` (Gradescope's results.json, one test per rule, the
points of lab.toml) and `junit` write the same for programs (lab_report.py). It exits 0
only when every test of every solution passes, 1 otherwise. `make lab LAB=NN` runs `check`
on the lab's own solution. `export` writes a student edition (lab_export.py).

Rules: LAB-1..LAB-9 (spec/labs.md).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from kafka_ref.seams import ENV, edition_stripped
from kafka_ref.tools.lab_course import ROOT, Lab, ManifestError, labs
from kafka_ref.tools.lab_grading import TIMEOUT

LABS = ROOT / "labs"


def find_lab(number: str) -> Lab:
    from kafka_ref.cli import UsageError

    found = labs().get(number.zfill(2))
    if found is None:
        raise UsageError(f"no lab {number!r}: the labs are {', '.join(labs()) or 'none'}")
    return found


# ---------------------------------------------------------------------- the command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kafka_ref.tools.lab_report import FORMATS

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="list the labs")
    check = sub.add_parser("check", help="grade solutions with a lab's grader")
    check.add_argument("lab", help="the lab's number, e.g. 02")
    who = check.add_mutually_exclusive_group()
    who.add_argument(
        "--solution",
        metavar="PATH",
        action="append",
        help="a solution file (default: the lab's own); repeat for several",
    )
    who.add_argument("--reference", action="store_true", help="kafka-ref's own code")
    check.add_argument("--format", choices=FORMATS, default="text", help="the report's format")
    check.add_argument("--json", action="store_true", help="the same as --format json")
    check.add_argument("--output", metavar="FILE", help="write the report there, not to stdout")
    check.add_argument(
        "--first-failure",
        action="store_true",
        help="stop grading a solution at its first failing test",
    )
    check.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=TIMEOUT,
        help=f"each test's time limit ({TIMEOUT:g}); a test out of time fails and ends the "
        "solution's grading",
    )
    analyse = sub.add_parser("analyse", help="run a lab's PySpark analysis")
    analyse.add_argument("lab", help="the lab's number, e.g. 02")
    analysed = analyse.add_mutually_exclusive_group()
    analysed.add_argument("--solution", metavar="PATH", help="the solution file (the lab's own)")
    analysed.add_argument("--reference", action="store_true", help="kafka-ref's own code")
    analyse.add_argument("--out", metavar="DIR", help="where the plot and table go")
    analyse.add_argument("--master", metavar="URL", help="Spark master (local[*])")
    export = sub.add_parser("export", help="write a student edition of some labs")
    export.add_argument("directory", help="where to write it (a new or empty directory)")
    export.add_argument("--labs", required=True, help="the labs handed out, e.g. 03,07")
    export.add_argument(
        "--with-reference",
        metavar="LABS",
        default="",
        help="earlier labs that keep kafka-ref's code: 01,02 or 'earlier'",
    )
    export.add_argument(
        "--gradescope",
        action="store_true",
        help="also write Gradescope's autograder bundle for each lab",
    )


def solution_path(path: str) -> str:
    from kafka_ref.cli import UsageError

    if not os.path.isfile(path):
        raise UsageError(f"--solution {path}: no such file")
    return str(pathlib.Path(path).resolve())


def check(lab: Lab, args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError
    from kafka_ref.tools.lab_grading import grade
    from kafka_ref.tools.lab_report import render

    fmt = "json" if args.json else args.format
    if args.reference and no_reference(lab):
        raise UsageError(f"this edition has no reference for lab {lab.number}")
    solutions = None if args.reference else [solution_path(p) for p in args.solution or []]
    if solutions == []:
        solutions = [str(lab.skeleton)]
    if fmt == "gradescope" and len(solutions or [None]) != 1:
        raise UsageError("--format gradescope grades one solution")
    if not args.timeout > 0:
        raise UsageError(f"--timeout {args.timeout:g}: a number of seconds above 0")
    started = time.monotonic()
    gradings = grade(lab, solutions, first_failure=args.first_failure, timeout=args.timeout)
    try:
        report = render(gradings, fmt, time.monotonic() - started)
    except ManifestError as error:  # the marks of a gradescope or junit report
        raise UsageError(str(error)) from error
    if args.output:
        pathlib.Path(args.output).write_text(report)
    else:
        sys.stdout.write(report)
    return 0 if all(g.passed for g in gradings) else 1


def no_reference(lab: Lab) -> bool:
    """In a student edition, a lab whose seams have lost their reference."""
    stripped = edition_stripped()
    return any(seam.key in stripped for seam in lab.seams)


def analyse(lab: Lab, args: argparse.Namespace) -> int:
    out = args.out or os.path.join(tempfile.gettempdir(), f"kafka-ref-{lab.path.name}")
    cmd = [sys.executable, str(lab.path / "analysis.py"), "--out", out]
    if args.master:
        cmd += ["--master", args.master]
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if not args.reference:
        env[ENV] = solution_path(args.solution) if args.solution else str(lab.skeleton)
    code = subprocess.run(cmd, env=env, cwd=lab.root).returncode
    if code == 0:
        print(f"the plot and the table are in {out}")
    return code


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        for number, lab in labs().items():
            print(f"{number}  {lab.title}")
        return 0
    if args.action == "export":
        from kafka_ref.tools.lab_export import export_command

        return export_command(args)
    lab = find_lab(args.lab)
    return check(lab, args) if args.action == "check" else analyse(lab, args)
