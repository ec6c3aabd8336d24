"""The consumer protocol's bytes (spec/group_assignors.md, ASSIGN-10)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from kafka_ref.client.assignors import Subscription, TopicPartition
from kafka_ref.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

topics = st.text(min_size=1, max_size=8)
partitions = st.lists(
    st.builds(TopicPartition, topics, st.integers(0, 2**31 - 1)), unique=True, max_size=8
).map(lambda tps: tuple(sorted(tps)))
subscriptions = st.builds(
    Subscription,
    st.lists(topics, unique=True, max_size=5).map(tuple),
    partitions,
    st.binary(max_size=16),
    st.integers(-1, 2**31 - 1),
)


def theirs_partitions(cls, tps):
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return [cls.TopicPartition(topic=t, partitions=ps) for t, ps in by_topic.items()]


@pytest.mark.spec("ASSIGN-10")
@given(subscriptions, st.integers(0, 3))
def test_subscription_round_trips_and_matches_kafka_python(sub, version):
    data = encode_subscription(sub, version)
    got_version, got = decode_subscription(data)
    assert got_version == version
    assert got.topics == sub.topics and got.user_data == sub.user_data
    assert got.owned_partitions == (sub.owned_partitions if version >= 1 else ())
    assert got.generation_id == (sub.generation_id if version >= 2 else -1)
    theirs = ConsumerProtocolSubscription(
        version=version,
        topics=list(sub.topics),
        user_data=sub.user_data or None,
        owned_partitions=theirs_partitions(ConsumerProtocolSubscription, sub.owned_partitions),
        generation_id=sub.generation_id,
        rack_id=None,
    )
    assert data == theirs.encode()


@pytest.mark.spec("ASSIGN-10")
@given(partitions, st.binary(max_size=16), st.integers(0, 3))
def test_assignment_round_trips_and_matches_kafka_python(tps, user_data, version):
    data = encode_assignment(tps, user_data, version)
    assert decode_assignment(data) == (version, list(tps), user_data)
    theirs = ConsumerProtocolAssignment(
        version=version,
        assigned_partitions=theirs_partitions(ConsumerProtocolAssignment, tps),
        user_data=user_data or None,
    )
    assert data == theirs.encode()


@pytest.mark.spec("ASSIGN-10")
def test_newer_version_fields_are_ignored_and_bad_lengths_rejected():
    sub = Subscription(("t",), (TopicPartition("t", 1),), b"u", 7)
    future = bytearray(encode_subscription(sub, 3) + b"\x00\x00\x00\x09more")
    future[0:2] = (9).to_bytes(2, "big")
    assert decode_subscription(bytes(future)) == (9, sub)
    with pytest.raises(ValueError):
        decode_subscription(b"\x00\x00\x00\x00\x00\x01\x00\x09t")
    with pytest.raises(ValueError):
        decode_assignment(b"\x00\x00\x00\x00")
    with pytest.raises(ValueError):
        encode_subscription(sub, 4)
