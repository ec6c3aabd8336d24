"""The exactly-once example (examples/exactly_once.py), killed with SIGKILL at random moments.

The example runs as a subprocess against a kafka-ref broker; the test kills it (-9) at a
seeded random moment after it is ready, restarts it, and so on, then lets a last run finish.
A read_committed consumer must then find in the output topic each input record's
transformation exactly once: nothing lost, nothing doubled, whatever the kills interrupted.
The campaign's size comes from `campaign(short, full)`: a few kills in CI.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

from kafka_ref.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.conftest import campaign

pytestmark = pytest.mark.timeout(180)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "exactly_once.py")
PARTITIONS, RECORDS = 3, 1200


def start(port: int, client: str, names: dict[str, str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": ROOT}
    argv = [
        sys.executable,
        EXAMPLE,
        "--bootstrap-server",
        f"127.0.0.1:{port}",
        "--client",
        client,
        "--records-per-transaction",
        "20",
        *[f"--{k}={v}" for k, v in names.items()],
    ]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_ready(process: subprocess.Popen) -> None:
    line = process.stdout.readline()
    assert line == b"ready\n", (line, process.stderr.read() if process.poll() is not None else "")


def read_output(port: int, topic: str, expected: int) -> list[bytes]:
    with Consumer(
        f"127.0.0.1:{port}", auto_offset_reset="earliest", isolation_level="read_committed"
    ) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        got += [r.value for r in consumer.poll(1.0)]  # a duplicate would come now
    return got


@pytest.mark.spec("TXN-47")
@pytest.mark.parametrize("client", ["ours", "confluent"])
def test_each_input_is_transformed_exactly_once_across_kill_9(kafka_ref_broker, client):
    port = kafka_ref_broker.port
    tag = uuid.uuid4().hex[:6]
    names = {
        "input": f"eos-in-{tag}",
        "output": f"eos-out-{tag}",
        "group": f"eos-{tag}",
        "transactional-id": f"eos-{tag}",
    }
    with Admin(f"127.0.0.1:{port}") as admin:
        admin.create_topics(
            [NewTopic(names["input"], PARTITIONS, 1), NewTopic(names["output"], PARTITIONS, 1)]
        )
    inputs = [b"record-%d" % i for i in range(RECORDS)]
    with Producer(f"127.0.0.1:{port}", linger_ms=20) as producer:
        for i, value in enumerate(inputs):
            producer.send(names["input"], value, key=b"k%d" % (i % 7))
        producer.flush()
    rng = random.Random(47)
    kills = campaign(3, 25)
    for _ in range(kills):
        process = start(port, client, names)
        wait_ready(process)
        time.sleep(rng.uniform(0.0, 0.6))  # somewhere inside the loop, or after the end
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    final = start(port, client, names)
    wait_ready(final)
    _, err = final.communicate(timeout=120)
    assert final.returncode == 0, err.decode()
    got = read_output(port, names["output"], RECORDS)
    assert len(got) == len(set(got)), "a record was transformed twice"
    assert sorted(got) == sorted(v.upper() for v in inputs)
