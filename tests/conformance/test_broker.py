"""The broker's network and protocol manners: framing, ordering, ApiVersions, Metadata, admin.

These tests poke the connection itself: a frame sent byte by byte, pipelined requests, an
acks=0 produce that must get no answer, an oversized size prefix, an ApiVersions at a
version nobody supports. Each checks that the broker answers exactly as Kafka does, and
that a misbehaving connection is closed alone, without harming the next one.
"""

from __future__ import annotations

import struct
import time

import pytest

from kafka_ref.conformance.wire import batch, decode_batches, fetch_body, retrying
from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsResponse,
    CreatePartitionsRequest,
    DeleteTopicsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
)

UNKNOWN_TOPIC, INVALID_REQUIRED_ACKS, INVALID_TOPIC, UNSUPPORTED_VERSION = 3, 21, 17, 35
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS = 36, 37


@pytest.fixture
def topic(target, wire):
    target.require("create-topics")
    name = target.topic_name("broker")
    assert wire.create_topic(name) == 0
    return name


def metadata_body(topics):
    return MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
        allow_auto_topic_creation=False,
    )


@pytest.mark.spec("BROKER-1", "PROTO-1")
def test_a_frame_sent_byte_by_byte_is_answered(wire):
    frame = frames.encode_request(ApiKey.METADATA, 5, 1, "slow", metadata_body([]))
    wire.pending.append((1, ApiKey.METADATA, 5))
    for i in range(len(frame)):
        wire.send_raw(frame[i : i + 1])
    assert wire.receive().brokers, "the whole frame was read and answered"


@pytest.mark.spec("BROKER-2", "BROKER-3")
def test_pipelined_requests_are_answered_in_order(wire, topic):
    # Wire.receive checks each correlation id against the oldest request in flight
    wire.send(ApiKey.PRODUCE, 7, _produce(topic, batch([b"first"])))
    wire.send(ApiKey.FETCH, 10, fetch_body([(topic, 0, 0)], max_wait_ms=100))
    wire.send(ApiKey.METADATA, 5, metadata_body([topic]))
    produced = wire.receive().responses[0].partition_responses[0]
    fetched = wire.receive().responses[0].partitions[0]
    assert produced.error_code == 0
    # handled in arrival order: the fetch sent after the produce sees its record
    assert [r.value for b in decode_batches(fetched.records) for r in b.records] == [b"first"]
    assert wire.receive().topics[0].name == topic


def _produce(topic, records, acks=-1):
    from kafka_ref.conformance.wire import produce_body

    return produce_body(topic, 0, records, acks)


@pytest.mark.spec("BROKER-4")
def test_acks_zero_gets_no_response(wire, topic):
    wire.produce(topic, 0, batch([b"fire and forget"]), acks=0)
    meta = wire.metadata([topic])  # the next frame on the wire answers this request
    assert meta.topics[0].name == topic
    assert wire.fetch(topic, 0, 0).high_watermark == 1


@pytest.mark.spec("BROKER-13")
def test_acks_must_be_0_1_or_minus_1(wire, topic):
    assert wire.produce(topic, 0, batch([b"x"]), acks=2).error_code == INVALID_REQUIRED_ACKS
    assert wire.fetch(topic, 0, 0).high_watermark == 0
    # A partition that does not exist says so first, whatever the acks.
    assert wire.produce(topic, 7, batch([b"x"]), acks=2).error_code == UNKNOWN_TOPIC


@pytest.mark.spec("BROKER-6", "PROTO-11", "PROTO-3")
def test_api_versions_lists_usable_ranges(target, wire):
    resp = wire.api_versions(3)  # a flexible body under a v0 response header (PROTO-3)
    assert resp.error_code == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert len(ranges) == len(resp.api_keys), "each API listed once"
    assert all(lo <= hi for lo, hi in ranges.values())
    assert ranges[ApiKey.API_VERSIONS][0] == 0 and ranges[ApiKey.API_VERSIONS][1] >= 3
    assert ranges == {k: tuple(v) for k, v in target.capabilities.api_versions.items()}


@pytest.mark.spec("PROTO-14")
def test_an_unsupported_api_versions_version_gets_a_v0_answer(wire):
    # header v2 (ApiVersions v3+ is flexible): key, version, correlation, client id, no tags
    client = b"probe"
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, 127, 77, len(client)) + client + b"\x00"
    body = b"\x02a\x021\x00"  # compact strings "a" and "1", no tagged fields
    wire.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
    payload = wire.read_frame()
    assert struct.unpack(">i", payload[:4])[0] == 77, "response header v0: correlation only"
    resp = ApiVersionsResponse.decode(0, payload[4:])
    assert resp.error_code == UNSUPPORTED_VERSION
    assert ApiKey.API_VERSIONS in {k.api_key for k in resp.api_keys}


@pytest.mark.spec("BROKER-8")
def test_an_oversized_frame_closes_that_connection_only(target, wire):
    wire.send_raw(struct.pack(">i", 2_000_000_000))
    assert wire.is_closed(), "a 2 GB size prefix closes the connection"
    with target.wire() as other:
        assert other.metadata([]).brokers


@pytest.mark.spec("BROKER-9", "PROTO-13")
def test_an_unknown_api_key_closes_that_connection_only(target, wire):
    header = struct.pack(">hhih", 9999, 0, 5, 1) + b"x"
    wire.send_raw(struct.pack(">i", len(header)) + header)
    assert wire.is_closed()
    with target.wire() as other:
        assert other.api_versions(0).error_code == 0


@pytest.mark.spec("BROKER-10", "BROKER-11")
def test_metadata_describes_what_is_asked_and_creates_nothing_unasked(target, wire, topic):
    missing = target.topic_name("missing")
    meta = wire.metadata([topic, missing], auto=False)
    by_name = {t.name: t for t in meta.topics}
    assert by_name[topic].error_code == 0 and len(by_name[topic].partitions) == 1
    assert by_name[missing].error_code == UNKNOWN_TOPIC
    assert wire.metadata([missing], auto=False).topics[0].error_code == UNKNOWN_TOPIC


@pytest.mark.spec("BROKER-12")
def test_one_broker_is_leader_replica_and_isr(target, wire, topic):
    if target.has("multi-broker"):
        pytest.skip("the target has several brokers; the rule is about one")
    meta = wire.metadata([topic])
    (broker,) = meta.brokers
    part = meta.topics[0].partitions[0]
    assert part.leader_id == broker.node_id == meta.controller_id
    assert part.replica_nodes == part.isr_nodes == [broker.node_id]


@pytest.mark.spec("BROKER-21", "BROKER-23")
def test_a_fetch_lists_every_partition_even_without_data(target, wire):
    target.require("create-topics")
    name = target.topic_name("sessionless")
    assert wire.create_topic(name, 2) == 0
    started = time.monotonic()
    resp = wire.request(ApiKey.FETCH, 10, fetch_body([(name, 1, 0), (name, 0, 0)], max_wait_ms=0))
    assert time.monotonic() - started < 5
    assert resp.session_id == 0
    listed = [(t.topic, p.partition_index) for t in resp.responses for p in t.partitions]
    assert listed == [(name, 1), (name, 0)], "every requested partition, in request order"


@pytest.mark.spec("BROKER-22")
def test_a_waiting_fetch_is_answered_by_an_append(target, wire, topic):
    wire.send(ApiKey.FETCH, 10, fetch_body([(topic, 0, 0)], max_wait_ms=10000))
    time.sleep(0.2)
    started = time.monotonic()
    with target.wire() as producer:
        assert producer.produce(topic, 0, batch([b"wake up"])).error_code == 0
    part = wire.receive().responses[0].partitions[0]
    assert time.monotonic() - started < 5, "answered by the append, not by max_wait_ms"
    assert [r.value for b in decode_batches(part.records) for r in b.records] == [b"wake up"]


@pytest.mark.spec("BROKER-30", "BROKER-32")
def test_bad_or_existing_topic_names_are_refused(wire, topic):
    assert wire.create_topic(topic) == TOPIC_ALREADY_EXISTS
    for bad in ("..", "has space", "x" * 250, "slash/name"):
        assert wire.create_topic(bad) == INVALID_TOPIC, bad


@pytest.mark.spec("BROKER-34")
def test_delete_topics_deletes_it(wire, topic):
    body = DeleteTopicsRequest(topic_names=[topic], timeout_ms=10000)
    assert wire.request(ApiKey.DELETE_TOPICS, 3, body).responses[0].error_code == 0
    deadline = time.monotonic() + 10
    while wire.metadata([topic]).topics[0].error_code != UNKNOWN_TOPIC:
        assert time.monotonic() < deadline, "the topic is still described"
        time.sleep(0.1)


@pytest.mark.spec("BROKER-35")
def test_create_partitions_only_grows(target, wire, topic):
    target.require("create-partitions")

    def grow(count):
        body = CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(
                    name=topic, count=count, assignments=None
                )
            ],
            timeout_ms=10000,
            validate_only=False,
        )
        return wire.request(ApiKey.CREATE_PARTITIONS, 1, body).results[0].error_code

    assert grow(1) == INVALID_PARTITIONS, "not a growth"
    assert grow(3) == 0
    wire.wait_for_leader(topic, 3)
    assert len(wire.metadata([topic]).topics[0].partitions) == 3


@pytest.mark.spec("BROKER-44")
def test_find_coordinator_answers_a_broker_of_the_cluster(target, wire):
    target.require("groups")
    body = FindCoordinatorRequest(key=target.group_name(), key_type=0)
    resp = retrying(lambda: wire.request(ApiKey.FIND_COORDINATOR, 1, body))
    assert resp.error_code == 0
    brokers = {(b.node_id, b.port) for b in wire.metadata([]).brokers}
    assert (resp.node_id, resp.port) in brokers
