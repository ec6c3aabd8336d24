"""The per-rule report: one row per spec rule, for one target, as JSON and Markdown.

A test result alone says "test_fetch_inside_a_batch failed"; a broker author wants "LOG-3 (a
read returns the batch that contains the requested offset) fails". So the report is keyed by
*rule*, not by test (CONF-2). Every rule of `spec/*.md` gets a row:

    id, title, observable (yes/no), status, reasons, tests

with status, folding the outcomes of every conformance test that cites the rule:

* `fail`     - at least one of its tests failed (the failure text is kept);
* `xfail`    - its tests fail as expected: a known bug, named in the reason;
* `diverges` - a rule on which kafka-ref knowingly differs from Apache Kafka (its spec text
  has a line `Kafka: diverges — why`), and the broker behaves otherwise: only kafka-ref's
  own targets are held to such a rule (CONF-6);
* `pass`     - none failed and at least one passed;
* `skipped`  - every test was skipped; the reasons say why (usually a missing capability);
* `not covered` - no conformance test cites it. Internal rules ("Observable: no") are
  expected here: only kafka-ref's own unit tests can see them.

The rule catalogue is read from the headings `### PREFIX-n Title` and each section's
`Observable: yes|no` line, the same format tests/test_spec_coverage.py checks, and its
`Kafka: diverges — why` line, if any.
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import asdict, dataclass, field

HEADING = re.compile(r"^#{2,4}\s+([A-Z][A-Z0-9]*-\d+)\b\s*(.*)$")
OBSERVABLE = re.compile(r"Observable:\s*(yes|no)", re.I)
DIVERGES = re.compile(r"^Kafka:\s*diverges\s*[—-]+\s*(.*)$")
STATUS_ORDER = ("fail", "xfail", "diverges", "pass", "skipped", "not covered")


@dataclass
class Rule:
    id: str
    title: str
    observable: bool | None  # None: the section has no Observable line
    file: str
    divergence: str | None = None  # why Apache Kafka does otherwise (CONF-6)


@dataclass
class Row:
    id: str
    title: str
    observable: str
    file: str
    status: str = "not covered"
    reasons: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    divergence: str | None = None


def read_rules(spec_dir: pathlib.Path) -> dict[str, Rule]:
    """Every rule heading under spec_dir, in file order, with its Observable flag."""
    rules: dict[str, Rule] = {}
    for path in sorted(spec_dir.rglob("*.md")):
        current: Rule | None = None
        diverging = False  # inside a `Kafka: diverges` paragraph, which may wrap
        for line in path.read_text().splitlines():
            match = HEADING.match(line)
            if match:
                current = Rule(match[1], match[2].strip(), None, path.name)
                rules[current.id] = current
                continue
            if line.startswith("#"):
                current = None  # a plain section heading ends the rule
                continue
            if current is None:
                continue
            divergence = DIVERGES.match(line)
            if divergence:
                current.divergence, diverging = divergence[1].strip(), True
            elif diverging and line.strip():
                current.divergence = f"{current.divergence} {line.strip()}"
            else:
                diverging = False
            if current.observable is None:
                flag = OBSERVABLE.search(line)
                if flag:
                    current.observable = flag[1].lower() == "yes"
    return rules


def fold(outcomes: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """(status, reasons) for a rule from its tests' (outcome, reason) pairs."""
    if not outcomes:
        return "not covered", []
    by = {o for o, _ in outcomes}
    for status in ("fail", "xfail", "diverges", "pass"):
        if status in by:
            reasons = [r for o, r in outcomes if o == status and r]
            return status, sorted(set(reasons))
    return "skipped", sorted({r for _, r in outcomes if r})


def build_rows(
    rules: dict[str, Rule], results: dict[str, tuple[str, str]], cites: dict[str, list[str]]
) -> list[Row]:
    """results: test id -> (outcome, reason); cites: test id -> rule ids it cites."""
    per_rule: dict[str, list[tuple[str, str, str]]] = {}
    for test, rule_ids in cites.items():
        outcome, reason = results.get(test, ("skipped", "not run (deselected)"))
        for rule in rule_ids:
            per_rule.setdefault(rule, []).append((test, outcome, reason))
    rows = []
    for rule in rules.values():
        runs = per_rule.get(rule.id, [])
        status, reasons = fold([(o, r) for _, o, r in runs])
        flag = {True: "yes", False: "no", None: "?"}[rule.observable]
        rows.append(
            Row(
                rule.id,
                rule.title,
                flag,
                rule.file,
                status,
                reasons,
                sorted(t for t, _, _ in runs),
                rule.divergence,
            )
        )
    return rows


def summary(rows: list[Row]) -> dict[str, int]:
    counts = {s: 0 for s in STATUS_ORDER}
    for row in rows:
        counts[row.status] += 1
    return counts


def write(out_dir: pathlib.Path, label: str, meta: dict, rows: list[Row]) -> list[pathlib.Path]:
    """build/conformance/<label>.json and .md; returns the two paths. (The suite writes
    reports with matrix.write_report, which regenerates the matrix too.)"""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {**meta, "summary": summary(rows), "rules": [asdict(r) for r in rows]}
    json_path = out_dir / f"{label}.json"
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    md_path = out_dir / f"{label}.md"
    text = markdown(label, meta, rows)
    notes = out_dir / f"{label}.notes.md"  # hand-written: what the failures mean
    if notes.exists():
        text += "\n" + notes.read_text()
    md_path.write_text(text)
    return [json_path, md_path]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(label: str, meta: dict, rows: list[Row]) -> str:
    counts = summary(rows)
    observable = [r for r in rows if r.observable == "yes"]
    lines = [
        f"# Conformance report: {label}",
        "",
        f"Target `{meta.get('target')}`; capabilities: "
        f"{', '.join(meta.get('capabilities', [])) or 'none'}.",
        "",
        "| status | rules | observable rules |",
        "|---|---|---|",
    ]
    for status in STATUS_ORDER:
        n_obs = sum(1 for r in observable if r.status == status)
        lines.append(f"| {status} | {counts[status]} | {n_obs} |")
    failing = [r for r in rows if r.status == "fail"]
    if failing:
        lines += ["", "## Failing rules", ""]
        for row in failing:
            lines.append(f"* **{row.id}** {row.title}: {_cell('; '.join(row.reasons))[:400]}")
    diverging = [r for r in rows if r.status == "diverges"]
    if diverging:
        lines += ["", "## Rules where kafka-ref knowingly differs from Apache Kafka", ""]
        lines += ["The broker does what Kafka does, not what kafka-ref does (CONF-6):", ""]
        for row in diverging:
            lines.append(f"* **{row.id}** {row.title}: {_cell(row.divergence or '')}")
    lines += [
        "",
        "## Every rule",
        "",
        "| rule | title | observable | status | tests |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        status = row.status
        if row.status in ("skipped", "xfail", "diverges") and row.reasons:
            status += f" ({_cell('; '.join(row.reasons))[:120]})"
        tests = "<br>".join(t.split("::", 1)[-1] for t in row.tests)
        lines.append(f"| {row.id} | {_cell(row.title)} | {row.observable} | {status} | {tests} |")
    return "\n".join(lines) + "\n"
