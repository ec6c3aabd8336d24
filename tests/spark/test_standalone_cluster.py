"""The pipeline on a distributed engine: a Spark standalone cluster (SPARK-16, LAB-4).

Local mode runs every task inside the driver's JVM, so it cannot show that kafka-ref's data
sources work where Spark really runs them: in executors, other processes that get the
reader pickled from the driver and open their own connections to the broker. This test
starts a standalone master and two workers from PySpark's own distribution
(`bin/spark-class org.apache.spark.deploy.master.Master` and `...worker.Worker`, on loopback
ports), then reads a topic through `kafka_ref` and runs lab 02's analysis with
`--master spark://...`, and checks that the work ran in executors on the workers.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pyspark
import pytest

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.producer import Producer
from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(600)
ROOT = pathlib.Path(__file__).resolve().parents[2]
SPARK_CLASS = pathlib.Path(pyspark.__file__).parent / "bin" / "spark-class"


def spark_env() -> dict[str, str]:
    return dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )


def wait_port(port: int, proc: subprocess.Popen, log: pathlib.Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """spark://127.0.0.1:PORT with two workers of one core each."""
    base = tmp_path_factory.mktemp("standalone")
    port = free_port()
    procs = []

    def launch(name: str, *args: str) -> tuple[subprocess.Popen, pathlib.Path]:
        log = base / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(SPARK_CLASS), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=spark_env(),
                start_new_session=True,
            )
        procs.append(proc)
        return proc, log

    try:
        master, log = launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            "0",
        )
        wait_port(port, master, log)
        url = f"spark://127.0.0.1:{port}"
        for i in range(2):
            work = base / f"work-{i}"
            launch(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                "0",
                "--work-dir",
                str(work),
            )
        deadline = time.monotonic() + 90
        while (
            "Registering worker" not in log.read_text()
            or log.read_text().count("Registering worker") < 2
        ):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield url, base
    finally:
        for proc in procs:
            with_group = os.getpgid(proc.pid) if proc.poll() is None else None
            if with_group is not None:
                os.killpg(with_group, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def executor_logs(base: pathlib.Path) -> list[pathlib.Path]:
    return [p for p in base.glob("work-*/app-*/*/stderr") if p.stat().st_size]


# The driver runs in a process of its own: this pytest process already holds the session
# the other Spark tests share (local mode), and a JVM has one SparkContext.
DRIVER = """
import json, sys
from pyspark.sql import SparkSession
import kafka_ref.spark
url, bootstrap = sys.argv[1:3]
spark = (SparkSession.builder.master(url).appName("kafka-ref-standalone")
         .config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
         .config("spark.driver.host", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
kafka_ref.spark.register(spark)
rows = (spark.read.format("kafka_ref").option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "standalone").load())
counted = {r["partition"]: r["count"] for r in rows.groupBy("partition").count().collect()}
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
print(json.dumps({"counted": counted, "executors": executors}))
spark.stop()
"""


@pytest.mark.spec("SPARK-16")
def test_the_topic_source_runs_in_executors_of_a_standalone_cluster(standalone, bootstrap):
    url, base = standalone
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic("standalone", 4, 1)])
    with Producer(bootstrap) as producer:
        for i in range(400):
            producer.send("standalone", b"v%d" % i, key=b"k%d" % (i % 40))
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, url, bootstrap],
        cwd=ROOT,
        env=spark_env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert sum(found["counted"].values()) == 400 and len(found["counted"]) == 4, found
    assert found["executors"] == 2, f"{found['executors']} executors: not on the workers"
    assert executor_logs(base), "no executor ran on a worker"


@pytest.mark.spec("SPARK-16", "LAB-4")
def test_a_lab_analysis_runs_on_the_standalone_cluster(standalone, tmp_path):
    url, _ = standalone
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        str(ROOT / "labs" / "02-producer" / "analysis.py"),
        "--out",
        str(out),
        "--scale",
        "0.1",
        "--master",
        url,
    ]
    env = {k: v for k, v in spark_env().items() if k != "KAFKA_REF_SOLUTION"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert (out / "lab02.png").read_bytes()[:4] == b"\x89PNG"
    assert "records per batch" in (out / "lab02.md").read_text()
