"""User activity on Spark: events into a topic, per-user-per-minute counts out of it.

    make run                                         # a broker on 127.0.0.1:9092 (another shell)
    .venv/bin/python examples/user_activity.py produce --events 20000
    .venv/bin/python examples/user_activity.py aggregate --out /tmp/activity
    .venv/bin/python examples/user_activity.py show --out /tmp/activity

The pipeline, end to end:

1. `produce` sends JSON events `{"user": "u7", "action": "click", "ts": ...}` to the topic
   `user-activity`, keyed by user (so one user's events stay in order in one partition);
2. `aggregate` is a Structured Streaming job: it reads `user-activity` with the
   `kafka_ref` source, parses the JSON, counts events per user, action and one-minute
   window (a watermark of one minute closes windows), and writes each closed window both
   back to Kafka (`user-activity-per-minute`, keyed by user, JSON values) and to Parquet.
   It runs with `trigger(availableNow=True)`: it processes what is there and stops; run it
   again later and it continues from its checkpoint (`<out>/checkpoints`), reading each
   event once. Drop `--available-now` to keep it running every 5 seconds;
3. `show` reads the Parquet output and the result topic back in batch.

The first line of any job is `kafka_ref.spark.register(spark)`: Python data sources exist
in a session only after they are registered.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import kafka_ref.spark
from kafka_ref.client.producer import Producer

EVENTS, RESULTS = "user-activity", "user-activity-per-minute"
ACTIONS = ("view", "click", "add_to_cart", "purchase")
EVENT_SCHEMA = "user string, action string, ts long"


def session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("user-activity")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    kafka_ref.spark.register(spark)  # first: makes format("kafka_ref") known to the session
    return spark


def produce(args) -> None:
    """Random users doing random things over the last `--minutes` minutes."""
    rng, now = random.Random(args.seed), int(time.time() * 1000)
    producer = Producer(args.bootstrap_server, linger_ms=10)
    for _ in range(args.events):
        user = f"u{rng.randrange(args.users)}"
        ts = now - rng.randrange(args.minutes * 60_000)
        event = {"user": user, "action": rng.choice(ACTIONS), "ts": ts}
        producer.send(EVENTS, json.dumps(event).encode(), key=user, timestamp=ts)
    producer.flush()
    producer.close()
    print(f"produced {args.events} events to {EVENTS}")


def per_minute(events):
    """Events (Kafka rows) -> closed one-minute windows of counts per user and action."""
    parsed = events.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
    return (
        parsed.select("e.*")
        .withColumn("event_time", F.timestamp_millis("ts"))
        .withWatermark("event_time", "1 minute")
        .groupBy(F.window("event_time", "1 minute"), "user", "action")
        .count()
        .select(
            F.col("window.start").alias("minute"), "user", "action", F.col("count").alias("events")
        )
    )


def aggregate(args) -> None:
    spark = session()
    events = (
        spark.readStream.format("kafka_ref")
        .option("kafka.bootstrap.servers", args.bootstrap_server)
        .option("subscribe", EVENTS)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 10_000)
        .load()
    )
    counts = per_minute(events)

    def write_both(batch, batch_id: int) -> None:
        # One micro-batch's closed windows go to Parquet and to Kafka. foreachBatch is
        # at-least-once: a batch cut short by a crash runs again on restart, with the same
        # input offsets (SPARK-9), and writes its rows again.
        batch.persist()
        batch.write.mode("append").parquet(os.path.join(args.out, "per_minute"))
        (
            batch.select(
                F.col("user").alias("key"), F.to_json(F.struct("minute", "user", "action",
                                                              "events")).alias("value")
            )
            .write.format("kafka_ref")
            .option("kafka.bootstrap.servers", args.bootstrap_server)
            .option("topic", RESULTS)
            .mode("append")
            .save()
        )  # fmt: skip
        batch.unpersist()

    writer = (
        counts.writeStream.outputMode("append")
        .foreachBatch(write_both)
        .option("checkpointLocation", os.path.join(args.out, "checkpoints"))
    )
    writer = (
        writer.trigger(availableNow=True)
        if args.available_now
        else writer.trigger(processingTime="5 seconds")
    )
    query = writer.start()
    query.awaitTermination()
    print(f"done: {sum(p['numInputRows'] for p in query.recentProgress)} events read")


def show(args) -> None:
    spark = session()
    table = spark.read.parquet(os.path.join(args.out, "per_minute"))
    table.groupBy("action").agg(F.sum("events").alias("events")).orderBy("action").show()
    results = (
        spark.read.format("kafka_ref")
        .option("kafka.bootstrap.servers", args.bootstrap_server)
        .option("subscribe", RESULTS)
        .load()
    )
    results.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)").show(5, truncate=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("produce", "aggregate", "show"))
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--out", default="/tmp/user-activity")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--available-now", action=argparse.BooleanOptionalAction, default=True,
        help="process what is there and stop (default), or keep running",
    )  # fmt: skip
    args = parser.parse_args(argv)
    {"produce": produce, "aggregate": aggregate, "show": show}[args.command](args)


if __name__ == "__main__":
    main()
