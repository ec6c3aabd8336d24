"""Lab 08 analysis: what compaction saves over time, and how long tombstones stay.

    kafka-ref lab analyse 08 --out /tmp/lab08        # your solution.py
    kafka-ref lab analyse 08 --reference --out /tmp/lab08-reference

A real broker runs its cleaner every 100 ms, which calls your `build_offset_map` and
`should_retain` (KAFKA_REF_SOLUTION). Our producer sends the same keyed update workload to
two topics: `changelog` (cleanup.policy=compact, 16 KB segments, min.cleanable.dirty.ratio
0.3, delete.retention.ms 3000) and `updates` (cleanup.policy=delete, nothing expires, one
segment), so `updates` is the log as it would be without compaction. Updates go to random
keys; after two thirds of them a quarter of the keys are deleted (tombstones), and the
updates go on to the other keys. Between bursts the two topics' partition directories are copied, on
the broker's own thread (no cleaning round is half done), into a snapshot.

PySpark then reads every snapshot's segment files with `kafka_ref_segments` (one row per
record, with its batch) and counts, per snapshot and topic: records, bytes on disk (the
batches' sizes), distinct keys, and tombstones. `lab08.png` and `lab08.md` answer the
handout's questions.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.producer import Producer
from kafka_ref.tools.lab_analysis import (
    local_broker,
    markdown_table,
    parse_args,
    print_table,
    spark_for,
)
from kafka_ref.tools.plots import figure

COMPACTED, RAW = "changelog", "updates"
DELETE_RETENTION_MS = 3000
COMPACTED_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "16384",
    "min.cleanable.dirty.ratio": "0.3",
    "delete.retention.ms": str(DELETE_RETENTION_MS),
}
# One big segment: the uncompacted log costs Spark one task per snapshot.
RAW_CONFIGS = {"cleanup.policy": "delete", "segment.bytes": "16777216", "retention.ms": "-1"}


def snapshot(broker, data_dir: str, root: str, number: int, started: float) -> None:
    """Copy both topics' partition directories, between two cleaner rounds."""

    def copy() -> None:
        target = os.path.join(root, f"{number:03d}-{time.monotonic() - started:.1f}")
        for topic in (COMPACTED, RAW):
            shutil.copytree(os.path.join(data_dir, f"{topic}-0"),
                            os.path.join(target, f"{topic}-0"))  # fmt: skip

    broker.call(copy)


def workload(broker, data_dir: str, root: str, updates: int, keys: int, bursts: int) -> None:
    with Admin(broker.bootstrap) as admin:
        admin.create_topics([NewTopic(COMPACTED, 1, 1, COMPACTED_CONFIGS),
                             NewTopic(RAW, 1, 1, RAW_CONFIGS)])  # fmt: skip
    rng = random.Random(8)
    names = [b"key-%04d" % i for i in range(keys)]
    deleted = set(rng.sample(names, keys // 4))
    started, number = time.monotonic(), 0
    per_burst = max(1, updates // bursts)
    with Producer(broker.bootstrap, linger_ms=5, batch_size=4096) as producer:

        def send(key: bytes, value: bytes | None) -> None:
            for topic in (COMPACTED, RAW):
                producer.send(topic, value, key=key)

        for burst in range(bursts):
            live = names if burst < 2 * bursts // 3 else [k for k in names if k not in deleted]
            if burst == 2 * bursts // 3:
                for key in sorted(deleted):
                    send(key, None)  # tombstones
            for _ in range(per_burst):
                send(rng.choice(live), os.urandom(50))
            producer.flush()
            time.sleep(0.4)
            snapshot(broker, data_dir, root, number, started)
            number += 1
        for _ in range(3):  # the end: no more updates, the cleaner catches up
            time.sleep(DELETE_RETENTION_MS / 2000)
            for _ in range(20):  # a little dirty data, so that rounds run (and drop tombstones)
                send(b"heartbeat", b"x")
            producer.flush()
            snapshot(broker, data_dir, root, number, started)
            number += 1


def analyse(spark, root: str) -> list[dict]:
    from pyspark.sql import functions as F

    frames = []
    for name in sorted(os.listdir(root)):
        number, seconds = name.split("-")
        frame = spark.read.format("kafka_ref_segments").load(os.path.join(root, name))
        frames.append(frame.withColumn("snapshot", F.lit(int(number)))
                      .withColumn("seconds", F.lit(float(seconds))))  # fmt: skip
    rows = frames[0]
    for frame in frames[1:]:
        rows = rows.unionByName(frame)
    per_record = rows.groupBy("snapshot", "seconds", "topic").agg(
        F.count("*").alias("records"),
        F.countDistinct("key").alias("keys"),
        F.sum(F.col("value").isNull().cast("int")).alias("tombstones"),
    )
    per_batch = (
        rows.select("snapshot", "topic", "segment", "baseOffset", "batchSize")
        .distinct()
        .groupBy("snapshot", "topic")
        .agg(F.sum("batchSize").alias("bytes"))
    )
    joined = per_record.join(per_batch, ["snapshot", "topic"]).orderBy("snapshot", "topic")
    return [row.asDict() for row in joined.collect()]


def report(out: str, rows: list[dict]) -> None:
    by = {(r["snapshot"], r["topic"]): r for r in rows}
    snapshots = sorted({r["snapshot"] for r in rows})
    seconds = [by[(s, RAW)]["seconds"] for s in snapshots]

    def series(topic, column):
        return [by[(s, topic)][column] if (s, topic) in by else 0 for s in snapshots]

    with figure(os.path.join(out, "lab08.png"), 1, 2, size=(11, 4)) as (_fig, (left, right)):
        left.plot(seconds, [b / 1024 for b in series(RAW, "bytes")], marker=".",
                  label="without compaction (updates)")  # fmt: skip
        left.plot(seconds, [b / 1024 for b in series(COMPACTED, "bytes")], marker=".",
                  label="compacted (changelog)")  # fmt: skip
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
        table.append([s, f"{raw['seconds']:.1f}", raw["records"], compacted["records"],
                      raw["bytes"], compacted["bytes"], f"{saved:.0%}", compacted["keys"],
                      compacted["tombstones"]])  # fmt: skip
    text = "# Lab 08: compaction over time\n\n" + markdown_table(
        ["snapshot", "seconds", "records (updates)", "records (changelog)", "bytes (updates)",
         "bytes (changelog)", "space saved", "keys (changelog)", "tombstones (changelog)"],
        table,
    )  # fmt: skip
    with open(os.path.join(out, "lab08.md"), "w") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir, root = os.path.join(scratch, "data"), os.path.join(scratch, "snapshots")
        with local_broker(data_dir, **{"log.cleaner.backoff.ms": 100}) as broker:
            # 12 bursts at full scale; fewer snapshots for Spark to read on a small run
            bursts = max(6, min(12, round(12 * args.scale)))
            workload(broker, data_dir, root, int(12_000 * args.scale), 400, bursts)
        with spark_for(args.master, scratch) as spark:
            rows = analyse(spark, root)
    report(args.out, rows)
    print_table(args.out, "lab08.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
