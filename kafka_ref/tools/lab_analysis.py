"""What every lab's PySpark analysis needs: a broker to run the student's code against, a
Spark session with kafka-ref's data sources, and a place for the plot and the table.

A lab's `analysis.py` drives a workload through the seams (kafka_ref/seams.py: the student's
code runs wherever KAFKA_REF_SOLUTION says), stops the broker so that every record is on
disk, then reads what the broker wrote with the `kafka_ref_segments` source (one row per
record, with its batch) or the `kafka_ref` topic source, and answers the handout's
questions with a plot (PNG, matplotlib) and a table (Markdown).

    with local_broker(data_dir) as broker:      # a real broker in this process
        ...produce through our clients...
    with spark_for(args.master, scratch) as spark:  # local[*] unless --master says otherwise
        rows = spark.read.format("kafka_ref_segments").load(data_dir)
    print_table(args.out, "lab01.md")

`spark_for` stops the session at the end unless one was running already: a caller that runs
several analyses in one process (the labs' tests) starts Spark once for all of them.

Graders use `LabBroker` for their end-to-end tests: a real broker in the grader's process that
keeps what the student's code raised inside it (in a request handler, a timer or the log
cleaner), so that a test fails at once with that exception instead of waiting for what can
never happen.

Rules: LAB-4 (spec/labs.md).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="where the plot and the table go")
    parser.add_argument("--master", default="local[*]", help="Spark master (local[*])")
    parser.add_argument("--scale", type=float, default=1.0, help="workload size factor")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    return args


@contextlib.contextmanager
def local_broker(data_dir: str, **configs: object) -> Iterator[BrokerThread]:
    """A kafka-ref broker on a free loopback port, stopped cleanly (all on disk) at the end."""
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir}
    props |= {k: str(v) for k, v in configs.items()}
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    try:
        yield broker
    finally:
        broker.stop()


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    """Topics by name -> partitions, replication factor 1."""
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, n, 1) for name, n in topics.items()])


def spark_session(master: str, scratch: str):
    """A quiet Spark session with `kafka_ref` and `kafka_ref_segments` registered."""
    from pyspark.sql import SparkSession

    import kafka_ref.spark

    # Spark's Python workers must be this interpreter: it has kafka-ref, pyarrow and the
    # student's KAFKA_REF_SOLUTION in its environment.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("kafka-ref-lab")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.local.dir", os.path.join(scratch, "spark"))
        .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafka_ref.spark.register(spark)
    return spark


@contextlib.contextmanager
def spark_for(master: str, scratch: str) -> Iterator:
    """`spark_session` for one analysis: stopped at the end unless it was running before."""
    from pyspark import SparkContext

    running = SparkContext._active_spark_context is not None
    spark = spark_session(master, scratch)
    try:
        yield spark
    finally:
        if not running:
            spark.stop()


def print_table(out: str, name: str) -> None:
    """Print the analysis's table (`out`/`name`), the answer a student reads first."""
    with open(os.path.join(out, name)) as table:
        print(table.read())


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


class _Failures(logging.Handler):
    """Keeps the exceptions the broker logs (a request handler or the cleaner that raised)."""

    def __init__(self, errors: list[BaseException]) -> None:
        super().__init__(logging.ERROR)
        self.errors = errors

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.errors.append(record.exc_info[1])


class LabBroker(BrokerThread):
    """A broker for a grader: `errors` holds what the code under test raised inside it;
    `raise_if_failed()` raises the first of them."""

    def __init__(self, props: dict[str, str]) -> None:
        super().__init__(KafkaConfig.from_props(props))
        self.errors: list[BaseException] = []
        self.loop.set_exception_handler(
            lambda loop, context: self.errors.append(
                context.get("exception") or AssertionError(context["message"])
            )
        )
        self._failures = _Failures(self.errors)

    def start(self, timeout: float = 30.0) -> LabBroker:
        logging.getLogger("kafka_ref").addHandler(self._failures)
        super().start(timeout)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        super().stop(timeout)
        logging.getLogger("kafka_ref").removeHandler(self._failures)

    def raise_if_failed(self) -> None:
        if self.errors:
            raise self.errors[0]
