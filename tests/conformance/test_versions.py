"""The newer versions' meanings, not only their encodings: what Apache Kafka 4.4 answers.

Each test speaks one of the versions a client negotiates with a broker that advertises it
(Fetch v12-v18, ListOffsets v4-v11, Metadata v8-v13, DescribeTopicPartitions, Produce v10-11,
ApiVersions v5) and checks what the version means: a diverging epoch, topic ids, targets
refused below their version, pages of partitions, the leader named in a refusal. A target
that does not advertise the version skips the test, saying so (CONF-1).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafka_ref.conformance.cluster import wait_for
from kafka_ref.conformance.wire import Wire, batch, decode_batches
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    DescribeTopicPartitionsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)

pytestmark = pytest.mark.timeout(120)

ZERO = uuid.UUID(int=0)
NO_OPERATIONS_ASKED = -2147483648


def require_version(target: Any, api_key: int, version: int) -> None:
    if not target.capabilities.supports(api_key, version):
        pytest.skip(f"target does not advertise {ApiKey(api_key).name} v{version}")


def topic_with(target: Any, wire: Wire, hint: str, partitions: int = 1) -> str:
    target.require("create-topics")
    name = target.topic_name(hint)
    assert wire.create_topic(name, partitions) == 0
    return name


def metadata(wire: Wire, version: int, topics: list[Any] | None, **kw: Any) -> Any:
    body = MetadataRequest(topics=topics, allow_auto_topic_creation=False, **kw)
    return wire.request(ApiKey.METADATA, version, body)


def by_name(names: list[str]) -> list[Any]:
    return [MetadataRequest.MetadataRequestTopic(name=n) for n in names]


def list_offsets(wire: Wire, version: int, topic: str, target_ts: int, epoch: int = -1) -> Any:
    """One partition's ListOffsets answer: (error, timestamp, offset, leader epoch)."""
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=0, current_leader_epoch=epoch, timestamp=target_ts
                    )
                ],
            )
        ],
        timeout_ms=5000,
    )
    p = wire.request(ApiKey.LIST_OFFSETS, version, body).topics[0].partitions[0]
    return p.error_code, p.timestamp, p.offset, p.leader_epoch


def fetch(
    wire: Wire,
    version: int,
    topic: str | uuid.UUID,
    offset: int,
    last_fetched_epoch: int = -1,
    **tags: Any,
) -> Any:
    """One partition (0) of a consumer's Fetch; the topic by name, or by id from v13."""
    named = isinstance(topic, str)
    partition = FetchRequest.FetchPartition(
        partition=0,
        current_leader_epoch=-1,
        fetch_offset=offset,
        last_fetched_epoch=last_fetched_epoch,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
        **tags,
    )
    body = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic if named else "",
                topic_id=ZERO if named else topic,
                partitions=[partition],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    return wire.request(ApiKey.FETCH, version, body)


@pytest.mark.spec("BROKER-61")
def test_api_versions_v5_refuses_a_connection_meant_for_another_cluster_or_broker(target, wire):
    require_version(target, ApiKey.API_VERSIONS, 5)
    meta = metadata(wire, 12, [])
    me = next(b.node_id for b in meta.brokers if b.port == target.port)

    def ask(cluster_id: str | None, node_id: int) -> tuple[int, int]:
        body = ApiVersionsRequest(
            client_software_name="conformance",
            client_software_version="1",
            cluster_id=cluster_id,
            node_id=node_id,
        )
        with target.wire() as w:
            answer = w.request(ApiKey.API_VERSIONS, 5, body)
        return answer.error_code, len(answer.api_keys)

    assert ask(None, -1)[0] == 0
    assert ask(meta.cluster_id, me)[0] == 0
    assert ask("not-" + meta.cluster_id, me) == (ErrorCode.REBOOTSTRAP_REQUIRED, 0)
    assert ask(meta.cluster_id, me + 1000) == (ErrorCode.REBOOTSTRAP_REQUIRED, 0)
    assert ask(None, me) == (ErrorCode.INVALID_REQUEST, 0)  # a broker without its cluster
    assert ask(meta.cluster_id, -1) == (ErrorCode.INVALID_REQUEST, 0)


@pytest.mark.spec("BROKER-63")
def test_metadata_carries_topic_ids_and_finds_topics_by_id(target, wire):
    require_version(target, ApiKey.METADATA, 13)
    name = topic_with(target, wire, "ids", partitions=2)
    (described,) = metadata(wire, 10, by_name([name])).topics
    topic_id = described.topic_id
    assert topic_id != ZERO and described.name == name
    t = MetadataRequest.MetadataRequestTopic
    # v12: by id (a name beside it is ignored); an unknown id is never created
    for asked in ([t(topic_id=topic_id, name=None)], [t(topic_id=topic_id, name="other")]):
        (found,) = metadata(wire, 12, asked).topics
        assert (found.error_code, found.name, found.topic_id) == (0, name, topic_id)
        assert len(found.partitions) == 2
    unknown = uuid.uuid4()
    (missing,) = metadata(wire, 12, [t(topic_id=unknown, name=None)]).topics
    assert (missing.error_code, missing.name, missing.topic_id) == (
        ErrorCode.UNKNOWN_TOPIC_ID,
        None,
        unknown,
    )
    # below v12 a topic id is refused
    (refused,) = metadata(wire, 11, [t(topic_id=topic_id, name=name)]).topics
    assert refused.error_code == ErrorCode.INVALID_REQUEST
    # v13: the top-level error code
    assert metadata(wire, 13, by_name([name])).error_code == 0


@pytest.mark.spec("BROKER-62")
def test_authorized_operations_only_when_asked(target, wire):
    require_version(target, ApiKey.METADATA, 8)
    name = topic_with(target, wire, "ops")
    plain = metadata(wire, 8, by_name([name]))
    assert plain.topics[0].topic_authorized_operations == NO_OPERATIONS_ASKED
    assert plain.cluster_authorized_operations == NO_OPERATIONS_ASKED
    asked = metadata(
        wire,
        8,
        by_name([name]),
        include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True,
    )
    describe = 1 << 8  # the suite's principal may at least describe what it created
    assert asked.topics[0].topic_authorized_operations & describe
    assert asked.topics[0].topic_authorized_operations & ~0xFFF == 0  # topic operations only
    assert asked.cluster_authorized_operations != NO_OPERATIONS_ASKED


def describe_partitions(
    wire: Wire, names: list[str], limit: int, cursor: tuple[str, int] | None = None
) -> Any:
    request = DescribeTopicPartitionsRequest
    body = request(
        topics=[request.TopicRequest(name=n) for n in names],
        response_partition_limit=limit,
        cursor=None
        if cursor is None
        else request.Cursor(topic_name=cursor[0], partition_index=cursor[1]),
    )
    return wire.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body)


@pytest.mark.spec("BROKER-64")
def test_describe_topic_partitions_pages_through_partitions_with_a_cursor(target, wire):
    require_version(target, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0)
    small, big = sorted([topic_with(target, wire, "dtp", 2), topic_with(target, wire, "dtp", 3)])
    names = [big, small]  # any order: topics come by name
    pages, cursor = [], None
    while True:
        answer = describe_partitions(wire, names, limit=2, cursor=cursor)
        pages.append([(t.name, [p.partition_index for p in t.partitions]) for t in answer.topics])
        if answer.next_cursor is None:
            break
        cursor = (answer.next_cursor.topic_name, answer.next_cursor.partition_index)
    # 2 partitions a page: the small topic whole, then the big one cut after partition 1
    assert pages[0] == [(small, [0, 1])]
    assert pages[1] == [(big, [0, 1])]
    assert pages[2] == [(big, [2])]
    assert len(pages) == 3
    answer = describe_partitions(wire, names, limit=10)
    assert [(t.name, len(t.partitions), t.error_code) for t in answer.topics] == [
        (small, 2, 0),
        (big, 3, 0),
    ]
    assert answer.next_cursor is None and all(t.topic_id != ZERO for t in answer.topics)
    assert all(p.leader_id >= 0 for t in answer.topics for p in t.partitions)
    # a cursor on a topic not named is an invalid request; so is a negative partition
    for bad in [(big + "-x", 0), (big, -1)]:
        refused = describe_partitions(wire, [big], 10, bad).topics
        assert [(t.name, t.error_code) for t in refused] == [(big, ErrorCode.INVALID_REQUEST)]
    missing = describe_partitions(wire, [small + "-none"], 10).topics[0]
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.spec("BROKER-71")
def test_list_offsets_special_targets_are_known_from_their_versions(target, wire):
    require_version(target, ApiKey.LIST_OFFSETS, 11)
    name = topic_with(target, wire, "targets")
    for ts in ([1000, 1001], [5000], [2000]):  # the largest timestamp in the middle
        assert wire.produce(name, 0, batch([b"v"] * len(ts), ts=ts[0])).error_code == 0
    unsupported = ErrorCode.UNSUPPORTED_VERSION
    assert list_offsets(wire, 6, name, -3)[0] == unsupported
    assert list_offsets(wire, 7, name, -3)[:3] == (0, 5000, 2)  # the record with 5000
    assert list_offsets(wire, 7, name, -4)[0] == unsupported
    assert list_offsets(wire, 8, name, -4)[:3] == list_offsets(wire, 8, name, -2)[:3]
    assert list_offsets(wire, 8, name, -5)[0] == unsupported
    assert list_offsets(wire, 9, name, -5) == (0, -1, -1, -1)  # nothing tiered
    assert list_offsets(wire, 10, name, -6)[0] == unsupported
    assert list_offsets(wire, 11, name, -6) == (0, -1, -1, -1)  # nothing to upload
    assert list_offsets(wire, 11, name, -7)[0] == unsupported  # no such target


@pytest.mark.spec("BROKER-70")
def test_list_offsets_v4_answers_leader_epochs_and_is_fenced(target, wire):
    require_version(target, ApiKey.LIST_OFFSETS, 4)
    name = topic_with(target, wire, "epochs")
    assert wire.produce(name, 0, batch([b"a", b"b"])).error_code == 0
    epoch = wire.metadata([name], version=7).topics[0].partitions[0].leader_epoch
    assert list_offsets(wire, 4, name, -1) == (0, -1, 2, epoch)
    assert list_offsets(wire, 4, name, -2) == (0, -1, 0, epoch)
    assert list_offsets(wire, 4, name, -1, epoch=epoch)[0] == 0
    assert list_offsets(wire, 4, name, -1, epoch=epoch + 1)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert list_offsets(wire, 1, name, -1) == (0, -1, 2, -1)  # v1 has no leader epoch


@pytest.mark.spec("BROKER-66")
def test_a_fetch_naming_its_last_epoch_is_told_where_the_log_diverged(target, wire):
    require_version(target, ApiKey.FETCH, 12)
    name = topic_with(target, wire, "diverge")
    assert wire.produce(name, 0, batch([b"a", b"b", b"c"])).error_code == 0
    epoch = wire.metadata([name], version=7).topics[0].partitions[0].leader_epoch

    def part(offset: int, last_epoch: int) -> Any:
        return (
            fetch(wire, 12, name, offset, last_fetched_epoch=last_epoch).responses[0].partitions[0]
        )

    agreed = part(1, epoch)
    assert agreed.error_code == 0 and agreed.diverging_epoch.epoch == -1
    assert [r.value for b in decode_batches(agreed.records) for r in b.records] == [
        b"a",
        b"b",
        b"c",
    ]
    # a log that went past the end of that epoch here: where the epoch ends, no records
    beyond = part(9, epoch)
    assert beyond.error_code == 0 and not beyond.records
    assert (beyond.diverging_epoch.epoch, beyond.diverging_epoch.end_offset) == (epoch, 3)
    # without the epoch the same offset is out of range; an epoch unknown here as well
    assert part(9, -1).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert part(1, epoch + 1).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


@pytest.mark.spec("BROKER-67")
def test_fetch_v13_names_topics_by_id(target, wire):
    require_version(target, ApiKey.FETCH, 13)
    name = topic_with(target, wire, "fetch-ids")
    assert wire.produce(name, 0, batch([b"by-id"])).error_code == 0
    topic_id = metadata(wire, 10, by_name([name])).topics[0].topic_id
    answer = fetch(wire, 13, topic_id, 0)
    (topic,) = answer.responses
    assert topic.topic_id == topic_id and topic.partitions[0].error_code == 0
    assert [r.value for b in decode_batches(topic.partitions[0].records) for r in b.records] == [
        b"by-id"
    ]
    unknown = uuid.uuid4()
    (refused,) = fetch(wire, 13, unknown, 0).responses
    assert refused.topic_id == unknown
    assert refused.partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


@pytest.mark.spec("BROKER-65")
def test_fetch_v18_kraft_fields_change_nothing(target, wire):
    require_version(target, ApiKey.FETCH, 18)
    name = topic_with(target, wire, "kraft-fields")
    assert wire.produce(name, 0, batch([b"x", b"y"])).error_code == 0
    topic_id = metadata(wire, 10, by_name([name])).topics[0].topic_id
    plain = fetch(wire, 18, topic_id, 0).responses[0].partitions[0]
    tagged = (
        fetch(wire, 18, topic_id, 0, replica_directory_id=uuid.uuid4(), high_watermark=0)
        .responses[0]
        .partitions[0]
    )
    assert (tagged.error_code, tagged.high_watermark, bytes(tagged.records)) == (
        plain.error_code,
        plain.high_watermark,
        bytes(plain.records),
    )
    assert plain.error_code == 0 and plain.high_watermark == 2


@pytest.mark.spec("BROKER-69")
def test_a_broker_refusing_a_produce_or_a_fetch_names_the_leader(brokers, target):
    """A produce to a follower, and a produce and a fetch to a broker without a replica
    (a follower would serve the fetch, BROKER-78), name the leader and its address."""
    require_version(target, ApiKey.PRODUCE, 10)
    require_version(target, ApiKey.FETCH, 16)
    if len(brokers.ids()) < 3:
        pytest.skip("needs a follower and a broker without a replica: three brokers")
    topic = target.topic_name("hints")
    assert brokers.create_topic(topic, 1, 2) == 0
    part = brokers.wait_leader(topic, 0)
    follower = next(r for r in part.replica_nodes if r != part.leader_id)
    outsider = next(b for b in brokers.ids() if b not in part.replica_nodes)
    _, port = brokers.addresses()[part.leader_id]
    body = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=batch([b"x"]))
                ],
            )
        ],
    )
    answers = []
    for broker in (follower, outsider):
        with brokers.wire(broker) as w:
            produced = w.request(ApiKey.PRODUCE, 10, body)
            answers.append((produced, produced.responses[0].partition_responses[0]))
    with brokers.wire(outsider) as w:
        topic_id = metadata(w, 10, by_name([topic])).topics[0].topic_id
        fetched = fetch(w, 16, topic_id, 0)
        answers.append((fetched, fetched.responses[0].partitions[0]))
    for answer, data in answers:
        assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        leader = data.current_leader
        assert (leader.leader_id, leader.leader_epoch) == (part.leader_id, part.leader_epoch)
        assert {e.node_id: e.port for e in answer.node_endpoints} == {part.leader_id: port}


@pytest.mark.spec("BROKER-78")
def test_a_follower_serves_a_consumers_fetch_from_v11(brokers, target):
    require_version(target, ApiKey.FETCH, 11)
    if len(brokers.ids()) < 2:
        pytest.skip("the partition has no follower (a cluster of one)")
    topic = target.topic_name("follower-reads")
    assert brokers.create_topic(topic, 1, 2) == 0
    part = brokers.wait_leader(topic, 0)
    follower = next(r for r in part.replica_nodes if r != part.leader_id)
    with brokers.wire(part.leader_id) as w:
        assert w.produce(topic, 0, batch([b"a", b"b", b"c"]), acks=-1).error_code == 0
    with brokers.wire(follower) as w:
        refused = fetch(w, 10, topic, 0).responses[0].partitions[0]
        assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, "below v11: leader only"

        def served() -> Any:  # the follower's high watermark follows the leader's
            data = fetch(w, 11, topic, 0).responses[0].partitions[0]
            assert data.error_code == ErrorCode.NO_ERROR, data.error_code
            return data if data.high_watermark == 3 else None

        data = wait_for(served, what="the follower's high watermark at 3")
        values = [r.value for b in decode_batches(data.records) for r in b.records]
        assert values == [b"a", b"b", b"c"]
        assert data.preferred_read_replica == -1


@pytest.mark.spec("BROKER-72")
def test_produce_v11_tells_a_transaction_writing_outside_itself_to_abort(target, wire):
    require_version(target, ApiKey.PRODUCE, 11)
    target.require("transactions")
    from kafka_ref.conformance.transactions import TxnProducer

    name = topic_with(target, wire, "abortable", partitions=2)
    # a broker may name a new partition's leader a moment before that leader takes writes
    wait_for(lambda: wire.produce(name, 1, batch([b"before"])).error_code == 0, what="a leader")
    answers = {}
    for version in (10, 11):
        with TxnProducer(target.host, target.port, target.group_name(f"tx{version}")) as p:
            assert p.init() == 0 and p.add(name, 0) == 0
            assert p.produce(name, 0, [b"inside"]).error_code == 0
            records = batch(
                [b"outside"],
                producer_id=p.producer_id,
                producer_epoch=p.epoch,
                base_sequence=0,
                is_transactional=True,
            )
            answers[version] = p.leader.produce(
                name, 1, records, version=version, transactional_id=p.transactional_id
            ).error_code  # partition 1 was never added
            assert p.end(commit=False) == 0
    assert answers == {10: ErrorCode.INVALID_TXN_STATE, 11: ErrorCode.TRANSACTION_ABORTABLE}
