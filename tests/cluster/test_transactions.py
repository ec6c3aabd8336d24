"""Transactions on three real brokers: the coordinator, the markers and failover.

A transactional id's coordinator is the broker leading its partition of
`__transaction_state` (TXN-9, TXN-20); a commit's markers go over the wire to whichever
brokers lead the transaction's partitions (TXN-22). Killing the coordinator or a
partition leader with SIGKILL in the middle of a stream of transactions loses no
committed transaction and shows no aborted one (TXN-21); a coordinator that took over
after the decision was logged writes the markers its predecessor could not (TXN-14,
TXN-23); a produce to a partition that is not in the producer's transaction is refused
by the partition's leader, which asks the coordinator (KIP-890, TXN-24).
"""

from __future__ import annotations

import signal
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from kafka_ref.txn.transaction_log import TRANSACTION_STATE_TOPIC, partition_for
from tests.cluster.conftest import BROKER_CONFIGS, wait_for
from tests.cluster.test_controller import create_topic
from tests.conftest import campaign

pytestmark = pytest.mark.timeout(180)

TXN_PARTITIONS = BROKER_CONFIGS["transaction.state.log.num.partitions"]


def producer(cluster, transactional_id: str) -> Producer:
    p = Producer(
        {"bootstrap.servers": cluster.bootstrap(), "transactional.id": transactional_id,
         "transaction.timeout.ms": 30000, "topic.metadata.refresh.interval.ms": 1000,
         "message.timeout.ms": 30000}
    )  # fmt: skip
    p.init_transactions(30)
    return p


def committed_values(cluster, topic: str, expected: int, timeout: float = 30.0) -> list[str]:
    """Every value a read_committed consumer reads from `topic`, once it has `expected` and
    nothing more arrives for a moment (a duplicate or an aborted record would show)."""
    c = Consumer(
        {"bootstrap.servers": cluster.bootstrap(), "group.id": f"check-{uuid.uuid4()}",
         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
         "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000}
    )  # fmt: skip
    values: list[str] = []
    try:
        c.subscribe([topic])
        deadline, quiet_until = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                values.append(msg.value().decode())
            if len(values) >= expected:
                quiet_until = quiet_until or time.monotonic() + 1.5
                if time.monotonic() > quiet_until:
                    break
    finally:
        c.close()
    return values


def txn_leader(cluster, transactional_id: str) -> int:
    state = cluster.state(TRANSACTION_STATE_TOPIC, partition_for(transactional_id, TXN_PARTITIONS))
    return state.leader


@pytest.mark.spec("TXN-20", "TXN-22")
def test_commit_and_abort_across_partitions_led_by_three_brokers(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=3, rf=3)
    leaders = {cluster.state(topic_name, p).leader for p in range(3)}
    assert leaders == {1, 2, 3}, "each partition led by another broker"
    tid = f"tx-{topic_name}"
    p = producer(cluster, tid)
    state = cluster.state(TRANSACTION_STATE_TOPIC, partition_for(tid, TXN_PARTITIONS))
    assert len(state.replicas) == 3 and state.leader in (1, 2, 3)
    wanted = []
    for n in range(6):
        p.begin_transaction()
        values = [f"{n}-{part}" for part in range(3)]
        for part, value in enumerate(values):
            p.produce(topic_name, value.encode(), partition=part)
        if n % 2 == 0:
            p.commit_transaction(30)
            wanted += values
        else:
            p.abort_transaction(30)
    got = committed_values(cluster, topic_name, len(wanted))
    assert sorted(got) == sorted(wanted)
