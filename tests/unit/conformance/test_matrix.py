"""The matrix puts the per-target reports side by side, and is generated from them (CONF-5)."""

from __future__ import annotations

import json
import pathlib
import re

import markdown
import pytest

from kafka_ref.conformance import matrix, report

SPEC = """# Demo rules
### DEMO-1 First rule
Observable: yes
### DEMO-2 Second rule
Observable: yes
### DEMO-3 Third rule
Observable: yes
### DEMO-4 Fourth rule
Observable: no
### DEMO-5 Fifth rule, `added` later
Observable: yes
"""

NOTES = """## What the failures mean

* **DEMO-2** (bad answer): the broker answers 0 where the rule says 1. The rest of the
  explanation goes on.
* **DEMO-3..4, DEMO-9**: a note on a range.
"""


def row(rule_id, status, reasons=(), title=None):
    number = int(rule_id.split("-")[1])
    titles = {1: "First rule", 2: "Second rule", 3: "Third rule", 4: "Fourth rule"}
    return {
        "id": rule_id,
        "title": title or titles.get(number, "Fifth rule, `added` later"),
        "observable": "yes",
        "file": "demo.md",
        "status": status,
        "reasons": list(reasons),
        "tests": [],
    }


def write_report(directory: pathlib.Path, label: str, rows: list[dict]) -> None:
    data = {"target": label, "capabilities": [], "summary": {}, "rules": rows}
    (directory / f"{label}.json").write_text(json.dumps(data))


@pytest.fixture
def reports(tmp_path):
    """A hand-built pair: the reference passes; the other fails, skips, and is older."""
    spec = tmp_path / "spec"
    spec.mkdir()
    (spec / "demo.md").write_text(SPEC)
    out = tmp_path / "reports"
    out.mkdir()
    write_report(
        out,
        "other",
        [
            row("DEMO-1", "pass"),
            row("DEMO-2", "fail", ["AssertionError: assert 0 == 1"]),
            row("DEMO-3", "skipped", ["target lacks restart: the suite can stop and restart it"]),
            row("DEMO-4", "not covered"),
        ],
    )
    write_report(
        out,
        "kafka_ref",
        [
            row("DEMO-1", "pass"),
            row("DEMO-2", "pass"),
            row("DEMO-3", "fail", ["AssertionError"]),
            row("DEMO-4", "not covered"),
            row("DEMO-5", "xfail", ["waits for its feature"]),
        ],
    )
    (out / "other.notes.md").write_text(NOTES)
    (out / "unrelated.json").write_text('["not a report"]')
    return out, spec


def table_rows(text: str) -> dict[str, list[str]]:
    """rule id -> the cells of its row (title, then one per report)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| [DEMO-"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].split("]")[0][1:]] = cells[1:]
    return rows


@pytest.mark.spec("CONF-5")
def test_the_matrix_has_a_column_per_report_and_a_row_per_covered_rule(reports):
    out, spec = reports
    text = matrix.write_matrix(out, spec).read_text()
    assert "| rule | title | kafka_ref | other |" in text, "the reference broker comes first"
    rows = table_rows(text)
    assert list(rows) == ["DEMO-1", "DEMO-2", "DEMO-3", "DEMO-5"], "DEMO-4 is covered by none"
    assert rows["DEMO-1"] == ["First rule", "pass", "pass"]
    assert rows["DEMO-2"][1] == "pass"
    assert rows["DEMO-2"][2] == (
        "**FAIL**: (bad answer): the broker answers 0 where the rule says 1. "
        "([notes](other.md#what-the-failures-mean))"
    )
    assert rows["DEMO-3"] == ["Third rule", "**FAIL**", "skipped (target lacks restart)"]
    assert rows["DEMO-5"] == ["Fifth rule, `added` later", "xfail (waits for its feature)", "-"]
    assert "No conformance test covers DEMO-4." in text
    assert "## Demo rules" in text


@pytest.mark.spec("CONF-5")
def test_the_summary_counts_each_report_and_rules_link_to_their_spec_heading(reports):
    out, spec = reports
    text = matrix.write_matrix(out, spec).read_text()
    # fail, xfail, diverges, pass, skipped, not covered
    assert "| [kafka_ref](kafka_ref.md) | `kafka_ref` | 1 | 1 | 0 | 2 | 0 | 1 |" in text
    assert "| [other](other.md) | `other` | 1 | 0 | 0 | 1 | 1 | 1 |" in text
    assert "[DEMO-5](../spec/demo.md#demo-5-fifth-rule-added-later)" in text


@pytest.mark.spec("CONF-5")
def test_a_rule_the_spec_no_longer_has_links_to_its_file_and_keeps_its_old_title(reports):
    out, spec = reports
    (spec / "demo.md").write_text(SPEC.replace("### DEMO-1 First rule", "### DEMO-1 Renamed"))
    (spec / "demo.md").write_text((spec / "demo.md").read_text().replace("### DEMO-2", "## x"))
    rows = table_rows(matrix.write_matrix(out, spec).read_text())
    assert rows["DEMO-1"][0] == "Renamed", "the spec's current title, which the anchor uses"
    text = (out / "matrix.md").read_text()
    assert "[DEMO-1](../spec/demo.md#demo-1-renamed)" in text
    assert "[DEMO-2](../spec/demo.md) | Second rule |" in text


@pytest.mark.spec("CONF-5")
def test_notes_name_rules_singly_and_in_ranges_with_their_first_sentence(tmp_path):
    (tmp_path / "x.notes.md").write_text(NOTES)
    anchor, notes = matrix.read_notes(tmp_path / "x.notes.md")
    assert anchor == "what-the-failures-mean"
    assert notes == {
        "DEMO-2": "(bad answer): the broker answers 0 where the rule says 1.",
        "DEMO-3": "a note on a range.",
        "DEMO-4": "a note on a range.",
        "DEMO-9": "a note on a range.",
    }
    assert matrix.read_notes(tmp_path / "missing.notes.md") == ("", {})
    long = "a `code span` then " + "many words " * 20
    assert len(matrix.shorten(long, 40)) <= 43 and matrix.shorten(long, 40).endswith("...")
    assert matrix.shorten("x " * 10 + "`cut here` y", 25).count("`") % 2 == 0


@pytest.mark.spec("CONF-5")
def test_writing_a_report_regenerates_the_matrix_of_its_directory(reports):
    out, _ = reports
    rows = [report.Row("DEMO-1", "First rule", "yes", "demo.md", "fail", ["boom"], ["t"])]
    matrix.write_report(out, "third", {"target": "third"}, rows)
    text = (out / "matrix.md").read_text()
    assert "| rule | title | kafka_ref | other | third |" in text
    assert table_rows(text)["DEMO-1"][-1] == "**FAIL**"


@pytest.mark.spec("CONF-5")
def test_anchors_are_the_ones_the_site_gives_every_spec_heading():
    rules = report.read_rules(matrix.ROOT / "spec")
    assert rules
    for rule in rules.values():
        # the id Python-Markdown's toc gives the heading as the spec page writes it
        html = markdown.markdown(f"### {rule.id} {rule.title}", extensions=["toc"])
        site_id = re.search(r'id="([^"]*)"', html).group(1)
        assert matrix.slugify(f"{rule.id} {rule.title}") == site_id, rule.id
