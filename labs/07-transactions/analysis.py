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

After the two have finished, a third transactional producer writes one record and forgets
its transaction: nobody commits or aborts it, and the broker's transaction coordinator
aborts it once its `transaction.timeout.ms` (1.5 s here) has passed, while the plain
producer goes on writing.

PySpark then reads the topic twice with the `kafka_ref` source, with
`kafka.isolation.level` read_uncommitted and read_committed (our consumer, so your
`read_committed_batches`), and reads the segment files with `kafka_ref_segments` to find
each record's fate: the marker that ended its producer's transaction, found with a window
over the producer's batches in offset order. Joining the records with the samples gives
each record the time the HW passed it (read_uncommitted could read it) and the time the
LSO passed it (read_committed could): the LSO lag in milliseconds, per kind of record. The
bytes of the aborted batches are what read_committed fetched for nothing: the broker sends
every batch below the LSO, and the consumer drops the aborted ones. `lab07.png` and
`lab07.md` answer the handout's questions.
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
FORGOTTEN_TIMEOUT_MS = 1_500  # the forgotten transaction's transaction.timeout.ms
# the broker's transaction.abort.timed.out.transaction.cleanup.interval.ms (Kafka: 10 s)
ABORT_CHECK_MS = 100


def transactions(bootstrap: str, name: str, count: int, seed: int) -> None:
    from confluent_kafka import Producer

    rng = random.Random(seed)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": name, "linger.ms": 2, "log_level": 3}
    )
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


def forgotten_transaction(bootstrap: str):
    """A transaction begun, one record written, and never finished. Returns its producer
    (kept alive: the coordinator, not the producer, must end the transaction)."""
    from confluent_kafka import Producer

    config = {"bootstrap.servers": bootstrap, "transactional.id": "forgetful", "log_level": 0}
    producer = Producer(config | {"transaction.timeout.ms": FORGOTTEN_TIMEOUT_MS})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, b"forgotten")
    producer.flush(30)
    return producer


def workload(broker, count: int) -> tuple[list[tuple[int, int, int]], int]:
    """Run the producers; the (ms, HW, LSO) samples taken meanwhile, and the ms at which
    the forgotten transaction began."""
    partition = broker.broker.replica_manager.get_partition(TOPIC, 0)
    samples, done, started = [], threading.Event(), time.monotonic()

    def sample() -> None:
        hw, lso = broker.call(lambda: (partition.high_watermark, partition.last_stable_offset))
        samples.append((round((time.monotonic() - started) * 1000), hw, lso))
        time.sleep(0.01)

    writers = [
        threading.Thread(target=transactions, args=(broker.bootstrap, f"clerk-{i}", count, i))
        for i in range(2)
    ]
    writers.append(threading.Thread(target=plain, args=(broker.bootstrap, done)))
    for writer in writers:
        writer.start()
    while any(w.is_alive() for w in writers[:2]):
        sample()
    forgotten_at = round((time.monotonic() - started) * 1000)
    forgotten = forgotten_transaction(broker.bootstrap)
    # until the coordinator aborted it and the LSO caught up with the HW again
    deadline = time.monotonic() + (FORGOTTEN_TIMEOUT_MS + 5_000) / 1000
    while time.monotonic() < deadline:
        sample()
        if (
            samples[-1][0] > forgotten_at + FORGOTTEN_TIMEOUT_MS
            and samples[-1][1] == samples[-1][2]
        ):
            break
    for _ in range(20):  # 200 ms more, for the records written last
        sample()
    done.set()
    for writer in writers:
        writer.join()
    forgotten.purge()
    return samples, forgotten_at


def analyse(spark, bootstrap: str, data_dir: str, broker, samples: list) -> dict:
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
        Window.partitionBy("producerId").orderBy("offset").rowsBetween(0, Window.unboundedFollowing)
    )
    fate = F.first(marker, ignorenulls=True).over(after)
    kind = (
        F.when(F.col("isControl") & (marker == "1"), "COMMIT markers")
        .when(F.col("isControl"), "ABORT markers")
        .when(~F.col("isTransactional"), "outside transactions")
        .when(fate == "1", "committed")
        .when(fate == "0", "aborted")
        .otherwise("open")
    )
    log = records.select(
        "offset",
        "baseOffset",
        "batchSize",
        "recordCount",
        "producerId",
        F.col("value").cast("string"),
        kind.alias("kind"),
    ).cache()
    # A batch's records all have the same kind; each record carries its share of its
    # batch's bytes, so that the sum per kind counts every batch once.
    kinds = log.groupBy("kind").agg(
        F.count("*").alias("records"),
        F.countDistinct("baseOffset").alias("batches"),
        F.round(F.sum(F.col("batchSize") / F.col("recordCount"))).cast("long").alias("bytes"),
        F.min(F.when(F.col("kind").endswith("markers"), F.col("offset"))).alias("first_marker"),
        F.max(F.when(F.col("value") == "forgotten", F.col("offset"))).alias("forgotten"),
    )
    per_kind = {r["kind"]: r.asDict() for r in kinds.collect()}
    first_marker = min(
        k["first_marker"] for k in per_kind.values() if k["first_marker"] is not None
    )
    [forgotten] = [k["forgotten"] for k in per_kind.values() if k["forgotten"] is not None]

    # When could each record be read? The first sample whose HW is past it
    # (read_uncommitted), and the first whose LSO is (read_committed).
    passes = spark.createDataFrame(samples, "ms long, hw long, lso long")
    data = log.where(F.col("kind").isin("committed", "outside transactions"))
    readable = (
        data.join(F.broadcast(passes), F.col("hw") > F.col("offset"))
        .groupBy("offset", "kind")
        .agg(
            F.min("ms").alias("hw_ms"),
            F.min(F.when(F.col("lso") > F.col("offset"), F.col("ms"))).alias("lso_ms"),
        )
        .where(F.col("lso_ms").isNotNull())
    )
    phase = F.when(F.col("offset") > forgotten, "after the forgotten transaction")
    lag = F.col("lso_ms") - F.col("hw_ms")
    lags = (
        readable.groupBy(phase.otherwise("steady").alias("phase"), "kind")
        .agg(
            F.count("*").alias("records"),
            F.percentile_approx(lag, [0.5, 0.99]).alias("p"),
            F.max(lag).alias("max"),
        )
        .orderBy(F.desc("phase"), "kind")
        .collect()
    )
    # the log around its first marker: where markers land among interleaved transactions
    head = log.where(F.col("offset").between(first_marker - 12, first_marker + 12))
    head = head.orderBy("offset").collect()
    log.unpersist()
    counts = {r["kind"]: r["count"] for r in returned}
    return {"kinds": per_kind, "returned": counts, "lags": lags, "head": head}


def offsets_lag(samples: list[tuple[int, int, int]], forgotten_at: int) -> dict:
    """HW - LSO over the samples of the steady phase: share above 0, p50, p99, max."""
    gaps = sorted(hw - lso for ms, hw, lso in samples if ms < forgotten_at)
    if not gaps:
        return {"samples": 0, "share": 0.0, "p50": 0, "p99": 0, "max": 0}
    pick = lambda q: gaps[min(len(gaps) - 1, int(q * len(gaps)))]  # noqa: E731
    return {
        "samples": len(gaps),
        "share": sum(g > 0 for g in gaps) / len(gaps),
        "p50": pick(0.5),
        "p99": pick(0.99),
        "max": gaps[-1],
    }


def forgotten_report(samples: list[tuple[int, int, int]], forgotten_at: int) -> dict:
    """How long the forgotten transaction held the LSO, and how far the HW got ahead."""
    after = [s for s in samples if s[0] >= forgotten_at]
    held = [s for s in after if s[2] < s[1]]
    stuck = [s for s in held if s[2] == held[0][2]] if held else []
    return {
        "stuck_ms": stuck[-1][0] - stuck[0][0] if stuck else 0,
        "lso": stuck[0][2] if stuck else None,
        "max_gap": max((hw - lso for _, hw, lso in after), default=0),
    }


def report(out: str, samples: list, found: dict, forgotten_at: int) -> None:
    kinds, returned = found["kinds"], found["returned"]

    def count(kind: str, what: str = "records") -> int:
        return (kinds.get(kind) or {}).get(what) or 0

    markers = count("COMMIT markers") + count("ABORT markers")
    with figure(os.path.join(out, "lab07.png"), 1, 2, size=(12, 4.5)) as (_fig, (left, right)):
        seconds = [s[0] / 1000 for s in samples]
        left.fill_between(seconds, [s[1] - s[2] for s in samples], step="post", alpha=0.6)
        left.axvline(
            forgotten_at / 1000, color="tab:red", linestyle="--", label="a transaction is forgotten"
        )
        left.axvline(
            (forgotten_at + FORGOTTEN_TIMEOUT_MS) / 1000,
            color="black",
            linestyle=":",
            label="its transaction.timeout.ms is up",
        )
        left.set(
            title="HW - LSO: offsets read_committed may not read yet (every 10 ms)",
            xlabel="seconds",
            ylabel="offsets",
        )
        left.legend()
        bars = {
            "committed": count("committed"),
            "aborted": count("aborted"),
            "outside transactions": count("outside transactions"),
            "markers": markers,
            "read_uncommitted": returned.get("read_uncommitted", 0),
            "read_committed": returned.get("read_committed", 0),
        }
        colors = ["tab:green", "tab:red", "tab:gray", "black", "tab:orange", "tab:blue"]
        right.bar(list(bars), list(bars.values()), color=colors)
        right.set(
            title="Records in the log, and records each isolation level returns", ylabel="records"
        )
        right.tick_params(axis="x", labelrotation=20)
    data = count("committed") + count("aborted") + count("outside transactions") + count("open")
    uncommitted, committed = returned.get("read_uncommitted", 0), returned.get("read_committed", 0)
    table = markdown_table(
        [
            "records",
            "committed",
            "aborted",
            "outside transactions",
            "markers (COMMIT, ABORT)",
            "read_uncommitted returns",
            "read_committed returns",
            "filtered by read_committed",
        ],
        [
            [
                data,
                count("committed"),
                count("aborted"),
                count("outside transactions"),
                f"{markers} ({count('COMMIT markers')}, {count('ABORT markers')})",
                uncommitted,
                committed,
                f"{uncommitted - committed} ({1 - committed / max(1, uncommitted):.0%})",
            ]
        ],
    )
    total = sum((k.get("bytes") or 0) for k in kinds.values())
    table += "\n## The bytes read_committed fetched for nothing\n\n" + markdown_table(
        [
            "bytes in the log",
            "aborted batches",
            "their bytes (fetched, then dropped)",
            "markers' bytes (fetched, never returned)",
        ],
        [
            [
                total,
                count("aborted", "batches"),
                f"{count('aborted', 'bytes')} ({count('aborted', 'bytes') / max(1, total):.0%})",
                count("COMMIT markers", "bytes") + count("ABORT markers", "bytes"),
            ]
        ],
    )
    lag = offsets_lag(samples, forgotten_at)
    table += "\n## The LSO lag in offsets (samples every 10 ms, before the forgotten one)\n\n"
    table += markdown_table(
        ["samples", "LSO below the HW", "HW - LSO p50", "p99", "max"],
        [[lag["samples"], f"{lag['share']:.0%}", lag["p50"], lag["p99"], lag["max"]]],
    )
    table += (
        "\n## The LSO lag in time\n\nFor each record read_committed returns: from the first "
        "sample with the HW past it (read_uncommitted may read it) to the first with the LSO "
        "past it (read_committed may), in ms (samples every 10 ms).\n\n"
    )
    table += markdown_table(
        ["phase", "records", "lag p50 (ms)", "p99 (ms)", "max (ms)"],
        [
            [f"{r['phase']}: {r['kind']}", r["records"], r["p"][0], r["p"][1], r["max"]]
            for r in found["lags"]
        ],
    )
    hung = forgotten_report(samples, forgotten_at)
    table += (
        f"\nA transaction forgotten at {forgotten_at / 1000:.1f} s (transaction.timeout.ms "
        f"{FORGOTTEN_TIMEOUT_MS}, the coordinator checks every {ABORT_CHECK_MS} ms): the LSO "
        f"stayed at offset {hung['lso']} for {hung['stuck_ms']} ms, while the HW went up to "
        f"{hung['max_gap']} offsets past it.\n"
    )
    table += "\n## The log around its first marker\n\n" + markdown_table(
        ["offset", "batch", "producer id", "record"],
        [
            [
                r["offset"],
                r["baseOffset"],
                r["producerId"],
                r["kind"][:-1] if "markers" in r["kind"] else f"{r['value']} ({r['kind']})",
            ]
            for r in found["head"]
        ],
    )
    with open(os.path.join(out, "lab07.md"), "w") as f:
        f.write("# Lab 07: the LSO and read_committed\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    count = max(6, int(30 * args.scale))
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        configs = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": ABORT_CHECK_MS}
        with local_broker(data_dir, **configs) as broker:
            create_topics(broker.bootstrap, {TOPIC: 1})
            samples, forgotten_at = workload(broker, count)
            with spark_for(args.master, scratch) as spark:
                found = analyse(spark, broker.bootstrap, data_dir, broker, samples)
    report(args.out, samples, found, forgotten_at)
    print_table(args.out, "lab07.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
