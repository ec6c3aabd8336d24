"""Offsets in transactions with KIP-447's group checks, over the wire (TXN-83, TXN-84).

librdkafka sends TxnOffsetCommit v3 with its consumer's generation and member id: the
offsets of a live member are accepted, those of a member that has left the group are
refused and the transaction must abort. While a transaction's offsets are pending,
OffsetFetch v7 with `require_stable` answers UNSTABLE_OFFSET_COMMIT (the request a
read_committed consumer sends), and without it the previously committed offset.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, OffsetFetchRequest
from tests.interop.conftest import SESSION_TIMEOUT_MS

pytestmark = pytest.mark.timeout(120)


def setup(port: int) -> tuple[str, Producer]:
    topic = f"kip447-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "transactional.id": topic})
    producer.init_transactions(30)
    return topic, producer


def offset_fetch(port: int, group: str, topic: str, require_stable: bool) -> tuple[int, int]:
    """(committed offset, error code) of partition 0, by OffsetFetch v7."""
    body = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
        require_stable=require_stable,
    )
    with Wire("127.0.0.1", port) as wire:
        answer = wire.request(ApiKey.OFFSET_FETCH, 7, body)
    (partition,) = answer.topics[0].partitions
    return partition.committed_offset, partition.error_code


@pytest.mark.spec("TXN-84")
def test_pending_transactional_offsets_are_unstable_for_require_stable(group_broker):
    port = group_broker.port
    topic, producer = setup(port)
    group = f"g-{uuid.uuid4().hex[:6]}"
    outsider = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": group})
    producer.begin_transaction()
    producer.send_offsets_to_transaction(
        [TopicPartition(topic, 0, 7)], outsider.consumer_group_metadata(), 30
    )
    assert offset_fetch(port, group, topic, True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    assert offset_fetch(port, group, topic, False) == (-1, ErrorCode.NO_ERROR)
    producer.commit_transaction(30)
    deadline = time.monotonic() + 10  # the marker reaches __consumer_offsets just after
    while offset_fetch(port, group, topic, True)[1] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert offset_fetch(port, group, topic, True) == (7, ErrorCode.NO_ERROR)
    outsider.close()


@pytest.mark.spec("TXN-83", "TXN-17")
def test_librdkafka_offsets_of_a_member_that_left_are_refused(group_broker):
    port = group_broker.port
    topic, producer = setup(port)
    group = f"g-{uuid.uuid4().hex[:6]}"
    member = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "group.id": group,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "enable.auto.commit": False,
        }
    )
    member.subscribe([topic])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    assert member.assignment(), "the consumer did not join the group"
    metadata = member.consumer_group_metadata()
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition(topic, 0, 3)], metadata, 30)
    producer.commit_transaction(30)
    member.close()  # leaves the group: its member id is gone
    producer.begin_transaction()
    with pytest.raises(KafkaException) as refused:
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 9)], metadata, 30)
    error = refused.value.args[0]
    assert error.code() in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION)
    assert error.txn_requires_abort()
    producer.abort_transaction(30)
    assert offset_fetch(port, group, topic, True) == (3, ErrorCode.NO_ERROR)
