"""The conformance matrix: every broker's report side by side, one row per rule.

A report (report.py) answers "how does this broker do?"; the matrix answers "where do the
brokers differ?". It is generated from the `<label>.json` reports of one directory, never
written by hand, so it cannot disagree with them (CONF-5):

    rule (linked to its spec heading) | title | kafka_ref | tansu | ...
    LOG-3                             | ...   | pass      | FAIL  (a note on why)

* one column per report, the reference broker (`kafka_ref`) first, then by label;
* rows grouped by spec file, in the reports' order; a rule that no report covers is not a
  row but is named under its group, so every rule of every report appears once;
* a rule missing from a report (made before the rule was written) shows "-" there;
* a failure is linked to the broker's hand-written `<label>.notes.md` explanation when the
  notes name the rule (bullets `* **LOG-8, BROKER-14** (what): why`, ranges such as
  `IDEM-1..8` included).

`write_report` writes a report and regenerates the matrix of its directory, so
`make conformance` and `make conformance-tansu` keep docs/conformance/matrix.md current.
By hand: `python -m kafka_ref.conformance.matrix [DIR]` (default docs/conformance).
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
import unicodedata
from collections import Counter

from kafka_ref.conformance import report
from kafka_ref.conformance.report import STATUS_ORDER, Rule, _cell, read_rules

MATRIX = "matrix.md"
REFERENCE = "kafka_ref"  # the broker the others are read against: its column comes first
ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS_REPORTS = ROOT / "docs" / "conformance"  # the published reports
NOTE_ITEM = re.compile(r"^\* \*\*([^*]+)\*\*\s*(.*)$")
NOTE_IDS = re.compile(r"([A-Z][A-Z0-9]*)-(\d+)(?:\.\.(?:[A-Z][A-Z0-9]*-)?(\d+))?")
REASON_MAX, NOTE_MAX = 60, 110


def slugify(text: str) -> str:
    """The id Python-Markdown's toc gives a heading (its default `slugify`, separator -).

    Inline HTML such as `<id>` in `/brokers/ids/<id>` is dropped first, as the toc does."""
    text = re.sub(r"<[^>]*>", "", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def load_reports(directory: pathlib.Path) -> dict[str, dict]:
    """label -> report for every `<label>.json` report in `directory`, reference first."""
    reports = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and isinstance(data.get("rules"), list):
            reports[path.stem] = data
    return dict(sorted(reports.items(), key=lambda item: (item[0] != REFERENCE, item[0])))


def read_notes(path: pathlib.Path) -> tuple[str, dict[str, str]]:
    """(anchor of the notes' first heading, rule id -> short note) from a `.notes.md` file."""
    if not path.exists():
        return "", {}
    anchor, notes, item = "", {}, None
    for line in [*path.read_text().splitlines(), ""]:
        if not anchor and line.startswith("#"):
            anchor = slugify(line.lstrip("#"))
        match = NOTE_ITEM.match(line)
        if match or not line.startswith("  "):  # a new bullet, or the end of one
            if item is not None:
                ids, text = item
                for rule in expand(ids):
                    notes.setdefault(rule, shorten(text, NOTE_MAX))
            item = [match[1], match[2]] if match else None
        elif item is not None:
            item[1] += " " + line.strip()
    return anchor, notes


def expand(ids: str) -> list[str]:
    """`IDEM-1..8, IDEM-15` -> IDEM-1 .. IDEM-8, IDEM-15."""
    rules = []
    for prefix, first, last in NOTE_IDS.findall(ids):
        rules += [f"{prefix}-{n}" for n in range(int(first), int(last or first) + 1)]
    return rules


def shorten(text: str, limit: int) -> str:
    """The text's first sentence, cut at a word before `limit` characters."""
    text = re.sub(r"\s+", " ", text).strip().lstrip(":").strip()
    text = re.split(r"(?<=\.)\s", text, maxsplit=1)[0]
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0]
        if text.count("`") % 2:  # never cut a code span in two
            text = text[: text.rindex("`")].rstrip()
        text = text.rstrip(",;:(") + "..."
    return text


def spec_titles(spec_dir: pathlib.Path) -> dict[str, str]:
    """Spec file name -> its first heading ("# The log"), to title the groups."""
    titles = {}
    for path in sorted(spec_dir.glob("*.md")):
        first = next((ln for ln in path.read_text().splitlines() if ln.startswith("# ")), "")
        titles[path.name] = first[2:].strip()
    return titles


def cell(row: dict | None, label: str, notes: tuple[str, dict[str, str]]) -> str:
    """One broker's status of one rule, as the matrix shows it."""
    if row is None:
        return "-"
    status, reasons = row["status"], row.get("reasons") or []
    if status == "fail":
        anchor, by_rule = notes
        note = by_rule.get(row["id"])
        if note is None:
            return "**FAIL**"
        target = f"{label}.md#{anchor}" if anchor else f"{label}.md"
        return f"**FAIL**: {_cell(note)} ([notes]({target}))"
    if status == "diverges":  # why: the spec's `Kafka: diverges` line (CONF-6)
        return f"diverges ({_cell(shorten(row.get('divergence') or '', REASON_MAX))})"
    if status in ("skipped", "xfail") and reasons:
        reason = reasons[0]
        if reason.startswith("target lacks"):  # "target lacks NAME: what NAME means" (CONF-1)
            reason = reason.split(":", 1)[0]
        return f"{status} ({_cell(shorten(reason, REASON_MAX))})"
    return status


def render(
    reports: dict[str, dict],
    notes: dict[str, tuple[str, dict[str, str]]] | None = None,
    titles: dict[str, str] | None = None,
    spec: dict[str, Rule] | None = None,
) -> str:
    """The matrix page for `reports` (label -> report), with each label's notes.

    `titles` names the groups (spec file -> its heading); `spec` (rule id -> Rule) gives
    each rule's current title, which its spec anchor is made of: a report keeps the title
    the rule had when it ran. A rule the spec no longer has links to its file.
    """
    notes, titles = notes or {}, titles or {}
    groups: dict[str, dict[str, dict]] = {}  # spec file -> rule id -> its first row seen
    for data in reports.values():
        for row in data["rules"]:
            groups.setdefault(row["file"], {}).setdefault(row["id"], row)
    lines = [
        "# Conformance matrix",
        "",
        "Every rule of the specification against every broker report in this directory, "
        "generated by `kafka_ref/conformance/matrix.py` from "
        + ", ".join(f"[`{label}.json`]({label}.json)" for label in reports)
        + ". Do not edit: `make conformance` and `make conformance-tansu` regenerate it. "
        "A failure links to what it means where the report's notes say.",
        "",
        *summary_table(reports),
        "",
        "A `-` marks a rule the report does not have: it was written after the run.",
    ]
    for spec_file, rules in groups.items():
        lines += ["", f"## {titles.get(spec_file) or spec_file}", ""]
        lines += [f"Rules of [spec/{spec_file}](../spec/{spec_file})."]
        lines += group_table(spec_file, rules, reports, notes, spec or {})
    return "\n".join(lines) + "\n"


def summary_table(reports: dict[str, dict]) -> list[str]:
    """One line per broker: how many of its rules have each status."""
    lines = [
        "| broker | target | " + " | ".join(STATUS_ORDER) + " |",
        "|---|---|" + "---|" * len(STATUS_ORDER),
    ]
    for label, data in reports.items():
        counts = Counter(row["status"] for row in data["rules"])
        numbers = " | ".join(str(counts[status]) for status in STATUS_ORDER)
        lines.append(f"| [{label}]({label}.md) | `{data.get('target', label)}` | {numbers} |")
    return lines


def group_table(
    spec_file: str,
    rules: dict[str, dict],
    reports: dict[str, dict],
    notes: dict[str, tuple[str, dict[str, str]]],
    spec: dict[str, Rule],
) -> list[str]:
    """The rows of one spec file's rules that some report covers; the others, named."""
    by_label = {label: {r["id"]: r for r in data["rules"]} for label, data in reports.items()}

    def covered(rule_id: str) -> bool:
        return any(
            rows.get(rule_id, {}).get("status", "not covered") != "not covered"
            for rows in by_label.values()
        )

    lines = []
    shown = [rule_id for rule_id in rules if covered(rule_id)]
    if shown:
        lines += [
            "",
            "| rule | title | " + " | ".join(reports) + " |",
            "|---|---|" + "---|" * len(reports),
        ]
    for rule_id in shown:
        rule = spec.get(rule_id)
        title = rule.title if rule else rules[rule_id]["title"]
        link = f"../spec/{spec_file}"
        if rule and rule.file == spec_file:
            link += "#" + slugify(f"{rule_id} {title}")
        cells = [
            cell(rows.get(rule_id), label, notes.get(label, ("", {})))
            for label, rows in by_label.items()
        ]
        lines.append(f"| [{rule_id}]({link}) | {_cell(title)} | {' | '.join(cells)} |")
    left = [rule_id for rule_id in rules if rule_id not in shown]
    if left:
        lines += ["", "No conformance test covers " + ", ".join(left) + "."]
    return lines


def write_matrix(directory: pathlib.Path, spec_dir: pathlib.Path = ROOT / "spec") -> pathlib.Path:
    """Regenerate `<directory>/matrix.md` from the reports there; returns its path."""
    reports = load_reports(directory)
    notes = {label: read_notes(directory / f"{label}.notes.md") for label in reports}
    path = directory / MATRIX
    path.write_text(render(reports, notes, spec_titles(spec_dir), read_rules(spec_dir)))
    return path


def write_report(
    out_dir: pathlib.Path, label: str, meta: dict, rows: list[report.Row]
) -> list[pathlib.Path]:
    """Write `<label>.json` and `.md` (report.write), then every report present side by
    side in the matrix of that directory (CONF-5). Returns the report's two paths."""
    paths = report.write(out_dir, label, meta, rows)
    write_matrix(out_dir)
    return paths


if __name__ == "__main__":
    print(write_matrix(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DOCS_REPORTS))
