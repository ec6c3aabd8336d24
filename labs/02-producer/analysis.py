"""Lab 02 analysis: where the partitioner put the records, and how linger.ms batched them.

    kafka-ref lab analyse 02 --out /tmp/lab02        # your solution.py
    kafka-ref lab analyse 02 --reference --out /tmp/lab02-reference

The workload runs through our producer, so through your `partition_for_key`,
`choose_sticky_partition` and `batch_is_sendable` (KAFKA_REF_SOLUTION): keyed records with
uniform and Zipf-distributed keys to two 8-partition topics, and keyless records sent 1 ms
apart to one-partition topics with linger.ms 0, 5, 20 and 50. Then PySpark reads the
segment files the broker wrote (`kafka_ref_segments`: one row per record, with its batch)
and `lab02.png` and `lab02.md` answer the handout's first two questions.
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
    create_topics(bootstrap, {"uniform": PARTITIONS, "zipf": PARTITIONS})
    create_topics(bootstrap, {f"linger-{ms}": 1 for ms in LINGERS})
    with Producer(bootstrap, linger_ms=5) as producer:
        for key in (b"user-%d" % rng.randrange(1000) for _ in range(records)):
            producer.send("uniform", b"v", key=key)
        for key in zipf_keys(records, rng):
            producer.send("zipf", b"v", key=key)
    for ms in LINGERS:  # keyless, 1 ms apart: a batch holds what arrives within linger.ms
        with Producer(bootstrap, linger_ms=ms) as producer:
            for _ in range(records // 10):
                producer.send(f"linger-{ms}", b"x" * 100)
                time.sleep(0.001)


def analyse(spark, data_dir: str) -> tuple[dict, dict]:
    from pyspark.sql import functions as F

    rows = spark.read.format("kafka_ref_segments").load(data_dir)
    spread = {
        (r["topic"], r["partition"]): r["count"]
        for r in rows.where(F.col("topic").isin("uniform", "zipf"))
        .groupBy("topic", "partition")
        .count()
        .collect()
    }
    batches = {
        r["topic"]: (r["records"], r["batches"])
        for r in rows.where(F.col("topic").startswith("linger-"))
        .groupBy("topic")
        .agg(F.count("*").alias("records"), F.countDistinct("baseOffset").alias("batches"))
        .collect()
    }
    return spread, batches


def report(out: str, spread: dict, batches: dict) -> None:
    with figure(os.path.join(out, "lab02.png"), 1, 2, size=(11, 4)) as (_fig, (left, right)):
        width = 0.4
        for i, topic in enumerate(("uniform", "zipf")):
            counts = [spread.get((topic, p), 0) for p in range(PARTITIONS)]
            left.bar([p + (i - 0.5) * width for p in range(PARTITIONS)], counts, width, label=topic)
        left.set(title="Records per partition by key distribution", xlabel="partition",
                 ylabel="records")  # fmt: skip
        left.legend()
        per_batch = [batches[f"linger-{ms}"][0] / batches[f"linger-{ms}"][1] for ms in LINGERS]
        right.plot(LINGERS, per_batch, marker="o")
        right.set(title="Records per batch, records 1 ms apart", xlabel="linger.ms",
                  ylabel="records per batch")  # fmt: skip

    rows = []
    for topic in ("uniform", "zipf"):
        counts = [spread.get((topic, p), 0) for p in range(PARTITIONS)]
        mean = sum(counts) / PARTITIONS
        rows.append([topic, *counts, f"{max(counts) / mean:.2f}"])
    text = "# Lab 02: partitioning and batching\n\n## Records per partition\n\n"
    header = ["keys", *(f"p{p}" for p in range(PARTITIONS)), "busiest / mean"]
    text += markdown_table(header, rows)
    text += "\n## Batching\n\n" + markdown_table(
        ["linger.ms", "records", "batches", "records per batch"],
        [
            [ms, *batches[f"linger-{ms}"], f"{v:.1f}"]
            for ms, v in zip(LINGERS, per_batch, strict=True)
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
            spread, batches = analyse(spark, data_dir)
    report(args.out, spread, batches)
    print_table(args.out, "lab02.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
