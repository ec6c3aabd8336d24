"""Shared test setup: hypothesis profiles, the `spec` marker and `--mutant`.

Profiles (choose with HYPOTHESIS_PROFILE): `dev` is quick, `ci` is what CI runs (the default
where the CI variable is set, as CI services set it), `deep` is for a long hunt for
counterexamples.

Long campaigns (fault campaigns, thousand-transaction interop runs) have a short form that CI
runs and a full form: `campaign(short, full)` gives the size, the full one when the
environment sets KAFKA_REF_LONG=1 (`make test-long`). Both forms run the same checks.

`--mutant NAME` applies one of kafka_ref/conformance/mutants.py's bugs in this process and
runs only the tests citing the rules it declares: how a mutant of a rule no client can
observe is caught (CONF-3).

`spark` is the one local SparkSession of a test process, for the Spark tests and the lab
analyses alike. A SparkSession costs seconds to start (a JVM, then the first Python data
source query costs more): `local[2]` for this 2-core CI machine, no UI, two shuffle
partitions, UTC, and the workers on this interpreter (PYSPARK_PYTHON) so they import this
checkout's kafka_ref. Its `spark.jars` hold Spark's own Kafka connector
(kafka_ref/spark/connector.py), so `format("kafka")` runs beside `format("kafka_ref")`.
There must be only one: PySpark starts its JVM once per process, with the jars of the first
session's configuration on the driver's classpath; a session without them, started by an
earlier test file on the same worker, left every later `format("kafka")` without its data
source.
"""

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def campaign(short: int, full: int) -> int:
    """The size of a long campaign: `full` when KAFKA_REF_LONG=1, else the short form CI runs."""
    return full if os.environ.get("KAFKA_REF_LONG") == "1" else short


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--mutant", default=None, help="apply this mutant (mutants.py) in process")


def pytest_configure(config: pytest.Config) -> None:
    name = config.getoption("--mutant")
    if name:
        from kafka_ref.conformance.mutants import apply

        apply(name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    name = config.getoption("--mutant")
    if not name:
        return
    from kafka_ref.conformance.mutants import MUTANTS

    rules = set(MUTANTS[name].rules)
    keep = [i for i in items if rules & {r for m in i.iter_markers("spec") for r in m.args}]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # everything is on this machine
    from pyspark.sql import SparkSession

    import kafka_ref.spark
    from kafka_ref.spark import connector

    base = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafka-ref-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(base / "warehouse"))
        .config("spark.local.dir", str(base / "local"))
        .config("spark.sql.streaming.stopTimeout", "30s")
        .config("spark.jars", connector.jars())
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kafka_ref.spark.register(session)
    yield session
    session.stop()
