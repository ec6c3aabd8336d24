"""A broker process with two data directories, through a real client (DUR-13).

Partitions of several topics are spread over the two `log.dirs` (the emptiest takes the
next one), each directory keeps its own checkpoints and meta.properties, and after a clean
stop and after a kill -9 every record is read back.
"""

from __future__ import annotations

import os
import pathlib
import signal

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.log.checkpoints import OffsetCheckpointFile
from kafka_ref.log.log_manager import parse_topic_partition
from tests.interop.conftest import T_BASE, BrokerProcess, Produced, consume_produced, free_port

pytestmark = pytest.mark.timeout(180)

TOPICS = {"dirs-five": 5, "dirs-three": 3}


@pytest.fixture(scope="module")
def two_dir_broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("log-dirs")
    dirs = [str(base / "disk1"), str(base / "disk2")]
    configs = {"log.dirs": ",".join(dirs), "offsets.topic.num.partitions": 2}
    broker = BrokerProcess(str(base / "disk1"), free_port(), configs)
    broker.start()
    yield broker, dirs
    broker.stop()


def partitions_in(log_dir: str) -> set[tuple[str, int]]:
    return {tp for name in os.listdir(log_dir) if (tp := parse_topic_partition(name))}


def read_all(bootstrap: str, expected: int) -> dict[str, list[Produced]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "log-dirs", "enable.auto.commit": False}
    )
    consumer.assign(
        [TopicPartition(t, p, OFFSET_BEGINNING) for t, n in TOPICS.items() for p in range(n)]
    )
    return consume_produced(consumer, TOPICS, expected)


@pytest.mark.spec("DUR-13")
def test_two_log_dirs_serve_and_survive_restarts(two_dir_broker):
    broker, dirs = two_dir_broker
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    for future in futures.values():
        future.result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    reports: list = []
    for topic, count in TOPICS.items():
        for i in range(200):
            producer.produce(
                topic, key=b"%d" % i, value=b"v%d" % i, partition=i % count,
                timestamp=T_BASE + i, on_delivery=lambda err, msg: reports.append((err, msg)),
            )  # fmt: skip
    assert producer.flush(30) == 0
    assert all(err is None for err, _ in reports)
    produced = {topic: [] for topic in TOPICS}
    for _, m in reports:
        produced[m.topic()].append(
            Produced(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1])
        )
    produced = {topic: sorted(records) for topic, records in produced.items()}
    assert read_all(broker.bootstrap, 400) == produced

    held = [partitions_in(d) for d in dirs]
    ours = {(t, p) for t, n in TOPICS.items() for p in range(n)}
    assert ours <= held[0] | held[1] and not held[0] & held[1]  # each in exactly one dir
    assert held[0] & ours and held[1] & ours  # both dirs got partitions of ours
    assert abs(len(held[0]) - len(held[1])) <= 1  # each went to the emptiest dir

    assert broker.stop(signal.SIGTERM) == 0
    cluster_ids = set()
    for log_dir, partitions in zip(dirs, held, strict=True):
        assert os.path.exists(os.path.join(log_dir, ".kafka_cleanshutdown"))
        props = pathlib.Path(log_dir, "meta.properties").read_text()
        cluster_ids |= {line for line in props.splitlines() if line.startswith("cluster.id=")}
        for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
            offsets = OffsetCheckpointFile(os.path.join(log_dir, name)).read()
            assert set(offsets) == partitions, (log_dir, name)  # only this dir's partitions
            for (topic, p), offset in offsets.items():
                if topic in TOPICS:  # the HW / log end: what was produced to the partition
                    assert offset == sum(1 for r in produced[topic] if r.partition == p)
    assert len(cluster_ids) == 1  # both dirs belong to the same cluster

    broker.start()
    assert read_all(broker.bootstrap, 400) == produced
    assert [partitions_in(d) for d in dirs] == held  # nothing moved
    broker.restart(signal.SIGKILL)
    assert "(unclean shutdown)" in broker.log().rsplit("broker 0 started", 2)[-2]
    assert read_all(broker.bootstrap, 400) == produced
