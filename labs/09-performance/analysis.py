"""Lab 09 analysis: batching, compression, the page cache and zero-copy, measured.

    kafka-ref lab analyse 09 --out /tmp/lab09        # your solution.py
    kafka-ref lab analyse 09 --reference --out /tmp/lab09-reference

Our producer (so your `estimate_size`, which decides how many records a batch holds) sends
the same records, log lines of about 200 bytes, to a real kafka-ref broker again and
again: once per `batch.size` (1, 4, 16 and 64 KiB, no compression) and once per codec the
broker and producer support (none, gzip, snappy, lz4, zstd, batch.size 16 KiB), and once
with gzip on 1 KiB batches, each run to a topic of its own, and times each run from the
first send to the last acknowledgement. PySpark then reads the broker's segment files with
`kafka_ref_segments` and counts per topic the batches, the records per batch, the largest
batch (to compare with batch.size) and the bytes on disk (the
batches' sizes: what the broker wrote, what a consumer fetches and what `sendfile` copies
from the page cache, compressed as the producer sent it).

Then the fetch side: a confluent-kafka consumer reads the uncompressed topic from its start
again and again, once with the broker's zero-copy path (`sendfile`: the kernel moves the
bytes from the page cache to the socket) and once with it off (the broker reads each slice
into Python and writes it, as it must on TLS), and the broker thread's own CPU time is
measured per MB fetched. Last, reads right after the segment files were evicted from the
page cache (`fsync`, then `posix_fadvise(DONTNEED)`) are timed against reads from memory,
alternating, three of each (medians). On a virtual machine the "disk" may itself be cached
by the host: the table then shows little difference, and says so.
`lab09.png` and `lab09.md` answer the handout's questions.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import threading
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
    by_codec = [(f"codec-{codec}", 16384, codec) for codec in CODECS]
    return [*by_size, *by_codec, ("batch-1024-gzip", 1024, "gzip")]  # gzip on small batches


def uncompressed(topic: str, batch_size: int) -> str:
    """The run with the same batch.size and no compression, to compare a codec with."""
    return "codec-none" if topic.startswith("codec-") else f"batch-{batch_size}"


def workload(bootstrap: str, records: list[bytes]) -> dict[str, float]:
    """Each run's records per second, from the first send to the last acknowledgement."""
    create_topics(bootstrap, {topic: 1 for topic, _, _ in runs()})
    rates = {}
    for topic, batch_size, codec in runs():
        with Producer(
            bootstrap, linger_ms=5, batch_size=batch_size, compression_type=codec
        ) as producer:
            started = time.perf_counter()
            for value in records:
                producer.send(topic, value)
            producer.flush()
            rates[topic] = len(records) / (time.perf_counter() - started)
    return rates


FETCHED_TOPIC = "batch-65536"  # uncompressed: what a consumer fetches is the records' bytes


def read_once(consumer, topic: str, end: int) -> int:
    """Read `topic`'s partition 0 from offset 0 to `end`; the bytes of the values read."""
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(topic, 0, 0)])
    read, last, deadline = 0, -1, time.monotonic() + 60
    while last < end - 1 and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.05):  # a short wait: the end is known
            if message.error() is None:
                read += len(message.value())
                last = message.offset()
    return read


def fetch_costs(broker, data_dir: str, count: int, passes: int) -> dict[str, float]:
    """Broker CPU per MB fetched, zero-copy and copy; one read from disk against memory."""
    from confluent_kafka import Consumer

    loop_thread = broker.call(threading.get_ident)
    cpu_clock = time.pthread_getcpuclockid(loop_thread)  # the broker's event loop thread
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "lab09",
            "enable.auto.commit": False,
            "log_level": 3,
            "fetch.wait.max.ms": 10,
        }
    )
    costs: dict[str, float] = {}
    try:
        read_once(consumer, FETCHED_TOPIC, count)  # connections and metadata: not measured
        for mode, zero_copy in (("zero-copy", True), ("copy", False)):
            broker.broker.socket_server.zero_copy = zero_copy
            cpu, wall, fetched = time.clock_gettime(cpu_clock), time.perf_counter(), 0
            for _ in range(passes):
                fetched += read_once(consumer, FETCHED_TOPIC, count)
            megabytes = fetched / 2**20
            cpu_ms = (time.clock_gettime(cpu_clock) - cpu) * 1e3
            costs[f"{mode} broker CPU ms/MB"] = cpu_ms / megabytes
            costs[f"{mode} MB/s"] = megabytes / (time.perf_counter() - wall)
        broker.broker.socket_server.zero_copy = True
        segments = os.path.join(data_dir, f"{FETCHED_TOPIC}-0")
        timings: dict[str, list[float]] = {"from disk": [], "from the page cache": []}
        for _ in range(3):
            for mode in timings:
                if mode == "from disk":  # evict the segment files: the next read goes to disk
                    for name in os.listdir(segments):
                        with open(os.path.join(segments, name), "rb") as f:
                            os.fsync(f.fileno())  # dirty pages are not dropped: write them
                            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                started = time.perf_counter()
                read_once(consumer, FETCHED_TOPIC, count)
                timings[mode].append((time.perf_counter() - started) * 1e3)
        for mode, times in timings.items():
            costs[f"one read {mode}, ms (median of 3)"] = sorted(times)[1]
    finally:
        consumer.close()
    return costs


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
        F.max("batchSize").alias("largest_batch"),
    )
    return [r.asDict() for r in rows.orderBy("topic").collect()]


def report(out: str, rows: list[dict], rates: dict[str, float], costs: dict[str, float]) -> None:
    by = {r["topic"]: r for r in rows}
    path = os.path.join(out, "lab09.png")
    with figure(path, 1, 3, size=(18, 4.5)) as (_fig, (left, right, fetch)):
        sizes = [s for s in BATCH_SIZES if f"batch-{s}" in by]
        left.plot(sizes, [rates[f"batch-{s}"] for s in sizes], marker="o", label="records/s")
        left.set(
            title="Throughput by batch.size (no compression)",
            xlabel="batch.size (bytes)",
            ylabel="records per second",
            xscale="log",
        )
        per_batch = left.twinx()
        per_batch.plot(
            sizes,
            [by[f"batch-{s}"]["records"] / by[f"batch-{s}"]["batches"] for s in sizes],
            marker="x",
            color="tab:gray",
        )
        per_batch.set_ylabel("records per batch (gray)")
        codecs = [c for c in CODECS if f"codec-{c}" in by]
        xs = range(len(codecs))
        right.bar(
            [x - 0.2 for x in xs],
            [by[f"codec-{c}"]["bytes"] / 1024 for c in codecs],
            0.4,
            label="KiB on disk",
        )
        right.set(
            title="Bytes on disk and throughput by compression.type (batch.size 16 KiB)",
            ylabel="KiB on disk",
        )
        right.set_xticks(list(xs), codecs)
        rate = right.twinx()
        rate.bar(
            [x + 0.2 for x in xs],
            [rates[f"codec-{c}"] for c in codecs],
            0.4,
            color="tab:orange",
            label="records/s",
        )
        rate.set_ylabel("records per second (orange)")
        modes = ("zero-copy", "copy")
        fetch.bar(
            modes, [costs[f"{m} broker CPU ms/MB"] for m in modes], color=["tab:green", "tab:red"]
        )
        fetch.set(
            title=f"Broker CPU per MB fetched ({FETCHED_TOPIC}, 10 reads)",
            ylabel="ms of the broker thread's CPU per MB",
        )

    def against_none(topic: str, size: int, codec: str) -> str:
        raw = by.get(uncompressed(topic, size), {}).get("bytes")
        return f"{by[topic]['bytes'] / raw:.0%}" if codec != "none" and raw else ""

    table = markdown_table(
        [
            "topic",
            "batch.size",
            "compression",
            "records/s",
            "batches",
            "records per batch",
            "largest batch (bytes)",
            "bytes on disk",
            "bytes per record",
            "size against no compression",
        ],
        [
            [
                topic,
                size,
                codec,
                f"{rates[topic]:,.0f}",
                by[topic]["batches"],
                f"{by[topic]['records'] / by[topic]['batches']:.1f}",
                by[topic]["largest_batch"],
                by[topic]["bytes"],
                f"{by[topic]['bytes'] / by[topic]['records']:.1f}",
                against_none(topic, size, codec),
            ]
            for topic, size, codec in runs()
            if topic in by
        ],
    )
    fetches = markdown_table(["measure", "value"], [[k, f"{v:,.2f}"] for k, v in costs.items()])
    with open(os.path.join(out, "lab09.md"), "w") as f:
        f.write("# Lab 09: batching and compression\n\n" + table)
        f.write("\n\n## Fetching: zero-copy and the page cache\n\n" + fetches)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    records = log_lines(max(1000, int(20_000 * args.scale)))
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        with local_broker(data_dir) as broker:
            rates = workload(broker.bootstrap, records)
            costs = fetch_costs(broker, data_dir, len(records), passes=10)
        with spark_for(args.master, scratch) as spark:
            rows = analyse(spark, data_dir)
    report(args.out, rows, rates, costs)
    print_table(args.out, "lab09.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
