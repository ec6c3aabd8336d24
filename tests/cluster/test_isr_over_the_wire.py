"""A live follower that stops fetching leaves the ISR, and rejoins once it caught up (ISR-7).

Three broker processes behind the fault campaign's TCP proxies (kafka_ref/conformance/
proxy.py): each broker advertises its proxy, so followers fetch from the leader through it,
and the proxy knows which process is calling. Cutting the leader's proxy for broker 3 only
holds broker 3's fetches, nothing else: broker 3 stays registered in ZooKeeper (alive, its
session untouched), clients and broker 2 still reach the leader. After
`replica.lag.time.max.ms` the leader drops broker 3 from the ISR itself (same leader epoch:
no election); acks=all produces with `min.insync.replicas=2` go on with the ISR {1, 2}; once
the link heals, broker 3 fetches what it missed and the leader adds it back.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.conformance.campaign import ChaosCluster
from kafka_ref.conformance.wire import Wire, batch
from kafka_ref.errors import ErrorCode
from kafka_ref.tools.cluster import zookeeper_installed
from tests.cluster.conftest import wait_for

pytestmark = pytest.mark.timeout(240)
LAG_MS = 2000  # replica.lag.time.max.ms: the leader checks every LAG_MS / 2
FETCH_WAIT_MS = 200  # replica.fetch.wait.max.ms: a follower fetches at least this often
TOPIC = "held"


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    if not zookeeper_installed():
        pytest.fail("ZooKeeper is missing: `make test` installs it (apt-get install zookeeper)")
    configs = {"replica.lag.time.max.ms": LAG_MS, "replica.fetch.wait.max.ms": FETCH_WAIT_MS}
    cluster = ChaosCluster(str(tmp_path_factory.mktemp("isr")), configs, session_timeout_ms=20000)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


def state(cluster):
    found = cluster.zk.get_partition_state(TOPIC, 0, (1, 2, 3))
    return None if found is None else found[0]


def produce_acks_all(cluster, value: bytes) -> int:
    """One acks=all produce to the leader, through its proxy; its error code."""
    with Wire("127.0.0.1", cluster.proxies[1].port, timeout=30) as wire:
        return wire.produce(TOPIC, 0, batch([value]), acks=-1).error_code


@pytest.mark.spec("ISR-7", "ISR-3")
def test_a_held_follower_leaves_the_isr_and_rejoins_after_catching_up(proxied):
    cluster = proxied
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(
        TOPIC, num_partitions=1, replica_assignment=[[1, 2, 3]], config={"min.insync.replicas": "2"}
    )
    admin.create_topics([topic])[TOPIC].result(30)
    wait_for(
        lambda: (
            state(cluster) is not None
            and sorted(state(cluster).isr) == [1, 2, 3]
            and state(cluster).leader == 1
        ),
        what="leader 1 with the full ISR",
    )
    assert produce_acks_all(cluster, b"before") == ErrorCode.NO_ERROR
    epoch = state(cluster).leader_epoch

    cut_at = time.monotonic()
    cluster.proxies[1].cut({3})  # broker 3's connections to broker 1: nothing crosses
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    acked = []
    producer.produce(TOPIC, b"during", partition=0, on_delivery=lambda e, m: acked.append(e))
    wait_for(
        lambda: sorted(state(cluster).isr) == [1, 2],
        timeout=60,
        what="the leader to drop broker 3 from the ISR",
    )
    held = time.monotonic() - cut_at
    assert held >= (LAG_MS - FETCH_WAIT_MS) / 1000 - 0.1, f"shrunk after {held:.2f}s only"
    assert 3 in cluster.zk.get_broker_ids(), "broker 3 is alive: only its fetching is held"
    assert (state(cluster).leader, state(cluster).leader_epoch) == (1, epoch), "no election"
    producer.flush(30)
    assert acked == [None], "the acks=all write waiting for broker 3 completes with {1, 2}"
    for i in range(5):
        assert produce_acks_all(cluster, f"two-{i}".encode()) == ErrorCode.NO_ERROR

    cluster.proxies[1].heal()
    wait_for(
        lambda: sorted(state(cluster).isr) == [1, 2, 3],
        timeout=60,
        what="broker 3 to catch up and rejoin the ISR",
    )
    assert (state(cluster).leader, state(cluster).leader_epoch) == (1, epoch)
    with Wire("127.0.0.1", cluster.proxies[1].port) as wire:  # a rejoined member has them all
        assert wire.list_offset(TOPIC, 0, -1).offset == 1 + 1 + 5
