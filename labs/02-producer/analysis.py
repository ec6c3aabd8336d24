"""Lab 02 analysis: where the partitioner put the records, and how linger.ms batched them.

    kafka-ref lab analyse 02 --out /tmp/lab02        # your solution.py
    kafka-ref lab analyse 02 --reference --out /tmp/lab02-reference

The workload runs through our producer, so through your `partition_for_key`,
`choose_sticky_partition` and `batch_is_sendable` (KAFKA_REF_SOLUTION): keyed records with
uniform and Zipf-distributed keys to two 8-partition topics, numbered keyless records to
an 8-partition topic (the sticky partitioner picks a partition per batch), and keyless
records sent 1 ms apart to one-partition topics with linger.ms 0, 5, 20 and 50. Then
PySpark reads the segment files the broker wrote (`kafka_ref_segments`: one row per
record, with its batch and its timestamp, the time the producer's `send` was called) and
counts records per partition, the records of the hottest key, the keyless batches that
went to the same partition as the batch sent before them (in the records' numbering), and
per linger.ms the records per batch and how long each record waited in its batch for the
last one (the batch's last timestamp minus the record's). `lab02.png` and `lab02.md`
answer the handout's questions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time

from kafka_ref.client.producer import Producer
from kafka_ref.tools.lab_analysis import (
    create_topics,
    local_broker,
    markdown_table,
    parse_args,
    print_table,
    spark_for,
)
from kafka_ref.tools.plots import figure

LINGERS = (0, 5, 20, 50)
PARTITIONS = 8


def zipf_keys(n: int, rng: random.Random, distinct: int = 1000) -> list[bytes]:
    """`n` keys drawn from `distinct` keys with probability 1/rank (a few are very hot)."""
    keys = [b"user-%d" % i for i in range(distinct)]
    return rng.choices(keys, weights=[1 / (rank + 1) for rank in range(distinct)], k=n)


def produce(bootstrap: str, records: int) -> None:
    rng = random.Random(2)
    create_topics(bootstrap, {"uniform": PARTITIONS, "zipf": PARTITIONS, "keyless": PARTITIONS})
    create_topics(bootstrap, {f"linger-{ms}": 1 for ms in LINGERS})
    with Producer(bootstrap, linger_ms=5) as producer:
        for key in (b"user-%d" % rng.randrange(1000) for _ in range(records)):
            producer.send("uniform", b"v", key=key)
        for key in zipf_keys(records, rng):
            producer.send("zipf", b"v", key=key)
    with Producer(bootstrap, linger_ms=5) as producer:  # a new batch every 5 records or so
        for n in range(records // 4):
            producer.send("keyless", b"%06d" % n)
            time.sleep(0.001)
    for ms in LINGERS:  # keyless, 1 ms apart: a batch holds what arrives within linger.ms
        with Producer(bootstrap, linger_ms=ms) as producer:
            for _ in range(records // 10):
                producer.send(f"linger-{ms}", b"x" * 100)
                time.sleep(0.001)


def analyse(spark, data_dir: str) -> dict:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = spark.read.format("kafka_ref_segments").load(data_dir).cache()
    # records per (topic, partition, key), folded here into per partition and per key
    spread: dict[tuple[str, int], int] = {}
    hottest: dict[str, int] = {}
    per_key = (
        rows.where(F.col("topic").isin("uniform", "zipf", "keyless"))
        .groupBy("topic", "partition", "key")
        .count()
        .collect()
    )
    for r in per_key:
        where = (r["topic"], r["partition"])
        spread[where] = spread.get(where, 0) + r["count"]
        if r["key"] is not None:
            hottest[r["topic"]] = max(hottest.get(r["topic"], 0), r["count"])
    # Keyless batches in the order they were sent (their first record's number): did one
    # go to the same partition as the batch before it?
    keyless = (
        rows.where(F.col("topic") == "keyless")
        .groupBy("partition", "baseOffset")
        .agg(F.min(F.col("value").cast("string").cast("int")).alias("first"))
    )
    previous = F.lag("partition").over(Window.orderBy("first"))
    [sticky] = (
        keyless.withColumn("same", (F.col("partition") == previous).cast("int"))
        .agg(F.count("*").alias("batches"), F.sum("same").alias("same_partition"))
        .collect()
    )
    # How long a record waited in its batch for the batch's last record.
    last = F.max("timestamp").over(Window.partitionBy("topic", "baseOffset"))
    waited = F.col("last").cast("double") - F.col("timestamp").cast("double")
    batches = {
        r["topic"]: r.asDict()
        for r in rows.where(F.col("topic").startswith("linger-"))
        .withColumn("last", last)
        .groupBy("topic")
        .agg(
            F.count("*").alias("records"),
            F.countDistinct("baseOffset").alias("batches"),
            (F.avg(waited) * 1000).alias("avg_wait_ms"),
            (F.max(waited) * 1000).alias("max_wait_ms"),
            F.min("timestamp").alias("first"),
            F.max("timestamp").alias("last"),
        )
        .collect()
    }
    rows.unpersist()
    return {"spread": spread, "hottest": hottest, "sticky": sticky.asDict(), "batches": batches}


def spacing(batches: dict) -> float:
    """The average time between two records sent, from their timestamps (ms)."""
    span = (batches["last"] - batches["first"]).total_seconds() * 1000
    return span / max(1, batches["records"] - 1)


def report(out: str, found: dict) -> None:
    spread, batches = found["spread"], found["batches"]
    with figure(os.path.join(out, "lab02.png"), 1, 2, size=(11, 4)) as (_fig, (left, right)):
        width = 0.27
        for i, topic in enumerate(("uniform", "zipf", "keyless")):
            counts = [spread.get((topic, p), 0) for p in range(PARTITIONS)]
            left.bar([p + (i - 1) * width for p in range(PARTITIONS)], counts, width, label=topic)
        left.set(
            title="Records per partition by key distribution", xlabel="partition", ylabel="records"
        )
        left.legend()
        per_batch = [
            batches[f"linger-{ms}"]["records"] / batches[f"linger-{ms}"]["batches"]
            for ms in LINGERS
        ]
        right.plot(LINGERS, per_batch, marker="o")
        right.set(
            title="Records per batch, records 1 ms apart",
            xlabel="linger.ms",
            ylabel="records per batch",
        )

    rows = []
    for topic in ("uniform", "zipf"):
        counts = [spread.get((topic, p), 0) for p in range(PARTITIONS)]
        mean = sum(counts) / PARTITIONS
        hottest = found["hottest"][topic]
        rows.append(
            [topic, *counts, f"{max(counts) / mean:.2f}", f"{hottest} ({hottest / mean:.2f})"]
        )
    text = "# Lab 02: partitioning and batching\n\n## Records per partition\n\n"
    header = [
        "keys",
        *(f"p{p}" for p in range(PARTITIONS)),
        "busiest / mean",
        "hottest key's records (/ mean)",
    ]
    text += markdown_table(header, rows)
    sticky = found["sticky"]
    counts = [spread.get(("keyless", p), 0) for p in range(PARTITIONS)]
    text += "\n## Keyless records: the sticky partitioner\n\n" + markdown_table(
        [
            "records",
            "batches",
            *(f"p{p}" for p in range(PARTITIONS)),
            "batches in the same partition as the batch before",
        ],
        [[sum(counts), sticky["batches"], *counts, sticky["same_partition"] or 0]],
    )
    text += "\n## Batching\n\n" + markdown_table(
        [
            "linger.ms",
            "records",
            "ms between records",
            "batches",
            "records per batch",
            "wait in the batch, average (ms)",
            "at most (ms)",
        ],
        [
            [
                ms,
                b["records"],
                f"{spacing(b):.1f}",
                b["batches"],
                f"{v:.1f}",
                f"{b['avg_wait_ms']:.1f}",
                f"{b['max_wait_ms']:.0f}",
            ]
            for ms, v in zip(LINGERS, per_batch, strict=True)
            for b in [batches[f"linger-{ms}"]]
        ],
    )
    with open(os.path.join(out, "lab02.md"), "w") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        with local_broker(data_dir) as broker:
            produce(broker.bootstrap, int(2000 * args.scale))
        with spark_for(args.master, scratch) as spark:
            found = analyse(spark, data_dir)
    report(args.out, found)
    print_table(args.out, "lab02.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
