"""`kafka-ref bench transactions`: what transactions cost, measured against idempotence.

A transactional producer does everything an idempotent one does, plus, per transaction,
AddPartitionsToTxn before its first batch to each partition and EndTxn after flushing,
and the coordinator writes a marker into every partition. A read_committed consumer reads
up to the last stable offset and drops aborted records. This bench measures both costs
in one run, with confluent-kafka (librdkafka) as the load client, for each partition count
(`--partitions`, default 1 and 8) and message size (`--sizes`, default 1024 bytes):

* **produce idempotent**: `enable.idempotence=true`, `acks=all`, `linger.ms=5`: the
  baseline;
* **produce txn/100ms** and **produce txn/1000**: the same producer with a
  `transactional.id`, committing every 100 ms, or every 1,000 records;
* **consume read_uncommitted** and **consume read_committed**: reading back, from offset
  0, what the transactional producer wrote (markers included).

Each ratio row divides a figure by its baseline of the same run: transactional msgs/s over
idempotent msgs/s, read_committed msgs/s over read_uncommitted msgs/s; with `--repeat`,
it is the median of the runs' ratios (listed in `runs`). Without
`--bootstrap-server` the bench starts a kafka-ref broker of its own (a temporary data
directory) and, with `--tansu`, the Tansu broker too, and stops them at the end.

Spec rules: TOOLS-24 (spec/tools.md).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator

from kafka_ref.tools import bench_broker as bb
from kafka_ref.tools.bench_broker import BenchError, Case, Settings, Target
from kafka_ref.tools.bench_report import Progress, Tick

MODES = {  # name -> (commit every ms, commit every records); None, None: idempotent
    "produce idempotent": (None, None),
    "produce txn/100ms": (100, None),
    "produce txn/1000": (None, 1000),
}
ISOLATIONS = ("read_uncommitted", "read_committed")


def measure_txn_produce(
    target: Target, topic: str, case: Case, settings: Settings, tick: Tick, mode: str
) -> tuple[dict, int]:
    """Produce throughput of an idempotent or transactional producer (see MODES)."""
    from confluent_kafka import KafkaException, Producer

    every_ms, every_records = MODES[mode]
    transactional = every_ms is not None or every_records is not None
    failed = [0]
    config = {
        "bootstrap.servers": target.bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": bb.THROUGHPUT_LINGER_MS,
        "delivery.report.only.error": True,
        "on_delivery": lambda err, _msg: failed.__setitem__(0, failed[0] + 1),
    }
    if transactional:
        config["transactional.id"] = f"kafka-ref-bench-{uuid.uuid4().hex[:8]}"
    producer = Producer(config)
    payload = os.urandom(case.size)
    sent = transactions = 0
    try:
        if transactional:
            producer.init_transactions(30)
            producer.begin_transaction()
        # warm up outside the clock: connection, metadata, producer id, AddPartitionsToTxn
        producer.produce(topic, payload, partition=0)
        producer.commit_transaction(30) if transactional else producer.flush(30)
        if transactional:
            producer.begin_transaction()
        start = time.perf_counter()
        deadline, next_commit = start + settings.seconds, start + (every_ms or 0) / 1000
        while sent < settings.messages and time.perf_counter() < deadline:
            try:
                producer.produce(topic, payload, partition=sent % case.partitions)
            except BufferError:  # the client's queue is full: let it drain
                producer.poll(0.005)
                continue
            sent += 1
            if sent & 255 == 0:
                producer.poll(0)
                tick(256)
            if (every_records and sent % every_records == 0) or (
                every_ms and sent & 63 == 0 and time.perf_counter() >= next_commit
            ):
                producer.commit_transaction(30)  # flushes, then EndTxn
                producer.begin_transaction()
                transactions += 1
                next_commit = time.perf_counter() + (every_ms or 0) / 1000
        if transactional:
            producer.commit_transaction(30)
            transactions += 1
        left = producer.flush(bb.FLUSH_GRACE_SECONDS)
        elapsed = time.perf_counter() - start
    except KafkaException as err:
        raise BenchError(f"{mode} on {target.bootstrap}: {err}") from None
    tick(sent & 255)
    delivered = max(0, sent - failed[0] - left)
    row = bb.result(
        mode, target, case, messages=delivered, errors=sent - delivered, seconds=elapsed
    )
    return row | {"transactions": transactions}, delivered


def _rate(rows: list[dict], key: tuple) -> float | None:
    """The msgs/s of the row of one (broker, size, partitions, run, what)."""
    fields = ("broker", "msg_size", "partitions", "run", "what")
    found = [r["msgs/s"] for r in rows if tuple(r[f] for f in fields) == key]
    return found[0] if found else None


def ratio_rows(rows: list[dict]) -> list[dict]:
    """Each transactional rate over the idempotent one, read_committed over read_uncommitted,
    per broker, size and partition count. A ratio is taken within each run, whose
    measurements are seconds apart, and the median over runs is reported: on a shared
    machine the load drifts more between runs than within one."""
    pairs = [(mode, "produce idempotent") for mode in MODES if mode != "produce idempotent"]
    pairs.append(("consume read_committed", "consume read_uncommitted"))
    out = []
    for broker, size, partitions in sorted(
        {(r["broker"], r["msg_size"], r["partitions"]) for r in rows}
    ):
        runs = sorted(
            {
                r["run"]
                for r in rows
                if (r["broker"], r["msg_size"], r["partitions"]) == (broker, size, partitions)
            }
        )
        for what, baseline in pairs:
            per_run = []
            for run in runs:
                ours = _rate(rows, (broker, size, partitions, run, what))
                base = _rate(rows, (broker, size, partitions, run, baseline))
                if ours and base:
                    per_run.append(round(ours / base, 2))
            out.append(
                {
                    "what": "ratio",
                    "broker": broker,
                    "msg_size": size,
                    "partitions": partitions,
                    "of": what,
                    "over": baseline,
                    "runs": per_run,
                    "ratio": statistics.median(per_run) if per_run else None,
                }
            )
    return out


def run_txn_cases(
    targets: list[Target], settings: Settings, emit: Callable[[dict], None]
) -> list[dict]:
    """Every mode and isolation level, for each size and partition count, on each target."""
    for target in targets:
        bb.check_reachable(target)
    cases = [Case(size, "all", p) for size in settings.sizes for p in settings.partitions]
    rows: list[dict] = []
    steps = len(cases) * len(targets) * settings.repeat * (len(MODES) + len(ISOLATIONS))
    with Progress(steps) as progress:
        for run in range(1, settings.repeat + 1):
            for case in cases:
                for target in targets if run % 2 else targets[::-1]:
                    for row in _measure(target, case, run, settings, progress):
                        rows.append(row | {"run": run})
                        emit(rows[-1])
    return rows


def _measure(
    target: Target, case: Case, run: int, settings: Settings, progress: Progress
) -> Iterator[dict]:
    name = f"{target.label} {case.size} B p={case.partitions}"
    written = None
    for mode in MODES:
        topic = bb.create_topic(target, case)
        with progress.step(f"{name} {mode}", settings.messages) as tick:
            row, delivered = measure_txn_produce(target, topic, case, settings, tick, mode)
        yield row
        if mode == "produce txn/1000":
            written = (topic, delivered)
        elif not settings.keep_topics:
            bb.delete_topic(target, topic)
    assert written is not None
    topic, delivered = written
    for isolation in ISOLATIONS if run % 2 else ISOLATIONS[::-1]:  # no order favoured
        with progress.step(f"{name} {isolation}", max(1, delivered)) as tick:
            row = bb.measure_consume(target, topic, case, delivered + 1, settings, tick, isolation)
        yield row
    if not settings.keep_topics:
        bb.delete_topic(target, topic)


@contextlib.contextmanager
def local_brokers(with_tansu: bool) -> Iterator[list[Target]]:
    """A kafka-ref broker (and Tansu) of the bench's own, stopped on the way out."""
    from kafka_ref.tools import bench_compare as bc

    base = tempfile.mkdtemp(prefix="kafka-ref-bench-txn-")
    brokers = [bc.kafka_ref_process(os.path.join(base, "data"), f"{base}/kafka-ref.log")]
    if with_tansu:
        brokers.append(bc.tansu_process(bc.tansu_binary(), f"{base}/tansu.log"))
    failed = True
    try:
        with bc.running(brokers):
            yield [Target(b.label, b.bootstrap, b.pid) for b in brokers]
        failed = False
    finally:
        if failed:
            print(f"kafka-ref bench transactions: the brokers' logs are in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


def print_ratios(found: list[dict]) -> None:
    for r in found:
        print(
            f"{r['broker']} {r['msg_size']} B p={r['partitions']}: {r['of']} / {r['over']} "
            f"= {r['ratio']} (runs: {', '.join(map(str, r['runs']))})"
        )
