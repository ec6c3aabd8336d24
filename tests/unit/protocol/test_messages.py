"""Every declared message at every declared version: round trips, and Kafka's JSON field lists.

kafka-python 3.x ships Kafka's own message definitions (`ProduceRequest.json`...), so our
declarations can be compared with them field by field: name, type, versions, nullable
versions, tagged versions and tag, flexible-version overrides, defaults, order. A typo in a
version range (the classic bug of hand-written codecs) fails here, not against a client.
"""

import importlib.resources
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.protocol import frames
from kafka_ref.protocol.errors import UnknownApiKeyError
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    ApiVersionsRequest,
    apis_for_listener,
    supported_api_versions,
)
from kafka_ref.protocol.schema import Field, Message, parse_versions
from tests.version_divergences import divergences


def kafka_json(name: str) -> dict:
    # kafka-python 3.x (the test extra) bundles Kafka's message JSON files.
    root = importlib.resources.files("kafka.protocol.schemas.resources")
    text = (root / f"{name}.json").read_text()
    return json.loads("\n".join(x for x in text.splitlines() if not x.strip().startswith("//")))


def json_default(spec: dict, field: Field):
    """The value Kafka's generator gives a field: its `default`, else the implicit one."""
    raw = spec.get("default")
    if raw is None:
        return field.make_default() if field.struct is None else None
    if raw == "null":
        return None
    kind = spec["type"]
    if kind == "bool":
        return raw == "true"
    if kind.startswith("int") or kind.startswith("uint"):
        return int(raw, 0) if isinstance(raw, str) else int(raw)  # "-1" or -1 (Init/ProducerId)
    return raw


def assert_fields_match(
    ours: tuple[Field, ...], theirs: list[dict], where: str, common: dict | None = None
) -> None:
    """`common`: the JSON's `commonStructs` by name, for struct fields declared there."""
    common = common or {}
    newer = ADDED_AFTER_BUNDLED_JSON.get(where, set())
    assert newer <= {f.name for f in ours}, where
    ours = tuple(f for f in ours if f.name not in newer)
    assert [f.name for f in ours] == [s["name"] for s in theirs], f"{where}: field order"
    for field, spec in zip(ours, theirs, strict=True):
        at = f"{where}.{field.name}"
        assert field.type == spec["type"], at
        assert field.versions == parse_versions(spec["versions"]), at
        assert field.nullable_versions == parse_versions(spec.get("nullableVersions", "none")), at
        assert field.tagged_versions == parse_versions(spec.get("taggedVersions", "none")), at
        assert field.tag == spec.get("tag"), at
        assert field.flexible_versions == parse_versions(spec.get("flexibleVersions")), at
        if field.struct is None and not field.is_array:
            assert field.make_default() == json_default(spec, field), f"{at} default"
        if field.struct is not None:
            struct_fields = spec.get("fields") or common[spec["type"].removeprefix("[]")]
            assert_fields_match(field.struct.fields, struct_fields, at, common)
        else:
            assert "fields" not in spec, at


# One hypothesis test per (message, version): each gets a share of the profile's budget.
PER_VERSION = settings(max_examples=max(5, settings().max_examples // 3))
LATENT = settings(max_examples=max(3, settings().max_examples // 6))

# Versions we declare that Kafka 4.x dropped from its JSON (KIP-896), with the reason.
DROPPED_BY_KAFKA_4 = {"ProduceRequest": range(0, 3), "ProduceResponse": range(0, 3)}
# Versions and fields Kafka 4.4 added after the JSON kafka-python 3.0.12 bundles: DeleteGroups
# v3's error message per group; ApiVersions v5 (KIP-1242: the request names the cluster and
# the broker it expects). Their layout was checked against Kafka 4.4's own schemas, and
# ApiVersions v5 is compared with Apache Kafka itself (tests/apache/test_api_versions.py).
NEWER_THAN_BUNDLED_JSON = {
    "DeleteGroupsRequest": range(3, 4),
    "DeleteGroupsResponse": range(3, 4),
    "ApiVersionsRequest": range(5, 6),
    "ApiVersionsResponse": range(5, 6),
}
ADDED_AFTER_BUNDLED_JSON = {
    "DeleteGroupsResponse.Results": {"ErrorMessage"},
    "ApiVersionsRequest": {"ClusterId", "NodeId"},
}
ALL_MESSAGES = [m for api in APIS.values() for m in (api.request, api.response)]
# The inter-broker APIs of ZooKeeper mode have no definition in kafka-python to compare with:
# it bundles the client APIs only, and Kafka 4.0 removed LeaderAndIsr, StopReplica and
# UpdateMetadata with ZooKeeper (and AlterPartition v0-1). Their declarations follow Kafka
# 3.x's JSON files and are checked by round trips through our own codec (below) and by
# the cluster tests, where kafka-ref brokers exchange them.
INTER_BROKER_ONLY = {
    ApiKey.LEADER_AND_ISR,
    ApiKey.STOP_REPLICA,
    ApiKey.UPDATE_METADATA,
    ApiKey.ALTER_PARTITION,
}
# KRaft's APIs but DescribeQuorum (which admin tools send) are not in kafka-python either:
# tests/apache/test_kraft_messages.py compares them with Kafka 4.4's own JSON instead.
KRAFT_ONLY = {
    ApiKey.VOTE,
    ApiKey.BEGIN_QUORUM_EPOCH,
    ApiKey.END_QUORUM_EPOCH,
    ApiKey.FETCH_SNAPSHOT,
    ApiKey.BROKER_REGISTRATION,
    ApiKey.BROKER_HEARTBEAT,
    ApiKey.UNREGISTER_BROKER,
    ApiKey.CONTROLLER_REGISTRATION,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
    ApiKey.UPDATE_RAFT_VOTER,
    ApiKey.ENVELOPE,
    ApiKey.ALLOCATE_PRODUCER_IDS,
    ApiKey.ASSIGN_REPLICAS_TO_DIRS,
}
# KIP-848's consumer group protocol is newer than kafka-python's JSON too:
# tests/apache/test_consumer_group_heartbeat.py compares it with Kafka 4.4's.
KIP_848 = {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}
# KIP-932's share groups too, compared with Kafka 4.4 elsewhere: the share coordinator's state
# APIs (tests/apache/test_share_state.py), ShareFetch and ShareAcknowledge
# (tests/unit/protocol/test_share_messages.py, against the client jar's JSON), the group's
# heartbeat, describe and offsets (tests/apache/test_share_group_heartbeat.py).
KIP_932 = {
    ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE,
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE,
    ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS,
}
WITHOUT_KAFKA_PYTHON = INTER_BROKER_ONLY | KRAFT_ONLY | KIP_848 | KIP_932
WITH_KAFKA_JSON = [m for m in ALL_MESSAGES if m.api_key not in WITHOUT_KAFKA_PYTHON]
HEADERS = [frames.RequestHeader, frames.ResponseHeader]


@pytest.mark.spec("PROTO-6", "PROTO-17")
@pytest.mark.parametrize("message", WITH_KAFKA_JSON + HEADERS, ids=lambda m: m.name)
def test_declaration_matches_kafkas_json(message: Message):
    spec = kafka_json(message.name)
    assert message.api_key == spec.get("apiKey")
    assert message.flexible_versions == parse_versions(spec["flexibleVersions"])
    kafka_versions = parse_versions(spec["validVersions"])
    extra = set(message.valid_versions) - set(kafka_versions)
    known = (
        *DROPPED_BY_KAFKA_4.get(message.name, ()),
        *NEWER_THAN_BUNDLED_JSON.get(message.name, ()),
    )
    assert extra <= set(known), extra
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    assert_fields_match(message.fields, spec["fields"], message.name, common)


@pytest.mark.spec("PROTO-6", "PROTO-7", "PROTO-16", "PROTO-17")
@PER_VERSION
@given(data=st.data())
def test_every_message_round_trips_and_matches_kafka_python(
    schema_values, kafka_python, message_at_version, data
):
    message, version = message_at_version.message, message_at_version.version
    value = data.draw(schema_values.strategy(message, version))
    if message.name == "ApiVersionsResponse":
        value.error_code = 0  # kafka-python reads any error response as v0 (KIP-511)
    encoded = message.encode(version, value)
    decoded = message.decode(version, encoded)
    assert decoded == value
    assert message.encode(version, decoded) == encoded
    if message.api_key in WITHOUT_KAFKA_PYTHON:
        return  # no reference in kafka-python (INTER_BROKER_ONLY, KRAFT_ONLY)
    if version in NEWER_THAN_BUNDLED_JSON.get(message.name, ()):
        return  # newer than kafka-python's classes (NEWER_THAN_BUNDLED_JSON)

    # kafka-python's hand-written 2.x classes: decode our bytes to the same leaves, and
    # encode the same bytes; then our decoder reads their bytes back to the same value.
    kind = message_at_version.kind.capitalize()
    old = kafka_python.old_class(message.api_key, kind, version)
    if old is not None:
        theirs = kafka_python.old_decode(old, encoded)
        codec = message.compiled(version)
        assert kafka_python.their_leaves(theirs, []) == kafka_python.our_leaves(codec, value, [])
        their_bytes = theirs.encode()
        assert their_bytes == encoded
        assert message.decode(version, their_bytes) == value
    # kafka-python's 3.x classes, generated from Kafka's JSON, field by field.
    new_decoded, new_bytes = kafka_python.new_roundtrip(
        kafka_python.new_class(message.api_key, kind), encoded, version
    )
    kafka_python.assert_same_values(message.compiled(version), value, new_decoded)
    assert new_bytes == encoded


def latent_versions():
    """(message, version) for versions Kafka defines above ours: not advertised, but declared."""
    for message in WITH_KAFKA_JSON:
        top = parse_versions(kafka_json(message.name)["validVersions"]).stop - 1
        start = message.valid_versions.start
        for version in range(message.valid_versions.stop, top + 1):
            yield pytest.param(
                message.with_versions(f"{start}-{top}"), version, id=f"{message.name}-v{version}"
            )


@pytest.mark.spec("PROTO-11", "PROTO-7", "PROTO-8")
@pytest.mark.parametrize("message,version", list(latent_versions()))
@LATENT
@given(data=st.data())
def test_widening_a_declaration_is_all_a_new_version_needs(
    schema_values, kafka_python, message, version, data
):
    # Flexible versions of Fetch (12+), Metadata (9+), Produce (9+)... work today: widening
    # the range is the only change. kafka-python's generated classes agree on the bytes.
    value = data.draw(schema_values.strategy(message, version))
    if message.name == "ApiVersionsResponse":
        value.error_code = 0  # kafka-python reads any error response as v0 (KIP-511)
    encoded = message.encode(version, value)
    assert message.decode(version, encoded) == value
    kind = "Request" if message.name.endswith("Request") else "Response"
    theirs = kafka_python.new_class(message.api_key, kind)
    decoded, reencoded = kafka_python.new_roundtrip(theirs, encoded, version)
    kafka_python.assert_same_values(message.compiled(version), value, decoded)
    assert reencoded == encoded


@pytest.mark.spec("PROTO-11")
def test_registry_declares_exactly_the_advertised_ranges():
    assert supported_api_versions() == [
        (ApiKey.PRODUCE, 0, 12),
        (ApiKey.FETCH, 4, 18),
        (ApiKey.LIST_OFFSETS, 1, 11),
        (ApiKey.METADATA, 0, 13),
        (ApiKey.LEADER_AND_ISR, 4, 4),
        (ApiKey.STOP_REPLICA, 3, 3),
        (ApiKey.UPDATE_METADATA, 6, 6),
        (ApiKey.OFFSET_COMMIT, 2, 10),
        (ApiKey.OFFSET_FETCH, 1, 10),
        (ApiKey.FIND_COORDINATOR, 0, 6),
        (ApiKey.JOIN_GROUP, 0, 9),
        (ApiKey.HEARTBEAT, 0, 4),
        (ApiKey.LEAVE_GROUP, 0, 5),
        (ApiKey.SYNC_GROUP, 0, 5),
        (ApiKey.DESCRIBE_GROUPS, 0, 6),
        (ApiKey.LIST_GROUPS, 0, 5),
        (ApiKey.SASL_HANDSHAKE, 0, 1),
        (ApiKey.API_VERSIONS, 0, 5),
        (ApiKey.CREATE_TOPICS, 2, 7),
        (ApiKey.DELETE_TOPICS, 1, 6),
        (ApiKey.DELETE_RECORDS, 0, 2),
        (ApiKey.INIT_PRODUCER_ID, 0, 5),
        (ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4),
        (ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5),
        (ApiKey.ADD_OFFSETS_TO_TXN, 0, 4),
        (ApiKey.END_TXN, 0, 5),
        (ApiKey.WRITE_TXN_MARKERS, 1, 2),
        (ApiKey.TXN_OFFSET_COMMIT, 0, 5),
        (ApiKey.DESCRIBE_ACLS, 1, 3),
        (ApiKey.CREATE_ACLS, 1, 3),
        (ApiKey.DELETE_ACLS, 1, 3),
        (ApiKey.DESCRIBE_CONFIGS, 1, 4),
        (ApiKey.ALTER_CONFIGS, 0, 2),
        (ApiKey.DESCRIBE_LOG_DIRS, 1, 5),
        (ApiKey.SASL_AUTHENTICATE, 0, 2),
        (ApiKey.CREATE_PARTITIONS, 0, 3),
        (ApiKey.DELETE_GROUPS, 0, 3),
        (ApiKey.ELECT_LEADERS, 0, 2),
        (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1),
        (ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1),
        (ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0),
        (ApiKey.OFFSET_DELETE, 0, 0),
        (ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1),
        (ApiKey.ALTER_CLIENT_QUOTAS, 0, 1),
        (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0),
        (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0),
        (ApiKey.ALTER_PARTITION, 0, 3),
        (ApiKey.DESCRIBE_CLUSTER, 0, 2),
        (ApiKey.DESCRIBE_PRODUCERS, 0, 0),
        (ApiKey.DESCRIBE_TRANSACTIONS, 0, 0),
        (ApiKey.LIST_TRANSACTIONS, 0, 2),
        (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1),
        (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1),
        (ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0),
        (ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1),
        (ApiKey.SHARE_GROUP_DESCRIBE, 1, 1),
        (ApiKey.SHARE_FETCH, 1, 2),
        (ApiKey.SHARE_ACKNOWLEDGE, 1, 2),
        (ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, 0),
        (ApiKey.READ_SHARE_GROUP_STATE, 0, 0),
        (ApiKey.WRITE_SHARE_GROUP_STATE, 0, 1),
        (ApiKey.DELETE_SHARE_GROUP_STATE, 0, 0),
        (ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1),
        (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1),
        (ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0),
        (ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0),
    ]
    body = frames.api_versions_body()
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == (
        supported_api_versions()
    )
    for key, api in APIS.items():
        assert api.request.api_key == api.response.api_key == key
        assert api.versions == api.request.valid_versions == api.response.valid_versions


@pytest.mark.spec("PROTO-21")
def test_kraft_apis_are_advertised_and_read_on_the_controller_listener_only():
    kraft = {
        (ApiKey.VOTE, 0, 2),
        (ApiKey.BEGIN_QUORUM_EPOCH, 0, 1),
        (ApiKey.END_QUORUM_EPOCH, 0, 1),
        (ApiKey.DESCRIBE_QUORUM, 0, 2),
        (ApiKey.FETCH_SNAPSHOT, 0, 1),
        (ApiKey.BROKER_REGISTRATION, 0, 4),
        (ApiKey.BROKER_HEARTBEAT, 0, 2),
        (ApiKey.UNREGISTER_BROKER, 0, 0),
        (ApiKey.CONTROLLER_REGISTRATION, 0, 0),
        (ApiKey.ADD_RAFT_VOTER, 0, 1),
        (ApiKey.REMOVE_RAFT_VOTER, 0, 0),
        (ApiKey.UPDATE_RAFT_VOTER, 0, 0),
        (ApiKey.ENVELOPE, 0, 0),
        (ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0),
        (ApiKey.ASSIGN_REPLICAS_TO_DIRS, 0, 0),
    }
    # both kinds of listener: ApiVersions, Fetch (the metadata log is fetched from a
    # controller), DescribeCluster (of the controllers, KIP-919), the administration the
    # active controller decides (a broker forwards it, KBROKER-18), and AlterPartition
    # (ZooKeeper mode's v0, KRaft's v2-3)
    shared = {
        (ApiKey.API_VERSIONS, 0, 5),
        (ApiKey.FETCH, 4, 18),
        (ApiKey.DESCRIBE_CLUSTER, 0, 2),
        (ApiKey.CREATE_TOPICS, 2, 7),
        (ApiKey.DELETE_TOPICS, 1, 6),
        (ApiKey.CREATE_PARTITIONS, 0, 3),
        (ApiKey.ALTER_PARTITION, 0, 3),
        (ApiKey.ALTER_CONFIGS, 0, 2),
        (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1),
        (ApiKey.CREATE_ACLS, 1, 3),
        (ApiKey.DELETE_ACLS, 1, 3),
        (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0),
        (ApiKey.ALTER_CLIENT_QUOTAS, 0, 1),
        (ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1),
        (ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0),
        (ApiKey.ELECT_LEADERS, 0, 2),
    }
    controller = supported_api_versions("controller")
    assert set(controller) == kraft | shared
    broker = supported_api_versions("broker")
    assert not kraft & set(broker) and shared <= set(broker)
    assert set(apis_for_listener("broker")) | set(apis_for_listener("controller")) == set(APIS)
    body = frames.api_versions_body(listener="controller")
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == controller
    # A Vote is read on a controller listener; on a broker's it is an unknown key whose
    # header is in hand, so the broker closes the connection (PROTO-13).
    vote = APIS[ApiKey.VOTE].request(cluster_id="c", voter_id=2)
    payload = frames.encode_request(ApiKey.VOTE, 2, 9, "voter-1", vote)[4:]
    assert frames.decode_request(payload, listener="controller")[1] == vote
    with pytest.raises(UnknownApiKeyError) as refused:
        frames.decode_request(payload)
    assert refused.value.header.correlation_id == 9
    api_versions = frames.encode_request(ApiKey.API_VERSIONS, 3, 1, "c", ApiVersionsRequest())
    for listener in ("broker", "controller"):
        assert frames.decode_request(api_versions[4:], listener=listener)[0].correlation_id == 1


@pytest.mark.spec("PROTO-22")
def test_a_common_struct_is_one_class_for_every_field_that_uses_it():
    response = APIS[ApiKey.DESCRIBE_QUORUM].response
    state = response.ReplicaState
    partition = response.PartitionData(
        leader_id=1,
        current_voters=[state(replica_id=1, log_end_offset=7), state(replica_id=2)],
        observers=[state(replica_id=3, log_end_offset=5, last_fetch_timestamp=1000)],
    )
    value = response(
        topics=[response.TopicData(topic_name="__cluster_metadata", partitions=[partition])]
    )
    for version in range(3):
        decoded = response.decode(version, response.encode(version, value))
        voters, observers = (
            decoded.topics[0].partitions[0].current_voters,
            decoded.topics[0].partitions[0].observers,
        )
        assert type(voters[0]) is type(observers[0]) is state
        expected = 1000 if version >= 1 else -1  # LastFetchTimestamp is v1+
        assert voters[0].log_end_offset == 7 and observers[0].last_fetch_timestamp == expected
    assert decoded == value


@pytest.mark.spec("PROTO-19")
def test_the_divergence_table_names_the_ranges_kafka_ref_serves():
    # The kafka-ref column of PROTO-19's table is the registry's range (tests/apache compares
    # the Kafka column with Apache Kafka itself).
    for key, row in divergences().items():
        api = APIS.get(key)
        assert row.kafka_ref == (api and (api.min_version, api.max_version)), row.name
        assert api is None or row.name == api.name, f"key {key} is {api.name}, not {row.name}"
        assert row.kafka_ref != row.kafka and row.why, row.name


@pytest.mark.spec("PROTO-18")
def test_produce_v0_to_v2_decode_so_they_can_be_answered():
    request = APIS[ApiKey.PRODUCE].request
    for version in (0, 1, 2):
        value = request(acks=1, timeout_ms=10, topic_data=[])
        frame = frames.encode_request(ApiKey.PRODUCE, version, 5, "old", value)
        header, body = frames.decode_request(frame[4:])
        assert header.request_api_version == version and body.transactional_id is None


@pytest.mark.spec("PROTO-9")
def test_produce_records_are_views_into_the_request_frame():
    request = APIS[ApiKey.PRODUCE].request
    batch = bytes(range(61)) * 3
    value = request(
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            request.TopicProduceData(
                name="t", partition_data=[request.PartitionProduceData(index=2, records=batch)]
            )
        ],
    )
    payload = memoryview(frames.encode_request(ApiKey.PRODUCE, 7, 1, "c", value)[4:])
    _, body = frames.decode_request(payload)
    records = body.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is payload.obj
    assert records == batch and body.topic_data[0].topic_id == uuid.UUID(int=0)
