"""kafka-ref and Apache Kafka side by side: the versions each serves of every API.

One Apache Kafka 4.4 node (KRaft, formatted with `transaction.version=1`: the transactions
kafka-ref speaks) and one kafka-ref broker are asked the same ApiVersions questions. For
every API kafka-ref implements the two ranges must be equal, or differ exactly as a row of
PROTO-19's table in spec/protocol.md says (both ranges as written there): a range that
changes on either side, or a row left behind once the ranges agree, fails here.
"""

from __future__ import annotations

import pytest

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol.messages import APIS, ApiKey, ApiVersionsRequest, apis_for_listener
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.version_divergences import divergences

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def kafka():
    with ApacheKafka(1, features={"transaction.version": 1}) as started:
        yield started


@pytest.fixture(scope="module")
def kafka_ref(tmp_path_factory):
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path_factory.mktemp("kr"))}
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    yield broker
    broker.stop()


def ranges(port: int) -> dict[int, tuple[int, int]]:
    with Wire("127.0.0.1", port) as wire:
        answer = wire.api_versions(5)
    assert answer.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


@pytest.mark.spec("PROTO-19")
def test_every_api_kafka_ref_implements_has_kafkas_versions_or_a_documented_divergence(
    kafka, kafka_ref
):
    theirs, ours = ranges(kafka.nodes[0].port), ranges(kafka_ref.port)
    assert set(ours) == set(apis_for_listener("broker"))
    table = divergences()
    differences = {
        key: (ours[key], theirs.get(key)) for key in sorted(ours) if ours[key] != theirs.get(key)
    }
    documented = {key: (row.kafka_ref, row.kafka) for key, row in table.items()}
    assert differences == documented, "PROTO-19's table and the two brokers disagree"
    for key, row in table.items():
        assert row.name == APIS[key].name, row


def api_versions_v5(port: int, cluster_id: str | None, node_id: int) -> tuple[int, int]:
    """(error code, any API listed?) of an ApiVersions v5 naming the cluster and node expected."""
    body = ApiVersionsRequest(
        client_software_name="side-by-side",
        client_software_version="1",
        cluster_id=cluster_id,
        node_id=node_id,
    )
    with Wire("127.0.0.1", port) as wire:
        answer = wire.request(ApiKey.API_VERSIONS, 5, body)
    return answer.error_code, bool(answer.api_keys)


@pytest.mark.spec("BROKER-61")
def test_api_versions_v5_judges_the_expected_cluster_and_node_as_kafka_does(kafka, kafka_ref):
    answers = []
    for port in (kafka.nodes[0].port, kafka_ref.port):
        with Wire("127.0.0.1", port) as wire:
            meta = wire.metadata([], version=12)
        cluster, node = meta.cluster_id, meta.brokers[0].node_id
        cases = [
            *[(None, -1), (cluster, node)],  # neither, or the right ones: answered
            *[("another", node), (cluster, node + 1)],  # the wrong cluster or broker
            *[(None, node), (cluster, -1)],  # one without the other
        ]
        answers.append([api_versions_v5(port, c, n) for c, n in cases])
    kafkas, ours = answers
    assert ours == kafkas
    assert kafkas == [(0, True), (0, True), (129, False), (129, False), (42, False), (42, False)]
