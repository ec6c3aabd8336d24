"""Lab 08 analysis: what compaction saves over time, and how long tombstones stay.

    kafka-ref lab analyse 08 --out /tmp/lab08        # your solution.py
    kafka-ref lab analyse 08 --reference --out /tmp/lab08-reference

A real broker runs its cleaner every 100 ms, which calls your `build_offset_map` and
`should_retain` (KAFKA_REF_SOLUTION). Our producer sends the same keyed update workload to
two topics: `changelog` (cleanup.policy=compact, 16 KB segments, min.cleanable.dirty.ratio
0.3, delete.retention.ms 3000), `changelog-lazy` (the same with min.cleanable.dirty.ratio
0.75) and `updates` (cleanup.policy=delete, nothing expires, one segment), so `updates` is
the log as it would be without compaction. The cleaner's rounds are counted from its log,
with the bytes each freed; `changelog-lazy` is compared by its rounds and its size on disk
(its segment files' sizes at each snapshot). Updates go to random
keys; after two thirds of them a quarter of the keys are deleted (tombstones), and the
updates go on to the other keys; at the end, a few more rounds of updates to the live keys,
spaced by half of delete.retention.ms, keep the cleaner working past the tombstones'
horizon. Between bursts the two topics' partition directories and the cleaner's checkpoint
(`cleaner-offset-checkpoint`: where the dirty part of the log starts) are copied, on the
broker's own thread (no cleaning round is half done), into a snapshot.

PySpark then reads every snapshot's segment files with `kafka_ref_segments` (one row per
record, with its batch) and counts, per snapshot and topic: records, bytes on disk (the
batches' sizes), distinct keys, tombstones, and for the compacted log the records in its
active segment (which the cleaner never touches) and in its dirty part (above the
checkpoint, not cleaned yet). `lab08.png` and `lab08.md` answer the handout's questions,
with when the tombstones were written and the first snapshot without them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import sys
import tempfile
import time

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.producer import Producer
from kafka_ref.log.checkpoints import OffsetCheckpointFile
from kafka_ref.log.cleaner_manager import CLEANER_OFFSET_CHECKPOINT
from kafka_ref.tools.lab_analysis import (
    local_broker,
    markdown_table,
    parse_args,
    print_table,
    spark_for,
)
from kafka_ref.tools.plots import figure

COMPACTED, LAZY, RAW = "changelog", "changelog-lazy", "updates"
DELETE_RETENTION_MS = 3000
COMPACTED_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "16384",
    "min.cleanable.dirty.ratio": "0.3",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
}
# The same, cleaned only once three quarters of it are dirty: what the ratio trades.
LAZY_CONFIGS = COMPACTED_CONFIGS | {"min.cleanable.dirty.ratio": "0.75"}
# One big segment: the uncompacted log costs Spark one task per snapshot.
RAW_CONFIGS = {"cleanup.policy": "delete", "segment.bytes": "16777216", "retention.ms": "-1"}


class CleaningRounds(logging.Handler):
    """The cleaner's rounds, from its log: the bytes each freed, per partition."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.freed: dict[str, list[int]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("%s: cleaned up to"):
            self.freed.setdefault(record.args[0], []).append(record.args[-1])


@contextlib.contextmanager
def cleaning_rounds():
    """Count the cleaner's rounds meanwhile: its logger at INFO, to this handler only, for
    the time being."""
    log, handler = logging.getLogger("kafka_ref.log.cleaner_manager"), CleaningRounds()
    level, propagate = log.level, log.propagate
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(handler)
    try:
        yield handler.freed
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate


def snapshot(broker, data_dir: str, root: str, number: int, started: float) -> int:
    """Copy the partition directories of `changelog` and `updates` and the cleaner's
    checkpoint, between two cleaner rounds; returns the bytes of `changelog-lazy`'s
    segment files then (only its size is compared: Spark need not read it)."""

    def copy() -> int:
        target = os.path.join(root, f"{number:03d}-{time.monotonic() - started:.1f}")
        for topic in (COMPACTED, RAW):
            shutil.copytree(
                os.path.join(data_dir, f"{topic}-0"), os.path.join(target, f"{topic}-0")
            )
        checkpoint = os.path.join(data_dir, CLEANER_OFFSET_CHECKPOINT)
        if os.path.exists(checkpoint):
            shutil.copy(checkpoint, target)
        lazy = os.path.join(data_dir, f"{LAZY}-0")
        return sum(
            os.path.getsize(os.path.join(lazy, f)) for f in os.listdir(lazy) if f.endswith(".log")
        )

    return broker.call(copy)


def first_dirty_offset(snapshot_dir: str) -> int:
    """Where the compacted log's dirty part starts in a snapshot (0: never cleaned)."""
    path = os.path.join(snapshot_dir, CLEANER_OFFSET_CHECKPOINT)
    if not os.path.exists(path):
        return 0
    return OffsetCheckpointFile(path).read().get((COMPACTED, 0), 0)


def workload(
    broker, data_dir: str, root: str, updates: int, keys: int, bursts: int
) -> tuple[float, list[int]]:
    """The updates, the deletes and the snapshots; returns when the tombstones were sent
    (seconds from the start), and the size of `changelog-lazy` at each snapshot."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topics(
            [
                NewTopic(COMPACTED, 1, 1, COMPACTED_CONFIGS),
                NewTopic(LAZY, 1, 1, LAZY_CONFIGS),
                NewTopic(RAW, 1, 1, RAW_CONFIGS),
            ]
        )
    rng = random.Random(8)
    names = [b"key-%04d" % i for i in range(keys)]
    deleted = set(rng.sample(names, keys // 4))
    started, number, lazy_bytes = time.monotonic(), 0, []
    per_burst = max(1, updates // bursts)
    with Producer(broker.bootstrap, linger_ms=5, batch_size=4096) as producer:

        def send(key: bytes, value: bytes | None) -> None:
            for topic in (COMPACTED, LAZY, RAW):
                producer.send(topic, value, key=key)

        for burst in range(bursts):
            live = names if burst < 2 * bursts // 3 else [k for k in names if k not in deleted]
            if burst == 2 * bursts // 3:
                deleted_at = time.monotonic() - started
                for key in sorted(deleted):
                    send(key, None)  # tombstones
            for _ in range(per_burst):
                send(rng.choice(live), os.urandom(50))
            producer.flush()
            time.sleep(0.4)
            lazy_bytes.append(snapshot(broker, data_dir, root, number, started))
            number += 1
        live = [k for k in names if k not in deleted]
        for _ in range(3):  # the end: past the horizon, enough dirty data for a round
            time.sleep(DELETE_RETENTION_MS / 2000)
            for key in live[: len(live) // 2]:
                send(key, os.urandom(50))
            producer.flush()
            time.sleep(0.3)
            lazy_bytes.append(snapshot(broker, data_dir, root, number, started))
            number += 1
    return deleted_at, lazy_bytes


def analyse(spark, root: str) -> list[dict]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frames = []
    for name in sorted(os.listdir(root)):
        number, seconds = name.split("-")
        frame = spark.read.format("kafka_ref_segments").load(os.path.join(root, name))
        frames.append(
            frame.withColumn("snapshot", F.lit(int(number)))
            .withColumn("seconds", F.lit(float(seconds)))
            .withColumn("dirty_from", F.lit(first_dirty_offset(os.path.join(root, name))))
        )
    rows = frames[0]
    for frame in frames[1:]:
        rows = rows.unionByName(frame)
    active = F.max("segment").over(Window.partitionBy("snapshot", "topic"))
    rows = rows.withColumn("active", F.col("segment") == active)
    per_record = rows.groupBy("snapshot", "seconds", "topic").agg(
        F.count("*").alias("records"),
        F.countDistinct("key").alias("keys"),
        F.sum(F.col("value").isNull().cast("int")).alias("tombstones"),
        F.sum(F.col("active").cast("int")).alias("active"),
        F.sum((F.col("offset") >= F.col("dirty_from")).cast("int")).alias("dirty"),
    )
    per_batch = (
        rows.select("snapshot", "topic", "segment", "baseOffset", "batchSize")
        .distinct()
        .groupBy("snapshot", "topic")
        .agg(F.sum("batchSize").alias("bytes"))
    )
    joined = per_record.join(per_batch, ["snapshot", "topic"]).orderBy("snapshot", "topic")
    return [row.asDict() for row in joined.collect()]


def tombstones_line(rows: list[dict], deleted_at: float) -> str:
    """When the tombstones were written, and the first snapshot after that without them."""
    compacted = sorted((r for r in rows if r["topic"] == COMPACTED), key=lambda r: r["seconds"])
    seen = [r for r in compacted if r["tombstones"]]
    gone = [
        r for r in compacted if seen and r["seconds"] > seen[0]["seconds"] and not r["tombstones"]
    ]
    text = (
        f"The tombstones were written at {deleted_at:.1f} s (delete.retention.ms "
        f"{DELETE_RETENTION_MS}: their horizon is {deleted_at + DELETE_RETENTION_MS / 1000:.1f} s"
        " at the earliest, counted from the cleaning round that first kept them); "
    )
    if not gone:
        return text + "they were still in the log at the last snapshot."
    last = max((r for r in seen if r["seconds"] < gone[0]["seconds"]), key=lambda r: r["seconds"])
    return text + (
        f"the last snapshot with them is at {last['seconds']:.1f} s, the first without them at "
        f"{gone[0]['seconds']:.1f} s: {gone[0]['seconds'] - deleted_at:.1f} s after they were "
        "written, at most."
    )


def report(
    out: str, rows: list[dict], deleted_at: float, lazy_bytes: list[int], rounds: dict
) -> None:
    by = {(r["snapshot"], r["topic"]): r for r in rows}
    snapshots = sorted({r["snapshot"] for r in rows})
    seconds = [by[(s, RAW)]["seconds"] for s in snapshots]

    def series(topic, column):
        return [by[(s, topic)][column] if (s, topic) in by else 0 for s in snapshots]

    with figure(os.path.join(out, "lab08.png"), 1, 2, size=(11, 4)) as (_fig, (left, right)):
        left.plot(
            seconds,
            [b / 1024 for b in series(RAW, "bytes")],
            marker=".",
            label="without compaction (updates)",
        )
        left.plot(
            seconds,
            [b / 1024 for b in series(COMPACTED, "bytes")],
            marker=".",
            label="compacted (changelog)",
        )
        left.plot(
            seconds,
            [b / 1024 for b in lazy_bytes],
            marker=".",
            label="compacted, dirty ratio 0.75 (changelog-lazy)",
        )
        left.set(title="Log size on disk", xlabel="seconds", ylabel="KiB")
        left.legend()
        right.plot(seconds, series(COMPACTED, "records"), marker=".", label="records")
        right.plot(seconds, series(COMPACTED, "keys"), marker=".", label="distinct keys")
        right.plot(seconds, series(COMPACTED, "tombstones"), marker=".", label="tombstones")
        right.set(title="The compacted log", xlabel="seconds", ylabel="count")
        right.legend()

    table = []
    for s in snapshots:
        raw, compacted = by.get((s, RAW)), by.get((s, COMPACTED))
        if raw is None or compacted is None:
            continue
        saved = 1 - compacted["bytes"] / raw["bytes"] if raw["bytes"] else 0.0
        table.append(
            [
                s,
                f"{raw['seconds']:.1f}",
                raw["records"],
                compacted["records"],
                compacted["active"],
                compacted["dirty"],
                raw["bytes"],
                compacted["bytes"],
                f"{saved:.0%}",
                compacted["keys"],
                compacted["tombstones"],
            ]
        )
    text = "# Lab 08: compaction over time\n\n" + markdown_table(
        [
            "snapshot",
            "seconds",
            "records (updates)",
            "records (changelog)",
            "in its active segment",
            "in its dirty part",
            "bytes (updates)",
            "bytes (changelog)",
            "space saved",
            "keys (changelog)",
            "tombstones (changelog)",
        ],
        table,
    )
    text += "\n" + tombstones_line(rows, deleted_at) + "\n"
    text += "\n## min.cleanable.dirty.ratio: cleaning rounds against log size\n\n" + markdown_table(
        [
            "topic",
            "min.cleanable.dirty.ratio",
            "cleaning rounds",
            "bytes freed",
            "bytes on disk, average over the snapshots",
            "at most",
        ],
        [
            [
                topic,
                configs["min.cleanable.dirty.ratio"],
                len(rounds.get(f"{topic}-0", [])),
                sum(rounds.get(f"{topic}-0", [])),
                f"{sum(sizes) / len(sizes):.0f}",
                max(sizes),
            ]
            for topic, configs, sizes in (
                (COMPACTED, COMPACTED_CONFIGS, series(COMPACTED, "bytes")),
                (LAZY, LAZY_CONFIGS, lazy_bytes),
            )
        ],
    )
    with open(os.path.join(out, "lab08.md"), "w") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir, root = os.path.join(scratch, "data"), os.path.join(scratch, "snapshots")
        with (
            cleaning_rounds() as rounds,
            local_broker(data_dir, **{"log.cleaner.backoff.ms": 100}) as broker,
        ):
            # 12 bursts at full scale; fewer snapshots for Spark to read on a small run
            bursts = max(6, min(12, round(12 * args.scale)))
            deleted_at, lazy_bytes = workload(
                broker, data_dir, root, int(12_000 * args.scale), 400, bursts
            )
        with spark_for(args.master, scratch) as spark:
            rows = analyse(spark, root)
    report(args.out, rows, deleted_at, lazy_bytes, rounds)
    print_table(args.out, "lab08.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
