"""Spark's own Kafka connector: the `kafka` format, fetched from Maven Central for its Spark.

This is how a data pipeline really reads and writes Kafka on Spark. Spark ships without its
Kafka connector; a job adds the jars of `org.apache.spark:spark-sql-kafka-0-10_2.13`
(`spark-submit --packages ...`, or `spark.jars`), and then `format("kafka")` names
`org.apache.spark.sql.kafka010.KafkaSourceProvider`, which reads and writes topics with
Apache Kafka's Java client. kafka-ref's `kafka_ref` format (source.py) takes the same
options and gives the same rows, and the tests check it against this connector on the same
topics of a kafka-ref broker (spec/spark.md).

A connector runs only on the Spark it was built for: its classes call Spark's internals
(the connector 4.0.0 on Spark 4.3.0 fails at its first query with
`ClassNotFoundException: org.apache.spark.internal.LogKeys$TOPIC_PARTITIONS$`). So the
version is pinned once, in `kafka_ref/spark/pom.xml`, and `jars()` refuses a PySpark of
another version with one clear error. Maven resolves the connector's runtime classpath
(kafka_ref/maven.py: the jars `--packages` would add), cached; no jar is committed.

    spark = (SparkSession.builder.config("spark.jars", connector.jars()).getOrCreate())
    spark.read.format("kafka").option("kafka.bootstrap.servers", ...)

    python -m kafka_ref.spark.connector --fetch     # what `make test` runs: fetch now
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from kafka_ref import maven

POM = pathlib.Path(__file__).with_name("pom.xml")


class SparkConnectorUnavailable(RuntimeError):
    """Spark's Kafka connector cannot be used here: no Maven, Maven Central refused, or this
    PySpark is not the Spark the connector was built for."""


def version() -> str:
    """The Spark version the pinned connector is built for (the pom's `spark.version`)."""
    return maven.pom_property(POM, "spark.version")


def check_spark_version(spark_version: str) -> None:
    """Refuse a Spark the connector was not built for, before any query fails inside it."""
    if spark_version != version():
        raise SparkConnectorUnavailable(
            f"Spark's Kafka connector {version()} (kafka_ref/spark/pom.xml) needs Spark "
            f"{version()}; this PySpark is {spark_version}: pip install pyspark=={version()}"
        )


def jars(fetch: bool = True) -> str:
    """The connector's jars for `spark.jars` (comma-separated), fetched if not cached."""
    import pyspark

    check_spark_version(pyspark.__version__)
    label = f"Spark Kafka connector {version()}"
    return ",".join(maven.classpath(POM, label, SparkConnectorUnavailable, fetch))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_ref.spark.connector", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--fetch", action="store_true", help="fetch the jars, print them")
    args = parser.parse_args(argv)
    try:
        found = jars(fetch=args.fetch)
    except SparkConnectorUnavailable as e:
        print(e, file=sys.stderr)
        return 2
    print(f"Spark Kafka connector {version()}: {len(found.split(','))} jars")
    return 0


if __name__ == "__main__":
    sys.exit(main())
