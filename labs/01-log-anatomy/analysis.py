"""Lab 01 analysis: how dense the sparse index is, and what a lookup costs, by index.interval.bytes.

    kafka-ref lab analyse 01 --out /tmp/lab01        # your solution.py
    kafka-ref lab analyse 01 --reference --out /tmp/lab01-reference

Four partition logs get the same 2,000 batches (about 0.5 MB) through kafka-ref's `Log`, so
through your `needs_index_entry`, with `index.interval.bytes` 256, 1024, 4096 and 16384.
PySpark then reads the segment files (`kafka_ref_segments`: a row per record, with its
batch's position) and the `.index` entries (read from the files into rows), finds for every
offset the index entry a lookup starts from (the greatest entry at or below it, found with
a window over both, in offset order) and measures the bytes of batch headers a read scans
from there, and the largest batch, to compare with the interval. `lab01.png` and `lab01.md`
answer the handout's questions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.tools.lab_analysis import markdown_table, parse_args, print_table, spark_for
from kafka_ref.tools.plots import figure

INTERVALS = (256, 1024, 4096, 16384)


def write_logs(data_dir: str, batches: int) -> list[tuple[str, int, int, int]]:
    """One log per interval; returns the index entries (topic, interval, offset, position)."""
    rng = random.Random(1)
    sizes = [rng.randrange(20, 500) for _ in range(batches)]
    entries = []
    for interval in INTERVALS:
        topic = f"interval-{interval}"
        log = Log.open(
            os.path.join(data_dir, f"{topic}-0"),
            LogConfig(index_interval_bytes=interval, segment_bytes=1 << 30),
            ManualClock(),
        )
        for size in sizes:
            log.append(build_batch([Record(None, b"x" * size, 0)]))
        index = log.segments[0].offset_index
        entries += [(topic, interval, *index.entry(slot)) for slot in range(index.entries)]
        log.close()
    return entries


def analyse(spark, data_dir: str, entries: list) -> list[tuple]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    batches = (
        spark.read.format("kafka_ref_segments")
        .load(data_dir)
        .select("topic", "baseOffset", "position", "batchSize")
        .distinct()
    )
    index = spark.createDataFrame(entries, "topic string, interval int, offset long, pos long")
    # The entry a lookup of a batch's offset starts from: the last entry at or below it.
    both = batches.join(
        index.select("topic", F.col("offset").alias("baseOffset"), "pos"),
        ["topic", "baseOffset"],
        "left",
    )
    upto = (
        Window.partitionBy("topic").orderBy("baseOffset").rowsBetween(Window.unboundedPreceding, 0)
    )
    scans = both.withColumn(
        "start", F.coalesce(F.last("pos", ignorenulls=True).over(upto), F.lit(0))
    )
    # A read of an offset in this batch scans the headers from `start` up to this batch.
    scans = scans.withColumn("scanned", F.col("position") - F.col("start"))
    stats = scans.groupBy("topic").agg(
        F.count("*").alias("batches"),
        F.sum("batchSize").alias("bytes"),
        F.avg("scanned").alias("avg_scanned"),
        F.max("scanned").alias("max_scanned"),
        F.max("batchSize").alias("largest_batch"),
    )
    counts = index.groupBy("topic", "interval").count()
    rows = stats.join(counts, "topic").orderBy("interval").collect()
    return [
        (
            r["interval"],
            r["count"],
            r["count"] * 8,
            r["bytes"],
            r["avg_scanned"],
            r["max_scanned"],
            r["largest_batch"],
        )
        for r in rows
    ]


def report(out: str, rows: list[tuple]) -> None:
    intervals = [r[0] for r in rows]
    with figure(os.path.join(out, "lab01.png"), 1, 2, size=(11, 4)) as (_fig, (left, right)):
        left.plot(intervals, [r[1] for r in rows], marker="o")
        left.set(
            title="Index entries (8 bytes each)",
            xlabel="index.interval.bytes",
            ylabel="entries",
            xscale="log",
            yscale="log",
        )
        right.plot(intervals, [r[4] for r in rows], marker="o", label="average")
        right.plot(intervals, [r[5] for r in rows], marker="x", label="worst")
        right.set(
            title="Bytes of batches scanned per lookup",
            xlabel="index.interval.bytes",
            ylabel="bytes",
            xscale="log",
            yscale="log",
        )
        right.legend()
    table = markdown_table(
        [
            "index.interval.bytes",
            "entries",
            "index bytes",
            "log bytes",
            "index per GiB of log (MiB)",
            "avg scanned",
            "worst scanned",
            "largest batch",
        ],
        [
            [i, n, b, log, f"{b / log * 1024:.2f}", f"{avg:.0f}", worst, largest]
            for i, n, b, log, avg, worst, largest in rows
        ],
    )
    with open(os.path.join(out, "lab01.md"), "w") as f:
        f.write("# Lab 01: the sparse index\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        entries = write_logs(data_dir, int(2000 * args.scale))
        with spark_for(args.master, scratch) as spark:
            rows = analyse(spark, data_dir, entries)
    report(args.out, rows)
    print_table(args.out, "lab01.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
