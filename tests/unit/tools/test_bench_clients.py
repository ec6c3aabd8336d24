"""`bench clients` and `bench latency` at tiny sizes: the shape of their reports, never a speed
(the figures live in docs/benchmarks.md)."""

import json

import pytest

from kafka_ref.cli import main
from kafka_ref.tools.bench_clients import latencies, split

LATENCY_KEYS = {"p50_ms", "p99_ms", "p999_ms", "max_ms"}
E2E_KEYS = {"e2e_p50_ms", "e2e_p99_ms", "e2e_p999_ms"}


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.spec("TOOLS-31", "TOOLS-33")
@pytest.mark.timeout(300)
def test_clients_bench_measures_each_count_and_the_group_on_both_brokers(tmp_path, capsys):
    plot = tmp_path / "clients.png"
    args = [
        "--log-level",
        "ERROR",
        "bench",
        "clients",
        "--connections",
        "3",
        "--members",
        "3",
        "--rate",
        "300",
        "--seconds",
        "1",
        "--per-process",
        "2",
        "--plot",
        str(plot),
        "--json",
    ]
    assert main(args) == 0
    rows = json_lines(capsys.readouterr().out)
    clients = [r for r in rows if r["what"] == "clients"]
    assert sorted(r["broker"] for r in clients) == ["kafka-ref", "tansu"]
    for row in clients:
        shape = (row["connections"], row["producers"], row["consumers"], row["groups"])
        assert shape == (3, 1, 2, 1)
        assert row["processes"] == 2  # 3 clients, at most 2 per worker
        assert row["messages"] == 300 and row["errors"] == 0
        assert row["consumed"] == 300  # every message read back, each with its latency
        assert row.keys() >= LATENCY_KEYS | E2E_KEYS
        assert 0 < row["p50_ms"] <= row["p99_ms"] <= row["p999_ms"] <= row["max_ms"]
        assert 0 < row["e2e_p50_ms"] <= row["e2e_p99_ms"] <= row["e2e_p999_ms"]
        assert row["stable_s"] > 0 and row["client_threads"] > 0 and row["client_rss_MB"] > 0
        assert row["rss_MB"] > 0 and row["broker_cpu_s"] >= 0
    groups = [r for r in rows if r["what"] == "group"]
    assert sorted((r["broker"], r["members"]) for r in groups) == [("kafka-ref", 3), ("tansu", 3)]
    assert all(r["stable_s"] > 0 for r in groups)
    ratios = {(r["of"], r["size"], r["metric"]): r for r in rows if r["what"] == "ratio"}
    assert {("clients", 3, "msgs/s"), ("clients", 3, "p99_ms"), ("group", 3, "stable_s")} <= set(
        ratios
    )
    for r in ratios.values():
        assert r["kafka-ref/tansu"] == pytest.approx(r["kafka-ref"] / r["tansu"], abs=0.01)
    assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.spec("TOOLS-32", "TOOLS-33")
@pytest.mark.timeout(180)
def test_latency_bench_measures_the_peak_then_each_fraction_of_it(tmp_path, capsys):
    plot = tmp_path / "latency.png"
    args = [
        "--log-level",
        "ERROR",
        "bench",
        "latency",
        "--fractions",
        "0.1,0.2",
        "--seconds",
        "1",
        "--no-cluster",
        "--no-tansu",
        "--plot",
        str(plot),
        "--json",
    ]
    assert main(args) == 0
    rows = json_lines(capsys.readouterr().out)
    assert [(r["what"], r["broker"], r["acks"], r["fraction"]) for r in rows] == [
        ("latency", "kafka-ref 1 broker acks=1", "1", f) for f in (None, 0.1, 0.2)
    ]
    peak, *paced = rows
    assert peak["rate"] is None and peak["msgs/s"] > 0
    for row in paced:
        assert row["rate"] == pytest.approx(row["fraction"] * peak["msgs/s"], rel=0.01)
        assert abs(row["messages"] - row["rate"]) <= 1 and row["errors"] == 0  # 1 s
        assert row["consumed"] == row["messages"]
        assert row["client_cpu_s"] > 0
        assert 0 < row["p50_ms"] <= row["p99_ms"] <= row["p999_ms"] <= row["max_ms"]
        assert 0 < row["e2e_p50_ms"] <= row["e2e_p99_ms"] <= row["e2e_p999_ms"]
    assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.spec("TOOLS-31", "TOOLS-32")
def test_bad_sizes_are_one_line_and_exit_code_2(capsys):
    bad = [
        ("clients", "--connections", "1"),
        ("clients", "--connections", "x"),
        ("clients", "--rate", "0"),
        ("latency", "--fractions", "1.5"),
    ]
    for bench, *args in bad:
        assert main(["bench", bench, *args]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_clients_are_dealt_so_every_worker_gets_a_mix():
    assert split(list(range(7)), 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert latencies([]) == {"p50_ms": None, "p99_ms": None, "p999_ms": None, "max_ms": None}
    assert latencies([float(v) for v in range(1, 1001)], "e2e_") == {
        "e2e_p50_ms": 500.0,
        "e2e_p99_ms": 990.0,
        "e2e_p999_ms": 999.0,
    }
