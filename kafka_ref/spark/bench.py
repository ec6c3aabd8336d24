"""Measure the two Spark sources: rows/s of a batch read of N records of S bytes.

    .venv/bin/python -m kafka_ref.spark.bench                  # 1M records of 100 bytes
    .venv/bin/python -m kafka_ref.spark.bench --records 200000 --partitions 4 --json

It starts a broker in this process (a `BrokerThread` on a free port, data in a temporary
directory), creates a topic, produces the records with our producer (acks=all, 64 KiB
batches), then runs on a local SparkSession (`local[*]`):

1. the `kafka_ref` topic source: `read.format("kafka_ref")...write.format("noop")`, which
   fetches every record over the wire, one task per partition;
2. the `kafka_ref_segments` source on the same partitions' directories, which decodes the
   same batches straight from the `.log` files.

The `noop` sink makes Spark read every row and throw it away, the usual way to time a
source alone. Each source is read once to warm up (Python workers, the data source's
planning) and then timed. Timing goals live here, never in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.producer import Producer
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


def produce(bootstrap: str, topic: str, records: int, size: int) -> float:
    value = b"x" * size
    producer = Producer(bootstrap, linger_ms=20, batch_size=65536)
    start = time.perf_counter()
    for i in range(records):
        producer.send(topic, value, key=b"%d" % (i % 1000))
    producer.flush()
    producer.close()
    return time.perf_counter() - start


def timed(df) -> float:
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_ref.spark.bench")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="value bytes per record")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--json", action="store_true", help="one JSON object per source")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    import kafka_ref.spark

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(tmp, "data")
        config = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir}
        with BrokerThread(KafkaConfig.from_props(config)) as broker:
            topic = "spark-bench"
            with Admin(broker.bootstrap) as admin:
                admin.create_topics([NewTopic(topic, args.partitions, 1)])
            produced_s = produce(broker.bootstrap, topic, args.records, args.size)
            print(f"produced {args.records} records in {produced_s:.1f} s", file=sys.stderr)
            spark = (
                SparkSession.builder.master(args.master)
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            kafka_ref.spark.register(spark)
            sources = {
                "kafka_ref": spark.read.format("kafka_ref")
                .option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", topic)
                .load(),
                "kafka_ref_segments": spark.read.format("kafka_ref_segments").load(data_dir),
            }
            for name, df in sources.items():
                timed(df.limit(1000))  # warm up the workers and the source's planning
                seconds = timed(df)
                result = {
                    "what": f"spark batch read ({name})",
                    "records": args.records,
                    "msg_size": args.size,
                    "partitions": args.partitions,
                    "master": args.master,
                    "seconds": round(seconds, 2),
                    "rows/s": round(args.records / seconds),
                    "MB/s": round(args.records * args.size / seconds / 2**20, 1),
                }
                if args.json:
                    print(json.dumps(result))
                else:
                    print(
                        f"{name:20} {result['rows/s']:>10,} rows/s  {result['MB/s']:>6} MB/s  "
                        f"({seconds:.1f} s)"
                    )
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
