"""KRaft's requests and responses against Apache Kafka 4.4: its JSON, its controller, its bytes.

kafka-python, the reference of tests/unit/protocol/test_messages.py, bundles no definition
of most KRaft APIs, so these are checked against Kafka itself. Kafka's client jar ships the
message JSON files it generates its classes from (`common/message/VoteRequest.json`...):
every KRaft declaration, and Fetch's, must match its file field for field at Kafka's full
version range (PROTO-22). A running Kafka 4.4 node then serves as the serialization oracle:
every version of every KRaft request, encoded by kafka-ref, is sent to its controller
listener, which must read it (its answer says which field it judged: the cluster id kafka-ref
put where Kafka looks for it), and kafka-ref must decode Kafka's answer exactly, with no byte
left over (PROTO-10). Finally each listener's ApiVersions answer shows what Kafka serves
where, which PROTO-21's declarations follow.
"""

from __future__ import annotations

import json
import os
import uuid
import zipfile

import pytest

from kafka_ref.apache.classpath import classpath
from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import APIS, ApiKey, apis_for_listener
from kafka_ref.protocol.schema import parse_versions
from tests.unit.protocol.test_messages import assert_fields_match

pytestmark = pytest.mark.timeout(240)

# the controller listener's own APIs (ApiVersions, Fetch and DescribeCluster serve both)
KRAFT = sorted(set(apis_for_listener("controller")) - set(apis_for_listener("broker")))
# The KRaft APIs a Kafka 4.4 broker also serves, forwarding them to its controllers (PROTO-21).
FORWARDED_BY_KAFKAS_BROKERS = {
    ApiKey.DESCRIBE_QUORUM,
    ApiKey.UNREGISTER_BROKER,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
}


def kafka_message_json() -> dict[str, dict]:
    """Kafka's message definitions by name, from the kafka-clients jar on its classpath."""
    jar = next(j for j in classpath().split(os.pathsep) if "/kafka-clients-" in j)
    found = {}
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                text = archive.read(name).decode()
                lines = (x for x in text.splitlines() if not x.strip().startswith("//"))
                spec = json.loads("\n".join(lines))
                found[spec["name"]] = spec
    return found


@pytest.mark.spec("PROTO-22")
@pytest.mark.parametrize("key", [ApiKey.FETCH, *KRAFT], ids=lambda k: APIS[k].name)
def test_declaration_is_kafkas_json_at_its_full_range(key):
    definitions = kafka_message_json()
    api = APIS[key]
    for message in (api.request, api.response):
        spec = definitions[message.name]
        assert message.api_key == spec["apiKey"]
        assert message.valid_versions == parse_versions(spec["validVersions"]), message.name
        assert message.flexible_versions == parse_versions(spec["flexibleVersions"])
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        assert_fields_match(message.fields, spec["fields"], message.name, common)
    # Served only where Kafka serves it (its brokers forward four of them; ours do not).
    assert set(api.listeners) <= set(definitions[api.request.name]["listeners"])


@pytest.fixture(scope="module")
def kafka():
    with ApacheKafka(1) as started:
        yield started


def advertised(port: int) -> dict[int, tuple[int, int]]:
    with Wire("127.0.0.1", port) as wire:
        answer = wire.api_versions(3)
    assert answer.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


@pytest.mark.spec("PROTO-21")
def test_kafkas_controller_listener_serves_the_kraft_apis_at_kafka_refs_ranges(kafka):
    node = kafka.nodes[0]
    controller, broker = advertised(node.controller_port), advertised(node.port)
    for key in KRAFT:
        api = APIS[key]
        assert controller.get(key) == (api.min_version, api.max_version), api.name
    # the APIs both listeners serve (CreateTopics, AlterPartition...) are on Kafka's too,
    # at ranges its brokers' removal of old versions narrowed
    for key in set(apis_for_listener("controller")) - set(KRAFT):
        assert key in controller, APIS[key].name
    # Kafka's broker listener lists only the four it forwards: the divergence PROTO-21 names.
    assert {key for key in KRAFT if key in broker} == FORWARDED_BY_KAFKAS_BROKERS


def kraft_requests() -> list[tuple[int, int, object, int]]:
    """(api key, version, request, the error Kafka's controller answers) for every version of
    every KRaft API: a cluster id Kafka's is not, or an id it does not know."""
    m = {key: APIS[key].request for key in KRAFT}
    describe = m[ApiKey.DESCRIBE_QUORUM]
    cases = {
        ApiKey.DESCRIBE_QUORUM: (
            describe(
                topics=[
                    describe.TopicData(
                        topic_name="__cluster_metadata",
                        partitions=[describe.PartitionData(partition_index=0)],
                    )
                ]
            ),
            ErrorCode.NO_ERROR,
        ),
        ApiKey.BROKER_HEARTBEAT: (
            m[ApiKey.BROKER_HEARTBEAT](broker_id=77, broker_epoch=5),
            ErrorCode.STALE_BROKER_EPOCH,
        ),
        ApiKey.UNREGISTER_BROKER: (
            m[ApiKey.UNREGISTER_BROKER](broker_id=77),
            ErrorCode.BROKER_ID_NOT_REGISTERED,
        ),
        ApiKey.CONTROLLER_REGISTRATION: (
            m[ApiKey.CONTROLLER_REGISTRATION](controller_id=77, incarnation_id=uuid.uuid4()),
            ErrorCode.NO_ERROR,
        ),
    }
    wrong_cluster = {"cluster_id": "not-this-cluster"}
    voter = {"voter_id": 9, "voter_directory_id": uuid.uuid4(), **wrong_cluster}
    for key in (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
        cases[key] = (m[key](**wrong_cluster), ErrorCode.INCONSISTENT_CLUSTER_ID)
    cases[ApiKey.FETCH_SNAPSHOT] = (
        m[ApiKey.FETCH_SNAPSHOT](**wrong_cluster),
        ErrorCode.INCONSISTENT_CLUSTER_ID,
    )
    cases[ApiKey.BROKER_REGISTRATION] = (
        m[ApiKey.BROKER_REGISTRATION](broker_id=77, incarnation_id=uuid.uuid4(), **wrong_cluster),
        ErrorCode.INCONSISTENT_CLUSTER_ID,
    )
    for key in (ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER, ApiKey.UPDATE_RAFT_VOTER):
        cases[key] = (m[key](**voter), ErrorCode.INCONSISTENT_CLUSTER_ID)
    cases[ApiKey.ALLOCATE_PRODUCER_IDS] = (
        m[ApiKey.ALLOCATE_PRODUCER_IDS](broker_id=77, broker_epoch=5),
        ErrorCode.STALE_BROKER_EPOCH,
    )
    cases[ApiKey.ASSIGN_REPLICAS_TO_DIRS] = (
        m[ApiKey.ASSIGN_REPLICAS_TO_DIRS](broker_id=77, broker_epoch=5),
        ErrorCode.STALE_BROKER_EPOCH,
    )
    cases[ApiKey.ENVELOPE] = (  # a principal that is not DefaultPrincipalData's bytes
        m[ApiKey.ENVELOPE](
            request_data=b"", request_principal=b"\xff", client_host_address=b"\x7f\0\0\1"
        ),
        ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE,
    )
    assert set(cases) == set(KRAFT)
    return [
        (key, version, request, error)
        for key, (request, error) in sorted(cases.items())
        for version in APIS[key].versions
    ]


@pytest.mark.spec("PROTO-22")
def test_kafkas_controller_reads_every_kraft_request_and_kafka_ref_reads_its_answers(kafka):
    node = kafka.nodes[0]
    answered = []
    for key, version, request, error in kraft_requests():
        with Wire("127.0.0.1", node.controller_port) as wire:
            answer = wire.request(key, version, request)  # decoded exactly, or it raises
        answered.append((APIS[key].name, version, answer.error_code))
        assert answer.error_code == error, (APIS[key].name, version, answer)
        if key == ApiKey.DESCRIBE_QUORUM:
            partition = answer.topics[0].partitions[0]
            assert partition.leader_id == node.node_id
            assert [v.replica_id for v in partition.current_voters] == [node.node_id]
            voter = partition.current_voters[0]
            assert (voter.last_fetch_timestamp > 0) == (version >= 1), version
            assert (voter.replica_directory_id != uuid.UUID(int=0)) == (version >= 2), version
            listeners = [(n.node_id, [x.port for x in n.listeners]) for n in answer.nodes]
            assert listeners == ([(node.node_id, [node.controller_port])] if version >= 2 else [])
    assert len(answered) == sum(len(APIS[key].versions) for key in KRAFT)  # 27
