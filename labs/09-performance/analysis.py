"""Lab 09 analysis: what batching and compression do to throughput and to bytes on disk.

    kafka-ref lab analyse 09 --out /tmp/lab09        # your solution.py
    kafka-ref lab analyse 09 --reference --out /tmp/lab09-reference

Our producer (so your `estimate_size`, which decides how many records a batch holds) sends
the same records, log lines of about 200 bytes, to a real kafka-ref broker again and
again: once per `batch.size` (1, 4, 16 and 64 KiB, no compression) and once per codec the
broker and producer support (none, gzip, snappy, lz4, zstd, batch.size 16 KiB), each run
to a topic of its own, and times each run from the first send to the last
acknowledgement. PySpark then reads the broker's segment files with `kafka_ref_segments`
and counts per topic the batches, the records per batch and the bytes on disk (the
batches' sizes: what the broker wrote, what a consumer fetches and what `sendfile` copies
from the page cache, compressed as the producer sent it). `lab09.png` and `lab09.md`
answer the handout's questions.
"""

from __future__ import annotations

import json
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

BATCH_SIZES = (1024, 4096, 16384, 65536)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def log_lines(count: int) -> list[bytes]:
    """Records like an application's access log: repetitive, as real data is."""
    rng = random.Random(9)
    paths = ["/api/orders", "/api/users", "/health", "/static/app.js", "/api/cart"]
    return [
        json.dumps(
            {
                "ts": 1_700_000_000_000 + i,
                "method": rng.choice(["GET", "POST"]),
                "path": rng.choice(paths),
                "status": rng.choice([200, 200, 200, 404, 500]),
                "user": f"user-{rng.randrange(500)}",
                "ms": round(rng.expovariate(0.05), 1),
                "agent": "Mozilla/5.0 (X11; Linux x86_64)",
            }
        ).encode()
        for i in range(count)
    ]


def runs() -> list[tuple[str, int, str]]:
    """(topic, batch.size, compression.type) of every run."""
    by_size = [(f"batch-{size}", size, "none") for size in BATCH_SIZES]
    return by_size + [(f"codec-{codec}", 16384, codec) for codec in CODECS]


def workload(bootstrap: str, records: list[bytes]) -> dict[str, float]:
    """Each run's records per second, from the first send to the last acknowledgement."""
    create_topics(bootstrap, {topic: 1 for topic, _, _ in runs()})
    rates = {}
    for topic, batch_size, codec in runs():
        with Producer(bootstrap, linger_ms=5, batch_size=batch_size,
                      compression_type=codec) as producer:  # fmt: skip
            started = time.perf_counter()
            for value in records:
                producer.send(topic, value)
            producer.flush()
            rates[topic] = len(records) / (time.perf_counter() - started)
    return rates


def analyse(spark, data_dir: str) -> list[dict]:
    from pyspark.sql import functions as F

    batches = (
        spark.read.format("kafka_ref_segments")
        .load(data_dir)
        .where(F.col("topic").startswith("batch-") | F.col("topic").startswith("codec-"))
        .select("topic", "baseOffset", "batchSize", "recordCount", "compression")
        .distinct()
    )
    rows = batches.groupBy("topic", "compression").agg(
        F.count("*").alias("batches"),
        F.sum("recordCount").alias("records"),
        F.sum("batchSize").alias("bytes"),
        F.avg("batchSize").alias("avg_batch_bytes"),
    )
    return [r.asDict() for r in rows.orderBy("topic").collect()]


def report(out: str, rows: list[dict], rates: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {r["topic"]: r for r in rows}
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    sizes = [s for s in BATCH_SIZES if f"batch-{s}" in by]
    left.plot(sizes, [rates[f"batch-{s}"] for s in sizes], marker="o", label="records/s")
    left.set(title="Throughput by batch.size (no compression)", xlabel="batch.size (bytes)",
             ylabel="records per second", xscale="log")  # fmt: skip
    per_batch = left.twinx()
    per_batch.plot(sizes, [by[f"batch-{s}"]["records"] / by[f"batch-{s}"]["batches"]
                           for s in sizes], marker="x", color="tab:gray")  # fmt: skip
    per_batch.set_ylabel("records per batch (gray)")
    codecs = [c for c in CODECS if f"codec-{c}" in by]
    xs = range(len(codecs))
    right.bar([x - 0.2 for x in xs], [by[f"codec-{c}"]["bytes"] / 1024 for c in codecs], 0.4,
              label="KiB on disk")  # fmt: skip
    right.set(title="Bytes on disk and throughput by compression.type (batch.size 16 KiB)",
              ylabel="KiB on disk")  # fmt: skip
    right.set_xticks(list(xs), codecs)
    rate = right.twinx()
    rate.bar([x + 0.2 for x in xs], [rates[f"codec-{c}"] for c in codecs], 0.4,
             color="tab:orange", label="records/s")  # fmt: skip
    rate.set_ylabel("records per second (orange)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "lab09.png"), dpi=100)
    raw = by.get("codec-none", {}).get("bytes") or 1
    table = markdown_table(
        ["topic", "batch.size", "compression", "records/s", "batches", "records per batch",
         "bytes on disk", "bytes per record", "size against none"],
        [[topic, size, codec, f"{rates[topic]:,.0f}", by[topic]["batches"],
          f"{by[topic]['records'] / by[topic]['batches']:.1f}", by[topic]["bytes"],
          f"{by[topic]['bytes'] / by[topic]['records']:.1f}",
          f"{by[topic]['bytes'] / raw:.0%}" if topic.startswith("codec-") else ""]
         for topic, size, codec in runs() if topic in by],
    )  # fmt: skip
    with open(os.path.join(out, "lab09.md"), "w") as f:
        f.write("# Lab 09: batching and compression\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    records = log_lines(max(1000, int(20_000 * args.scale)))
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        with local_broker(data_dir) as broker:
            rates = workload(broker.bootstrap, records)
        with spark_for(args.master, scratch) as spark:
            rows = analyse(spark, data_dir)
    report(args.out, rows, rates)
    print_table(args.out, "lab09.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
