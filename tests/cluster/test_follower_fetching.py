"""Reads from a follower in the client's rack (KIP-392), with librdkafka, on three brokers.

Three kafka-ref brokers in racks a, b and c, with Kafka's rack-aware replica selector
(`replica.selector.class`), in a chroot of the session's ZooKeeper. Topic `racks` has one
partition on [21, 22, 23]: broker 21 (rack a) leads, 22 (rack b) and 23 (rack c) follow. A
confluent-kafka consumer with `client.rack=b` reads it. What shows where its records come
from is each broker's own account, scraped from its metrics as Prometheus would: the bytes
each broker sent consumers of the topic (`BrokerTopicMetrics BytesOutPerSec`), and how many
times each read the partition for a consumer (`TotalFetchRequestsPerSec`). Followers' fetches
count in neither.

While broker 23 is paused (SIGSTOP: alive, still in the ISR, silent), the leader's high
watermark cannot pass what 23 has: a record produced with acks=1 reaches 22's log but not
its high watermark, and the consumer reading from 22 does not get it until 23 wakes up.
"""

from __future__ import annotations

import glob
import os
import signal
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from kafka_ref.client.consumer import Consumer as RefConsumer
from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.common import TopicPartition
from kafka_ref.conformance.wire import decode_batches
from kafka_ref.replication.replica_selector import RACK_AWARE_REPLICA_SELECTOR
from kafka_ref.tools.cluster import BrokerProcess
from kafka_ref.tools.server_process import free_port
from tests.cluster.conftest import wait_for
from tests.conftest import campaign
from tests.unit.server.test_metrics import scrape

pytestmark = pytest.mark.timeout(240)

RACKS = {21: "a", 22: "b", 23: "c"}
LEADER, FOLLOWER, OTHER = 21, 22, 23  # the follower is in the consumer's rack
TOPIC = "racks"
RECORDS = campaign(300, 30_000)


class RackCluster:
    """The three brokers, their metrics ports, and a ZooKeeper client of the chroot."""

    def __init__(self, zookeeper: str, base: str) -> None:
        chroot = f"{zookeeper}/kafka-ref-follower-fetching-{uuid.uuid4().hex[:8]}"  # fresh
        self.metrics_ports = {b: free_port() for b in RACKS}
        self.brokers = {
            b: BrokerProcess(
                b,
                os.path.join(base, f"broker-{b}"),
                chroot,
                configs={
                    "broker.rack": rack,
                    "replica.selector.class": RACK_AWARE_REPLICA_SELECTOR,
                    # a pause of a few seconds must not end 23's session (tickTime 500 ms
                    # allows at most 10 s) nor its place in the ISR (30 s by default)
                    "zookeeper.session.timeout.ms": 10_000,
                    "offsets.topic.num.partitions": 1,
                    "group.initial.rebalance.delay.ms": 0,
                    "metrics.listener": f"http://127.0.0.1:{self.metrics_ports[b]}",
                },
            )
            for b, rack in RACKS.items()
        }
        self.zk = KafkaZkClient(chroot)

    def start(self) -> None:
        """The three brokers started and registered (they start side by side)."""
        for broker in self.brokers.values():
            broker.start()
        self.zk.start(timeout=60)
        wait_for(lambda: self.zk.get_broker_ids() == sorted(RACKS), what="3 brokers")

    def close(self) -> None:
        for broker in self.brokers.values():
            if broker.alive:
                os.kill(broker.pid, signal.SIGCONT)  # a paused broker cannot stop
            broker.stop()
        self.zk.close()

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def isr(self) -> tuple[int, ...]:
        found = self.zk.get_partition_state(TOPIC, 0)
        return () if found is None else tuple(sorted(found[0].isr))

    def meter(self, broker: int, name: str) -> float:
        """A BrokerTopicMetrics counter of the topic on one broker (0 before any count)."""
        samples = scrape(self.metrics_ports[broker])
        return samples.get(
            (f"kafka_server_brokertopicmetrics_{name}_total", (("topic", TOPIC),)), 0
        )

    def log_end_offset(self, broker: int) -> int:
        """One past the last offset in the broker's segment files of racks-0: what its log
        holds, committed or not."""
        directory = os.path.join(self.brokers[broker].data_dir, f"{TOPIC}-0")
        end = 0
        for path in sorted(glob.glob(f"{directory}/*.log")):
            with open(path, "rb") as f:
                for batch in decode_batches(f.read()):  # a batch being written is left out
                    end = batch.last_offset + 1
        return end


@pytest.fixture
def racks(cluster, tmp_path):
    """The three brokers started, `racks` created and its ISR complete."""
    rack_cluster = RackCluster(cluster.zookeeper.connect, str(tmp_path))
    try:
        rack_cluster.start()
        rack_cluster.zk.create_topic(TOPIC, str(uuid.uuid4()), {0: list(RACKS)}, {})
        wait_for(
            lambda: rack_cluster.isr() == tuple(RACKS), timeout=60, what="the ISR [21, 22, 23]"
        )
        yield rack_cluster
    finally:
        rack_cluster.close()


def consume(consumer: Consumer, count: int, timeout: float) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        values.append(message.value())
    return values


@pytest.mark.spec("REPL-16", "REPL-17")
def test_a_consumer_in_rack_b_reads_every_record_from_the_follower_in_rack_b(racks):
    producer = Producer({"bootstrap.servers": racks.bootstrap(), "acks": "all"})
    expected = [b"%06d" % i for i in range(RECORDS)]
    for value in expected:
        producer.produce(TOPIC, value, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": racks.bootstrap(),
            "group.id": "rack-b",
            "client.rack": "b",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        assert consume(consumer, RECORDS, timeout=120) == expected  # each once, in order

        # Every record byte the consumer got, broker 22 sent; the leader only redirected.
        bytes_out = {b: racks.meter(b, "bytesout") for b in RACKS}
        reads = {b: racks.meter(b, "totalfetchrequests") for b in RACKS}
        assert bytes_out[LEADER] == bytes_out[OTHER] == 0, bytes_out
        assert bytes_out[FOLLOWER] > RECORDS * 6  # at least the values
        assert reads[OTHER] == 0 and reads[LEADER] >= 1, reads
        print(
            f"\n{RECORDS} records; bytes sent to consumers per broker: {bytes_out}; "
            f"consumer reads of {TOPIC}-0 per broker: {reads}, "
            f"{reads[FOLLOWER] / sum(reads.values()):.0%} of them by the follower"
        )

        # 23 paused: the leader's HW stays; a record produced now reaches 22's log only
        os.kill(racks.brokers[OTHER].pid, signal.SIGSTOP)
        try:
            producer = Producer({"bootstrap.servers": racks.bootstrap(), "acks": "1"})
            producer.produce(TOPIC, b"uncommitted", partition=0)
            assert producer.flush(30) == 0
            wait_for(
                lambda: racks.log_end_offset(FOLLOWER) == RECORDS + 1,
                what="broker 22 to hold the new record",
            )
            assert consume(consumer, 1, timeout=3) == []  # held by 22, not committed there
        finally:
            os.kill(racks.brokers[OTHER].pid, signal.SIGCONT)
        assert consume(consumer, 1, timeout=60) == [b"uncommitted"]  # 23 caught up: it is
        assert racks.meter(LEADER, "bytesout") == 0
        assert racks.isr() == tuple(RACKS)  # 23 never left: the HW waited for it
    finally:
        consumer.close()


@pytest.mark.spec("REPL-15")
def test_when_the_follower_goes_the_consumer_reads_from_the_leader_again(racks):
    """22 shuts down: it leaves the ISR and the live brokers. The consumer's fetches to it
    fail, librdkafka goes back to the leader, and the leader, with no replica of rack b left
    to name, serves it itself."""
    producer = Producer({"bootstrap.servers": racks.bootstrap(), "acks": "all"})
    for i in range(10):
        producer.produce(TOPIC, b"before-%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": racks.bootstrap(),
            "group.id": "rack-b-again",
            "client.rack": "b",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        assert len(consume(consumer, 10, timeout=60)) == 10
        assert racks.meter(LEADER, "bytesout") == 0  # read from 22
        racks.brokers[FOLLOWER].stop()  # a clean shutdown: out of the ISR at once
        wait_for(lambda: racks.isr() == (LEADER, OTHER), what="22 out of the ISR")
        for i in range(10):
            producer.produce(TOPIC, b"after-%d" % i, partition=0)
        assert producer.flush(30) == 0
        assert consume(consumer, 10, timeout=120) == [b"after-%d" % i for i in range(10)]
        assert racks.meter(LEADER, "bytesout") > 0  # no one else in rack b: the leader
    finally:
        consumer.close()


def read(consumer: RefConsumer, count: int, timeout: float) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(values) < count and time.monotonic() < deadline:
        values.extend(r.value for r in consumer.poll(0.5))
    return values


@pytest.mark.spec("CLIENT-33")
def test_kafka_refs_consumer_follows_the_preferred_read_replica_and_leaves_it(racks):
    """kafka-ref's own consumer with client_rack="b": sent to 22 by the leader, it reads
    there; when 22 shuts down, its fetches fail and it reads from the leader again."""
    producer = Producer({"bootstrap.servers": racks.bootstrap(), "acks": "all"})
    for i in range(20):
        producer.produce(TOPIC, b"before-%d" % i, partition=0)
    assert producer.flush(30) == 0
    with RefConsumer(
        racks.bootstrap(), client_rack="b", auto_offset_reset="earliest", fetch_max_wait_ms=100
    ) as consumer:
        consumer.assign([TopicPartition(TOPIC, 0)])
        assert read(consumer, 20, timeout=60) == [b"before-%d" % i for i in range(20)]
        assert racks.meter(LEADER, "bytesout") == racks.meter(OTHER, "bytesout") == 0
        assert racks.meter(FOLLOWER, "bytesout") > 0
        racks.brokers[FOLLOWER].stop()
        wait_for(lambda: racks.isr() == (LEADER, OTHER), what="22 out of the ISR")
        for i in range(10):
            producer.produce(TOPIC, b"after-%d" % i, partition=0)
        assert producer.flush(30) == 0
        assert read(consumer, 10, timeout=60) == [b"after-%d" % i for i in range(10)]
        assert racks.meter(LEADER, "bytesout") > 0  # no one else in rack b: the leader
