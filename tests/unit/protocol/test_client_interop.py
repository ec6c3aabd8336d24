"""Bytes real clients send and expect, compared with ours.

Three sources: golden frames captured from librdkafka (confluent-kafka 2.16.1, librdkafka
2.16.0) and kafka-python 3.0.12 as they connected to a listening socket; kafka-python's
hand-written protocol classes building natural requests, headers and frames included; and
kafka-python reading our KIP-511 answer. The property-based comparison of every message at
every version with kafka-python lives in test_messages.py.
"""

import socket
import threading

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol import frames
from kafka_ref.protocol.errors import ProtocolDecodeError, UnsupportedVersionError
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
    ProduceResponse,
    SyncGroupRequest,
)

# librdkafka's first frame: ApiVersions v3 (flexible, request header v2), correlation id 1.
LIBRDKAFKA_API_VERSIONS = bytes.fromhex(
    "000000400012000300000001000772646b61666b610017636f6e666c75656e742d6b61666b612d707974"
    "686f6e16322e31362e312d72646b61666b612d322e31362e3000"
)
# kafka-python 3.0.12's first frame: ApiVersions v4 (v4 = v3 on the wire).
KAFKA_PYTHON_API_VERSIONS = bytes.fromhex(
    "0000002c0012000400000001000c6b61666b612d707974686f6e000d6b61666b612d707974686f6e0733"
    "2e302e313200"
)


@pytest.mark.spec("PROTO-10")
def test_librdkafkas_metadata_for_every_topic_decodes_as_kafka_reads_it():
    # confluent-kafka 2.16.1's Metadata v13 for every topic (AdminClient.list_topics): a null
    # array in the 4 bytes reserved for its count, then AllowAutoTopicCreation (true),
    # IncludeTopicAuthorizedOperations (false) and the tag buffer, past the body's end
    frame = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")
    header, body = frames.decode_request(frame)
    assert (header.request_api_version, body.topics) == (13, None)
    assert (body.allow_auto_topic_creation, body.include_topic_authorized_operations) == (
        False,
        False,
    )  # read from the reserved zeros, as Kafka reads them
    for other in ("0000000001000001", "00000000010000ff", "000000000100"):  # anything else
        with pytest.raises(ProtocolDecodeError):
            frames.decode_request(bytes.fromhex("0003000d00000003000772646b61666b6100" + other))


@pytest.mark.spec("PROTO-17", "PROTO-12", "PROTO-7")
def test_librdkafkas_first_request_decodes():
    size = frames.read_frame_size(LIBRDKAFKA_API_VERSIONS[:4])
    assert size == len(LIBRDKAFKA_API_VERSIONS) - 4
    header, body = frames.decode_request(LIBRDKAFKA_API_VERSIONS[4:])
    assert (header.request_api_key, header.request_api_version) == (ApiKey.API_VERSIONS, 3)
    assert (header.correlation_id, header.client_id) == (1, "rdkafka")
    assert body.client_software_name == "confluent-kafka-python"
    assert body.client_software_version == "2.16.1-rdkafka-2.16.0"
    # ...and we encode the same request to the same bytes, header v2 included.
    again = frames.encode_request(18, 3, 1, "rdkafka", body)
    assert again == LIBRDKAFKA_API_VERSIONS


@pytest.mark.spec("PROTO-17", "PROTO-3", "PROTO-19")
def test_kafka_pythons_first_request_at_v4_decodes_and_its_answer_reads_back():
    header, body = frames.decode_request(KAFKA_PYTHON_API_VERSIONS[4:])
    assert (header.request_api_version, header.correlation_id) == (4, 1)
    assert (header.client_id, body.client_software_name) == ("kafka-python", "kafka-python")
    answer = frames.encode_response(ApiKey.API_VERSIONS, 4, 1, frames.api_versions_body())

    from kafka.protocol.metadata import ApiVersionsResponse  # kafka-python 3.x

    decoded = ApiVersionsResponse.decode(answer, version=4, header=True, framed=True)
    assert decoded.header.correlation_id == 1 and decoded.error_code == 0
    versions = {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys}
    assert versions[ApiKey.API_VERSIONS] == (0, 5) and versions[ApiKey.FETCH] == (4, 18)


@pytest.mark.spec("PROTO-14", "PROTO-13", "PROTO-3")
def test_an_api_versions_request_above_ours_gets_a_v0_answer_kafka_python_understands():
    frame = bytearray(KAFKA_PYTHON_API_VERSIONS)
    frame[6:8] = (6).to_bytes(2, "big")  # the same request at v6, which no broker knows yet
    with pytest.raises(UnsupportedVersionError) as info:
        frames.decode_request(bytes(frame[4:]))
    header = info.value.header
    assert (header.correlation_id, header.client_id) == (1, "kafka-python")
    answer = frames.unsupported_api_versions_response(header.correlation_id)

    from kafka.protocol.metadata import ApiVersionsResponse  # kafka-python 3.x

    decoded = ApiVersionsResponse.decode(answer, version=4, header=True, framed=True)
    assert decoded.header.correlation_id == 1
    assert decoded.error_code == ErrorCode.UNSUPPORTED_VERSION
    versions = {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys}
    assert versions[ApiKey.API_VERSIONS] == (0, 5)  # so it retries with v5

    from kafka.protocol.old.api_versions import ApiVersionsResponse_v3  # kafka-python 2.x

    old = ApiVersionsResponse_v3.decode(answer, header=True, framed=True)
    assert old.error_code == 35 and (18, 0, 5) in [tuple(k) for k in old.api_keys]


def _old(module, name, version):
    import importlib

    return getattr(importlib.import_module(f"kafka.protocol.old.{module}"), f"{name}_v{version}")


BATCH = bytes(range(70))
CASES = [
    # (api_key, version, our body, kafka-python module, class name, its positional fields)
    (
        0,
        3,
        ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name="events",
                    partition_data=[ProduceRequest.PartitionProduceData(index=3, records=BATCH)],
                )
            ],
        ),
        "produce",
        "ProduceRequest",
        (None, -1, 30000, [("events", [(3, BATCH)])]),
    ),
    (
        0,
        7,
        ProduceRequest(transactional_id="tx", acks=1, timeout_ms=5, topic_data=[]),
        "produce",
        "ProduceRequest",
        ("tx", 1, 5, []),
    ),
    (
        1,
        4,
        FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=52428800,
            isolation_level=1,
            topics=[
                FetchRequest.FetchTopic(
                    topic="t",
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=0, fetch_offset=42, partition_max_bytes=1048576
                        )
                    ],
                )
            ],
        ),
        "fetch",
        "FetchRequest",
        (-1, 500, 1, 52428800, 1, [("t", [(0, 42, 1048576)])]),
    ),
    (
        1,
        10,
        FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=100,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchRequest.FetchTopic(
                    topic="t",
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=1,
                            current_leader_epoch=-1,
                            fetch_offset=7,
                            log_start_offset=-1,
                            partition_max_bytes=9,
                        )
                    ],
                )
            ],
        ),
        "fetch",
        "FetchRequest",
        (-1, 500, 1, 100, 0, 0, -1, [("t", [(1, -1, 7, -1, 9)])], []),
    ),
    (
        2,
        1,
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="t",
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)
                    ],
                )
            ],
        ),
        "list_offsets",
        "ListOffsetsRequest",
        (-1, [("t", [(0, -2)])]),
    ),
    (3, 0, MetadataRequest(topics=[]), "metadata", "MetadataRequest", ([],)),
    (3, 1, MetadataRequest(topics=None), "metadata", "MetadataRequest", (None,)),
    (
        3,
        5,
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="a")], allow_auto_topic_creation=False
        ),
        "metadata",
        "MetadataRequest",
        (["a"], False),
    ),
    (
        8,
        2,
        OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=3,
            member_id="m-1",
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(
                            partition_index=1, committed_offset=42, committed_metadata="meta"
                        )
                    ],
                )
            ],
        ),
        "commit",
        "OffsetCommitRequest",
        ("g", 3, "m-1", -1, [("t", [(1, 42, "meta")])]),
    ),
    (
        9,
        1,
        OffsetFetchRequest(
            group_id="g",
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])],
        ),
        "commit",
        "OffsetFetchRequest",
        ("g", [("t", [0, 1])]),
    ),
    (
        9,
        3,
        OffsetFetchRequest(group_id="g", topics=None),
        "commit",
        "OffsetFetchRequest",
        ("g", None),
    ),
    (10, 0, FindCoordinatorRequest(key="g"), "find_coordinator", "FindCoordinatorRequest", ("g",)),
    (
        10,
        2,
        FindCoordinatorRequest(key="tx", key_type=1),
        "find_coordinator",
        "FindCoordinatorRequest",
        ("tx", 1),
    ),
    (
        11,
        5,
        JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10000,
            rebalance_timeout_ms=300000,
            member_id="",
            group_instance_id="i-1",
            protocol_type="consumer",
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01sub")
            ],
        ),
        "group",
        "JoinGroupRequest",
        ("g", 10000, 300000, "", "i-1", "consumer", [("range", b"\x00\x01sub")]),
    ),
    (
        12,
        3,
        HeartbeatRequest(group_id="g", generation_id=7, member_id="m", group_instance_id=None),
        "group",
        "HeartbeatRequest",
        ("g", 7, "m", None),
    ),
    (
        14,
        1,
        SyncGroupRequest(
            group_id="g",
            generation_id=1,
            member_id="m",
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id="m", assignment=b"a")
            ],
        ),
        "group",
        "SyncGroupRequest",
        ("g", 1, "m", [("m", b"a")]),
    ),
    (18, 0, ApiVersionsRequest(), "api_versions", "ApiVersionsRequest", ()),
    (
        18,
        3,
        ApiVersionsRequest(client_software_name="kafka-ref", client_software_version="0.1"),
        "api_versions",
        "ApiVersionsRequest",
        ("kafka-ref", "0.1"),
    ),
]


@pytest.mark.spec("PROTO-17", "PROTO-12", "PROTO-1")
@pytest.mark.parametrize("case", CASES, ids=[f"{c[4]}-v{c[1]}" for c in CASES])
def test_natural_requests_are_the_frames_kafka_python_sends(case):
    api_key, version, body, module, name, fields = case
    theirs = _old(module, name, version)(*fields)
    theirs.with_header(correlation_id=77, client_id="app")
    frame = theirs.encode(header=True, framed=True)  # header v1, or v2 for flexible versions
    assert frames.encode_request(api_key, version, 77, "app", body) == frame
    header, decoded = frames.decode_request(frame[4:])
    assert (header.correlation_id, header.client_id) == (77, "app")
    assert decoded == body


@pytest.mark.spec("PROTO-17", "PROTO-15")
def test_kafka_python_reads_our_responses():
    metadata = MetadataResponse(
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9092)],
        cluster_id="c",
        controller_id=1,
        topics=[],
    )
    frame = frames.encode_response(ApiKey.METADATA, 5, 9, metadata)
    old = _old("metadata", "MetadataResponse", 5).decode(frame, header=True, framed=True)
    assert old.header.correlation_id == 9 and old.brokers == [(1, "h", 9092, None)]
    produce = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="t",
                partition_responses=[
                    ProduceResponse.PartitionProduceResponse(index=0, error_code=0, base_offset=5)
                ],
            )
        ],
        throttle_time_ms=3,
    )
    frame = frames.encode_response(ApiKey.PRODUCE, 7, 4, produce)
    old = _old("produce", "ProduceResponse", 7).decode(frame, header=True, framed=True)
    assert old.throttle_time_ms == 3 and old.responses[0][1][0] == (0, 0, 5, -1, -1)


def test_the_installed_librdkafka_sends_a_decodable_first_frame():
    """Capture the first frame the installed librdkafka sends: the golden above may age."""
    import confluent_kafka  # the test extra installs it

    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    received = bytearray()

    def accept() -> None:
        conn, _ = server.accept()
        conn.settimeout(10)
        with conn:
            while len(received) < 4 or len(received) < 4 + frames.read_frame_size(received[:4]):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                received.extend(chunk)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": f"127.0.0.1:{port}", "client.id": "rdkafka", "log_level": 0}
    )
    thread.join(10)
    server.close()
    del producer
    header, body = frames.decode_request(bytes(received[4:]))
    assert (header.request_api_key, header.client_id) == (ApiKey.API_VERSIONS, "rdkafka")
    assert header.request_api_version == 3 and body.client_software_name == "confluent-kafka-python"


# An ApiVersions v3 response as a KRaft broker sends it (encoded by kafka-python 3.x): the
# tagged SupportedFeatures (tag 0), FinalizedFeaturesEpoch (1) and FinalizedFeatures (2).
API_VERSIONS_V3_WITH_FEATURES = bytes.fromhex(
    "000002001200000003000000000003001702116d657461646174612e76657273696f6e00010014000108"
    "0000000000000005021702116d657461646174612e76657273696f6e0014001400"
)


@pytest.mark.spec("PROTO-8", "PROTO-17")
def test_api_versions_v3_feature_tags_decode_and_are_left_out_by_default():
    body = ApiVersionsResponse.decode(3, API_VERSIONS_V3_WITH_FEATURES)
    assert [(f.name, f.min_version, f.max_version) for f in body.supported_features] == [
        ("metadata.version", 1, 20)
    ]
    assert body.finalized_features_epoch == 5
    assert body.finalized_features[0].max_version_level == 20
    assert ApiVersionsResponse.encode(3, body) == API_VERSIONS_V3_WITH_FEATURES
    # Our broker has no features: its answer ends with an empty top-level tag buffer.
    ours = ApiVersionsResponse.encode(3, frames.api_versions_body())
    assert ours.endswith(b"\x00\x00\x00\x00" + b"\x00")  # throttle_time_ms 0, then no tags


# The two group requests whose bytes matter most, spelled out: JoinGroup v5 (librdkafka,
# kafka-python 2.3 and KafkaJS send it) and OffsetCommit v2 (kafka-python 2.0.2's commit).
JOIN_GROUP_V5_BODY = (
    "0001"
    "67"  # group_id "g"
    "00002710"  # session_timeout_ms 10000
    "000493e0"  # rebalance_timeout_ms 300000
    "0000"  # member_id "" (a new member)
    "0003"
    "692d31"  # group_instance_id "i-1"
    "0008"
    "636f6e73756d6572"  # protocol_type "consumer"
    "00000001"
    "0005"
    "72616e6765"
    "00000005"
    "0001737562"  # [("range", b"\0\1sub")]
)
OFFSET_COMMIT_V2_BODY = (
    "0001"
    "67"  # group_id "g"
    "00000003"  # generation_id 3
    "0003"
    "6d2d31"  # member_id "m-1"
    "ffffffffffffffff"  # retention_time_ms -1: the broker's default
    "00000001"
    "0001"
    "74"  # one topic "t"
    "00000001"
    "00000001"
    "000000000000002a"
    "0004"
    "6d657461"  # partition 1, offset 42, "meta"
)


@pytest.mark.spec("PROTO-17", "PROTO-1")
@pytest.mark.parametrize(
    "api_key,version,body_hex",
    [(ApiKey.JOIN_GROUP, 5, JOIN_GROUP_V5_BODY), (ApiKey.OFFSET_COMMIT, 2, OFFSET_COMMIT_V2_BODY)],
    ids=["JoinGroup-v5", "OffsetCommit-v2"],
)
def test_group_request_bytes_are_pinned(api_key, version, body_hex):
    _, _, body, module, name, fields = next(c for c in CASES if c[:2] == (api_key, version))
    theirs = _old(module, name, version)(*fields)
    assert theirs.encode() == bytes.fromhex(body_hex)  # kafka-python's body bytes
    assert APIS[api_key].request.encode(version, body) == bytes.fromhex(body_hex)


@pytest.mark.spec("PROTO-17", "PROTO-15")
@pytest.mark.parametrize("version", [0, 2])
def test_kafka_python_reads_our_find_coordinator_response(version):
    ours = FindCoordinatorResponse(
        throttle_time_ms=0, error_code=0, error_message=None, node_id=1, host="h", port=9092
    )
    frame = frames.encode_response(ApiKey.FIND_COORDINATOR, version, 6, ours)
    old = _old("find_coordinator", "FindCoordinatorResponse", version)
    theirs = old.decode(frame, header=True, framed=True)
    assert theirs.header.correlation_id == 6
    assert (theirs.error_code, theirs.node_id, theirs.host, theirs.port) == (0, 1, "h", 9092)
