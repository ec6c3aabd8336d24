"""Lab 07 analysis: how far the last stable offset lags the high watermark, and what
read_committed filters out.

    kafka-ref lab analyse 07 --out /tmp/lab07        # your solution.py
    kafka-ref lab analyse 07 --reference --out /tmp/lab07-reference

Two transactional producers (librdkafka, through confluent-kafka) write orders into one
partition of a real kafka-ref broker, each in its own thread, transaction after
transaction: ten records a few milliseconds apart, then a commit, or (one in three) an
abort. Their transactions overlap. A third, plain producer writes a record now and then
outside any transaction. Meanwhile the broker's high watermark and last stable offset are
sampled every 10 ms, on the broker's own thread: the LSO is your `last_stable_offset`.

PySpark then reads the topic twice with the `kafka_ref` source, with
`kafka.isolation.level` read_uncommitted and read_committed (our consumer, so your
`read_committed_batches`), and reads the segment files with `kafka_ref_segments` to find
each record's fate: the marker that ended its producer's transaction, found with a window
over the producer's batches in offset order. `lab07.png` and `lab07.md` answer the
handout's questions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import threading
import time

from kafka_ref.tools.lab_analysis import (
    create_topics,
    local_broker,
    markdown_table,
    parse_args,
    print_table,
    spark_for,
)
from kafka_ref.tools.plots import figure

TOPIC = "orders"
ABORT_SHARE = 1 / 3


def transactions(bootstrap: str, name: str, count: int, seed: int) -> None:
    from confluent_kafka import Producer

    rng = random.Random(seed)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": name,
                         "linger.ms": 2, "log_level": 3})  # fmt: skip
    producer.init_transactions(30)
    for txn in range(count):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(TOPIC, b"%s-%d-%d" % (name.encode(), txn, i))
            producer.poll(0)
            time.sleep(rng.uniform(0.001, 0.008))
        producer.flush(30)
        if rng.random() < ABORT_SHARE:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)


def plain(bootstrap: str, done: threading.Event) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    n = 0
    while not done.is_set():
        producer.produce(TOPIC, b"plain-%d" % n)
        producer.poll(0)
        n += 1
        time.sleep(0.02)
    producer.flush(30)


def workload(broker, count: int) -> list[tuple[float, int, int]]:
    """Run the producers; the (seconds, HW, LSO) samples taken meanwhile."""
    partition = broker.broker.replica_manager.get_partition(TOPIC, 0)
    samples, done, started = [], threading.Event(), time.monotonic()
    writers = [
        threading.Thread(target=transactions, args=(broker.bootstrap, f"clerk-{i}", count, i))
        for i in range(2)
    ]
    writers.append(threading.Thread(target=plain, args=(broker.bootstrap, done)))
    for writer in writers:
        writer.start()
    while any(w.is_alive() for w in writers[:2]):
        hw, lso = broker.call(lambda: (partition.high_watermark, partition.last_stable_offset))
        samples.append((time.monotonic() - started, hw, lso))
        time.sleep(0.01)
    done.set()
    for writer in writers:
        writer.join()
    return samples


def analyse(spark, bootstrap: str, data_dir: str, broker) -> dict:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    levels = []
    for level in ("read_uncommitted", "read_committed"):
        rows = (
            spark.read.format("kafka_ref")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", TOPIC)
            .option("kafka.isolation.level", level)
            .load()
        )
        levels.append(rows.select(F.lit(level).alias("kind")))
    returned = levels[0].unionByName(levels[1]).groupBy("kind").count().collect()
    broker.stop()  # every batch on disk
    records = spark.read.format("kafka_ref_segments").load(data_dir).where(F.col("topic") == TOPIC)
    # The fate of a transactional record: the type of the next marker of its producer
    # (a control record's key is version int16, type int16: 0 ABORT, 1 COMMIT).
    marker = F.when(F.col("isControl"), F.conv(F.hex(F.substring("key", 3, 2)), 16, 10))
    after = (
        Window.partitionBy("producerId").orderBy("offset")
        .rowsBetween(0, Window.unboundedFollowing)
    )  # fmt: skip
    fate = F.first(marker, ignorenulls=True).over(after)
    kind = (
        F.when(F.col("isControl"), "markers")
        .when(~F.col("isTransactional"), "outside transactions")
        .when(fate == "1", "committed")
        .when(fate == "0", "aborted")
        .otherwise("open")
    )
    kinds = records.select(kind.alias("kind")).groupBy("kind").count().collect()
    return {r["kind"]: r["count"] for r in [*kinds, *returned]}


def lag_of(samples: list[tuple[float, int, int]]) -> dict:
    gaps = [hw - lso for _, hw, lso in samples]
    return {"share": sum(g > 0 for g in gaps) / max(1, len(gaps)),
            "avg": sum(gaps) / max(1, len(gaps)), "max": max(gaps, default=0)}  # fmt: skip


def report(out: str, samples: list, counts: dict, lag: dict) -> None:
    with figure(os.path.join(out, "lab07.png"), 1, 2, size=(12, 4.5)) as (_fig, (left, right)):
        seconds = [s[0] for s in samples]
        left.fill_between(seconds, [s[1] - s[2] for s in samples], step="post", alpha=0.6)
        left.set(title="HW - LSO: offsets read_committed may not read yet (every 10 ms)",
                 xlabel="seconds", ylabel="offsets")  # fmt: skip
        bars = ["committed", "aborted", "outside transactions", "markers", "read_uncommitted",
                "read_committed"]  # fmt: skip
        right.bar(
            bars,
            [counts.get(b, 0) for b in bars],
            color=["tab:green", "tab:red", "tab:gray", "black", "tab:orange", "tab:blue"],
        )
        right.set(title="Records in the log, and records each isolation level returns",
                  ylabel="records")  # fmt: skip
        right.tick_params(axis="x", labelrotation=20)
    data = counts.get("committed", 0) + counts.get("aborted", 0) + counts.get(
        "outside transactions", 0)  # fmt: skip
    table = markdown_table(
        ["records", "committed", "aborted", "outside transactions", "markers",
         "read_uncommitted returns", "read_committed returns", "filtered by read_committed"],
        [[data, counts.get("committed", 0), counts.get("aborted", 0),
          counts.get("outside transactions", 0), counts.get("markers", 0),
          counts["read_uncommitted"], counts["read_committed"],
          f"{1 - counts['read_committed'] / max(1, counts['read_uncommitted']):.0%}"]],
    )  # fmt: skip
    table += "\n" + markdown_table(
        ["samples", "LSO below the HW", "HW - LSO on average", "HW - LSO at most"],
        [[len(samples), f"{lag['share']:.0%}", f"{lag['avg']:.1f}", lag["max"]]],
    )
    with open(os.path.join(out, "lab07.md"), "w") as f:
        f.write("# Lab 07: the LSO and read_committed\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    count = max(6, int(30 * args.scale))
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        with local_broker(data_dir) as broker:
            create_topics(broker.bootstrap, {TOPIC: 1})
            samples = workload(broker, count)
            with spark_for(args.master, scratch) as spark:
                counts = analyse(spark, broker.bootstrap, data_dir, broker)
    report(args.out, samples, counts, lag_of(samples))
    print_table(args.out, "lab07.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
