"""A grading, written for a student, a script, Gradescope or a JUnit reader.

`kafka-ref lab check NN --format F` writes each solution's grading (lab_grading.py) as:

* `text` (the default): one line per grader test, PASS or FAIL and the rules it checks,
  the reason under a failure, then the rules that hold and those that fail;
* `json`: one JSON object per test (`test`, `rules`, `passed`, `outcome`, `reason`,
  `solution`), or one naming why a solution was refused (`refused`) or why the grader ran
  no test (`problem`);
* `gradescope`: Gradescope's `results.json` (its autograder specification): one test per
  spec rule, worth the points lab.toml gives it, earned when every grader test citing the
  rule passes, shown as lab.toml's `[visibility]` says; its output lists the grader's tests
  and the reasons of their failures. The document follows gradescope.schema.json, a JSON
  Schema written from that specification;
* `junit`: JUnit XML, one test suite per solution and one test case per rule, for any
  grader that reads JUnit reports.

Rules: LAB-2, LAB-8 (spec/labs.md).
"""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

from kafka_ref.tools.lab_course import rule_titles
from kafka_ref.tools.lab_grading import NOT_RUN, Grading

FORMATS = ("text", "json", "gradescope", "junit")
SCHEMA = pathlib.Path(__file__).with_name("gradescope.schema.json")


def render(gradings: list[Grading], fmt: str, execution_time: float = 0.0) -> str:
    if fmt == "text":
        return "\n\n".join(text(g) for g in gradings) + "\n"
    if fmt == "json":
        return "".join(json.dumps(entry) + "\n" for g in gradings for entry in json_entries(g))
    if fmt == "gradescope":
        assert len(gradings) == 1, "Gradescope grades one submission"
        return json.dumps(gradescope(gradings[0], execution_time), indent=2) + "\n"
    assert fmt == "junit", fmt
    return junit(gradings)


def who(grading: Grading) -> str:
    return "the reference" if grading.solution is None else grading.solution


def text(grading: Grading) -> str:
    lines = [grading.lab.title, f"solution: {who(grading)}", ""]
    if grading.refused:
        lines.append("REFUSED: the solution reaches kafka-ref's own code of this lab; not graded:")
        lines += [f"      {why}" for why in grading.refused]
    elif not grading.results:
        lines.append(f"the grader of {grading.lab.path.name} ran no test:\n{grading.problem}")
    for r in grading.results:
        verdict = {"passed": "PASS", "failed": "FAIL", NOT_RUN: "----"}[r.outcome]
        lines.append(f"{verdict}  {','.join(r.rules):<22} {r.test}")
        if r.outcome == "failed":
            lines.append(f"      {r.reason}")
    if grading.refused or not grading.results:
        failing = ", ".join(sorted(grading.failing_rules()))
        return "\n".join([*lines, f"\nnot graded; failing: {failing}"])
    passed = sum(r.passed for r in grading.results)
    not_run = sum(r.outcome == NOT_RUN for r in grading.results)
    why = f"{grading.timed_out} ran out of time" if grading.timed_out else "the first failure"
    stopped = f" ({not_run} not run: stopped at {why})" if not_run else ""
    lines.append(
        f"\n{passed} of {len(grading.results)} tests pass{stopped}; rules that hold: "
        f"{', '.join(grading.holding_rules()) or 'none'}; failing: "
        f"{', '.join(sorted(grading.failing_rules())) or 'none'}"
    )
    return "\n".join(lines)


def json_entries(grading: Grading) -> list[dict]:
    if grading.refused:
        return [{"solution": grading.solution, "refused": grading.refused}]
    if not grading.results:
        return [{"solution": grading.solution, "problem": grading.problem}]
    return [{**r.as_json(), "solution": grading.solution} for r in grading.results]


def rule_outputs(grading: Grading) -> dict[str, tuple[bool, str]]:
    """Each rule the lab marks or its grader checks: does it hold, and the words why."""
    manifest = grading.lab.manifest
    rules = list(dict.fromkeys([*manifest.rules, *grading.rules()]))
    outputs = {}
    for rule in rules:
        if grading.refused:
            outputs[rule] = (False, "Not graded: the solution was refused.")
            continue
        tests = [r for r in grading.results if rule in r.rules]
        if not tests:
            outputs[rule] = (False, "No grader test ran for this rule.")
            continue
        lines = []
        for r in tests:
            verdict = {"passed": "PASS", "failed": "FAIL", NOT_RUN: "not run"}[r.outcome]
            lines.append(f"{verdict}  {r.test}" + (f"\n      {r.reason}" if r.reason else ""))
        holds = all(r.passed for r in tests)
        outputs[rule] = (holds, "\n".join(lines))
    return outputs


def gradescope(grading: Grading, execution_time: float = 0.0) -> dict:
    """Gradescope's results.json for one submission."""
    lab, manifest, titles = grading.lab, grading.lab.manifest, rule_titles(grading.lab.root)
    tests = []
    for i, (rule, (holds, output)) in enumerate(rule_outputs(grading).items(), 1):
        points = manifest.rules.get(rule, 0)
        note = "" if rule in manifest.rules else "\n(this rule is not in lab.toml: no marks)"
        tests.append(
            {
                "name": f"{rule} {titles.get(rule, '')}".strip(),
                "number": f"{int(lab.number)}.{i}",
                "score": points if holds else 0,
                "max_score": points,
                "status": "passed" if holds else "failed",
                "output": output + note,
                "visibility": manifest.visibility.get(rule, "visible"),
                "tags": [rule, f"lab {lab.number}"],
            }
        )
    holding = [t["name"].split()[0] for t in tests if t["status"] == "passed"]
    summary = [f"{lab.title}: {len(holding)} of {len(tests)} rules hold."]
    if grading.refused:
        summary.append("The solution was refused and not graded:")
        summary += [f"  {why}" for why in grading.refused]
    elif not grading.results:
        summary.append(f"The grader ran no test:\n{grading.problem[-3000:]}")
    summary.append(
        f"The written answers ({manifest.answer_points} marks) are marked by hand; this "
        f"score covers the {manifest.code_points} marks of the rules."
    )
    return {
        "score": sum(t["score"] for t in tests),
        "execution_time": round(execution_time),
        "output": "\n".join(summary),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def junit(gradings: list[Grading]) -> str:
    """JUnit XML: a test suite per solution, a test case per rule."""
    suites = ET.Element("testsuites", name="kafka-ref labs")
    for grading in gradings:
        outputs = rule_outputs(grading)
        failures = sum(not holds for holds, _ in outputs.values())
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"lab{grading.lab.number}",
            tests=str(len(outputs)),
            failures=str(failures),
            errors="0",
            skipped="0",
        )
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="solution", value=who(grading))
        for why in grading.refused:
            ET.SubElement(properties, "property", name="refused", value=why)
        for rule, (holds, output) in outputs.items():
            case = ET.SubElement(suite, "testcase", classname=f"lab{grading.lab.number}")
            case.set("name", rule)
            points = ET.SubElement(ET.SubElement(case, "properties"), "property", name="points")
            points.set("value", str(grading.lab.manifest.rules.get(rule, 0)))
            if not holds:
                failure = ET.SubElement(case, "failure", type="rule", message=f"{rule} fails")
                failure.text = output
            ET.SubElement(case, "system-out").text = output
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
