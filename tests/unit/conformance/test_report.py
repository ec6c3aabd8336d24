"""The report folds test outcomes into one row per rule; capabilities decide skips."""

from __future__ import annotations

import json
import pathlib

import pytest

from kafka_ref.conformance import capabilities as caps
from kafka_ref.conformance import matrix, report
from kafka_ref.conformance.plugin import ConformanceTarget, holds_to_divergent_rules
from kafka_ref.conformance.targets import Target, TargetError, parse, parse_label

SPEC = """# Demo
### DEMO-1 First rule
Text. Observable: yes
### DEMO-2 Second rule
Observable: no
## A plain section
### DEMO-3 Third rule
Observable: yes
### DEMO-4 Fourth rule
Observable: yes

Kafka: diverges — Kafka does otherwise,
for a reason that wraps.

More text.
"""


@pytest.fixture
def rules(tmp_path):
    (tmp_path / "demo.md").write_text(SPEC)
    return report.read_rules(tmp_path)


@pytest.mark.spec("CONF-2")
def test_rules_are_read_with_their_observable_flag(rules):
    assert [(r.id, r.title, r.observable) for r in rules.values()] == [
        ("DEMO-1", "First rule", True),
        ("DEMO-2", "Second rule", False),
        ("DEMO-3", "Third rule", True),
        ("DEMO-4", "Fourth rule", True),
    ]


@pytest.mark.spec("CONF-2")
def test_one_row_per_rule_folding_every_citing_test(rules, tmp_path):
    results = {"a": ("pass", ""), "b": ("fail", "boom"), "c": ("skipped", "target lacks groups")}
    cites = {"a": ["DEMO-1", "DEMO-3"], "b": ["DEMO-1"], "c": ["DEMO-4"]}
    rows = {r.id: r for r in report.build_rows(rules, results, cites)}
    assert (rows["DEMO-1"].status, rows["DEMO-1"].reasons, rows["DEMO-1"].tests) == (
        "fail",
        ["boom"],
        ["a", "b"],
    )
    assert rows["DEMO-2"].status == "not covered" and rows["DEMO-2"].observable == "no"
    assert rows["DEMO-3"].status == "pass"
    assert (rows["DEMO-4"].status, rows["DEMO-4"].reasons) == ("skipped", ["target lacks groups"])
    paths = report.write(tmp_path / "out", "demo", {"target": "x"}, list(rows.values()))
    data = json.loads(paths[0].read_text())
    assert [r["id"] for r in data["rules"]] == ["DEMO-1", "DEMO-2", "DEMO-3", "DEMO-4"]
    assert data["summary"]["fail"] == 1 and "**DEMO-1**" in paths[1].read_text()


@pytest.mark.spec("CONF-6")
def test_a_divergent_rule_is_read_and_reported_diverges_only_off_kafka_ref(rules, tmp_path):
    assert rules["DEMO-4"].divergence == "Kafka does otherwise, for a reason that wraps."
    assert [r.divergence for r in rules.values()][:3] == [None, None, None]
    results = {
        "a": ("diverges", "Kafka: diverges — DEMO-4: Kafka does otherwise"),
        "b": ("pass", ""),
    }
    rows = {r.id: r for r in report.build_rows(rules, results, {"a": ["DEMO-4"], "b": ["DEMO-1"]})}
    assert (rows["DEMO-4"].status, rows["DEMO-4"].divergence) == (
        "diverges",
        "Kafka does otherwise, for a reason that wraps.",
    )
    assert report.fold([("diverges", "why"), ("fail", "boom")]) == ("fail", ["boom"])
    assert report.fold([("diverges", "why"), ("pass", "")]) == ("diverges", ["why"])
    paths = report.write(tmp_path / "out", "demo", {"target": "x"}, list(rows.values()))
    assert "**DEMO-4** Fourth rule: Kafka does otherwise" in paths[1].read_text()
    json_row = json.loads(paths[0].read_text())["rules"][3]
    assert matrix.cell(json_row, "demo", ("", {})) == (
        "diverges (Kafka does otherwise, for a reason that wraps.)"
    )
    assert holds_to_divergent_rules("kafka_ref")
    assert holds_to_divergent_rules("kafka_ref:mutant=dedup-window-1")
    for other in ("apache_kafka", "tansu", "bootstrap=127.0.0.1:9092"):
        assert not holds_to_divergent_rules(other)


@pytest.mark.spec("CONF-2")
def test_an_expected_failure_is_reported_as_xfail():
    assert report.fold([("xfail", "a known bug"), ("pass", "")]) == ("xfail", ["a known bug"])
    assert report.fold([]) == ("not covered", [])


def capabilities(api_keys, declared=()):
    return caps.from_probe({k: (0, 5) for k in api_keys}, 1, set(declared))


@pytest.mark.spec("CONF-1")
def test_a_missing_capability_skips_with_its_reason():
    tgt = Target("x", "x", "127.0.0.1", 1, capabilities=capabilities([22, 19]))
    conformance = ConformanceTarget(tgt)
    conformance.require("idempotence", "create-topics")  # present: no skip
    with pytest.raises(pytest.skip.Exception, match="target lacks groups: the classic"):
        conformance.require("groups")


@pytest.mark.spec("CONF-1")
def test_capabilities_come_from_the_probe_and_declarations_only_add_what_no_api_shows():
    found = capabilities([8, 9, 10, 11, 12, 13, 14], declared={"restart", "groups"})
    assert found.has("groups") and found.has("restart")
    without = capabilities([8, 9], declared={"groups", "transactions"})
    assert not without.has("groups") and not without.has("transactions")
    assert caps.parse_adjustments("+compaction,-groups, restart") == (
        {"compaction", "restart"},
        {"groups"},
    )
    with pytest.raises(ValueError):
        caps.parse_adjustments("+telepathy")


def test_target_specs_parse_and_refuse_nonsense():
    tgt = parse("bootstrap=10.0.0.1:9092")
    assert (tgt.host, tgt.port, tgt.label) == ("10.0.0.1", 9092, "bootstrap-10.0.0.1-9092")
    assert parse_label("kafka_ref:mutant=dedup-window-1") == "kafka_ref-mutant-dedup-window-1"
    for bad in ("bootstrap=nohost", "kafka_ref:mutant=nope", "redpanda"):
        with pytest.raises(TargetError):
            parse(bad)


def test_the_repository_spec_has_conformance_rules():
    root = pathlib.Path(__file__).resolve().parents[3]
    rules = report.read_rules(root / "spec")
    assert rules["CONF-1"].observable is False and rules["LOG-3"].observable is True
