"""The share coordinator against Apache Kafka 4.4 (spec/share_groups.md SHARE-71, SHARE-80):
its JSON, its answers, its tool.

kafka-python bundles no definition of the state APIs (83-87), so their declarations, and
those of the `__share_group_state` records, are checked field for field against the JSON
files of Kafka's jars. Then one script of state RPCs (FindCoordinator key type 2,
InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
ReadShareGroupStateSummary, DeleteShareGroupState), sent as a client would (Kafka answers
them from any client when no authorizer is set), gets the same answers from a Kafka 4.4
broker and from a kafka-ref broker. Finally Kafka's `kafka-dump-log
--share-group-state-decoder` reads the records kafka-ref wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
import zipfile

import pytest

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.apache.tools import tool_command
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    DeleteShareGroupStateRequest,
    FindCoordinatorRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)
from kafka_ref.protocol.schema import parse_versions
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.share import share_coordinator_records as rec
from kafka_ref.share.persister import SharePartitionKey
from kafka_ref.share.share_coordinator import SHARE_GROUP_STATE_TOPIC
from tests.apache.test_kraft_messages import kafka_message_json
from tests.unit.protocol.test_messages import assert_fields_match

pytestmark = pytest.mark.timeout(300)

STATE_APIS = [
    ApiKey.INITIALIZE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE,
    ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
]
RECORDS = [
    rec.ShareSnapshotKey,
    rec.ShareSnapshotValue,
    rec.ShareUpdateKey,
    rec.ShareUpdateValue,
]
TOPIC, GROUP = "queue", "sq-group"
NOT_READY = {14, 15, 16}  # load in progress, not available, not coordinator
STATE_TOPIC_PARTITIONS = 3


def share_coordinator_json() -> dict[str, dict]:
    """The record definitions of the kafka-share-coordinator jar, by name."""
    jar = os.path.expanduser(
        "~/.m2/repository/org/apache/kafka/kafka-share-coordinator/4.4.0/"
        "kafka-share-coordinator-4.4.0.jar"
    )
    found = {}
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                text = archive.read(name).decode()
                spec = json.loads(
                    "\n".join(x for x in text.splitlines() if not x.strip().startswith("//"))
                )
                found[spec["name"]] = spec
    return found


@pytest.mark.spec("SHARE-80")
@pytest.mark.parametrize("key", STATE_APIS, ids=lambda k: APIS[k].name)
def test_state_apis_match_kafkas_json(key):
    specs = kafka_message_json()
    for message in (APIS[key].request, APIS[key].response):
        spec = specs[message.name]
        assert message.api_key == spec["apiKey"]
        assert message.valid_versions == parse_versions(spec["validVersions"])
        assert message.flexible_versions == parse_versions(spec["flexibleVersions"])
        assert message.listeners == tuple(spec.get("listeners", ["broker"]))
        assert_fields_match(message.fields, spec["fields"], message.name, {})


@pytest.mark.spec("SHARE-71")
@pytest.mark.parametrize("message", RECORDS, ids=lambda m: m.name)
def test_records_match_kafkas_json(message):
    spec = share_coordinator_json()[message.name]
    assert message.valid_versions == parse_versions(spec["validVersions"])
    assert message.flexible_versions == parse_versions(spec["flexibleVersions"])
    assert_fields_match(message.fields, spec["fields"], message.name, {})
    if message.name.endswith("Key"):  # the record type leads the key (the JSON's apiKey)
        expected = rec.SHARE_SNAPSHOT if "Snapshot" in message.name else rec.SHARE_UPDATE
        assert spec["apiKey"] == expected


# ---------------------------------------------------------------------- one script, two brokers
def _one(response):
    """The answer's only partition result."""
    return response.results[0].partitions[0]


def _retry(send):
    """A coordinator still loading its partition, or not found yet: ask again."""
    for _ in range(150):
        answer = send()
        if answer[0] not in NOT_READY:
            return answer
        time.sleep(0.2)
    raise AssertionError(f"no share coordinator: {answer}")


def script(port: int) -> list[tuple]:
    """Run the exchanges on one broker; the normal form of every answer."""
    with Wire("127.0.0.1", port) as wire:
        assert wire.create_topic(TOPIC, 2) == 0
        topic_id = wire.metadata([TOPIC], 12).topics[0].topic_id
        key = SharePartitionKey(GROUP, topic_id, 0)

        def find():
            body = FindCoordinatorRequest(key_type=2, coordinator_keys=[key.coordinator_key])
            c = wire.request(ApiKey.FIND_COORDINATOR, 6, body).coordinators[0]
            return c.error_code, c.key == key.coordinator_key

        def init(state_epoch, start, partition=0, topic=topic_id):
            T = InitializeShareGroupStateRequest
            p = T.PartitionData(partition=partition, state_epoch=state_epoch, start_offset=start)
            body = T(group_id=GROUP, topics=[T.InitializeStateData(topic_id=topic, partitions=[p])])
            r = _one(wire.request(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, body))
            return r.error_code, r.partition

        def read(leader_epoch):
            T = ReadShareGroupStateRequest
            p = T.PartitionData(partition=0, leader_epoch=leader_epoch)
            body = T(group_id=GROUP, topics=[T.ReadStateData(topic_id=topic_id, partitions=[p])])
            r = _one(wire.request(ApiKey.READ_SHARE_GROUP_STATE, 0, body))
            batches = [
                (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in r.state_batches
            ]
            return r.error_code, r.error_message, r.state_epoch, r.start_offset, batches

        def write(state_epoch, leader_epoch, start, batches):
            T = WriteShareGroupStateRequest
            p = T.PartitionData(
                partition=0,
                state_epoch=state_epoch,
                leader_epoch=leader_epoch,
                start_offset=start,
                state_batches=[
                    T.StateBatch(first_offset=f, last_offset=e, delivery_state=s, delivery_count=c)
                    for f, e, s, c in batches
                ],
            )
            body = T(group_id=GROUP, topics=[T.WriteStateData(topic_id=topic_id, partitions=[p])])
            r = _one(wire.request(ApiKey.WRITE_SHARE_GROUP_STATE, 1, body))
            return r.error_code, r.error_message

        def summary():
            T = ReadShareGroupStateSummaryRequest
            p = T.PartitionData(partition=0, leader_epoch=0)
            body = T(
                group_id=GROUP, topics=[T.ReadStateSummaryData(topic_id=topic_id, partitions=[p])]
            )
            r = _one(wire.request(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1, body))
            return r.error_code, r.state_epoch, r.start_offset

        def delete():
            T = DeleteShareGroupStateRequest
            body = T(
                group_id=GROUP,
                topics=[
                    T.DeleteStateData(topic_id=topic_id, partitions=[T.PartitionData(partition=0)])
                ],
            )
            return (_one(wire.request(ApiKey.DELETE_SHARE_GROUP_STATE, 0, body)).error_code,)

        answers = [("find", _retry(find))]
        answers.append(("read uninitialized", _retry(lambda: read(0))))
        answers.append(("init", init(1, 0)))
        answers.append(("init unknown topic", init(1, 0, topic=uuid.uuid4())))
        answers.append(("write", write(1, 1, 0, [(0, 9, 0, 1)])))
        answers.append(("write overlap", write(1, 1, 3, [(2, 4, 2, 1), (9, 9, 4, 2)])))
        answers.append(("read", read(1)))
        answers.append(("write old leader", write(1, 0, -1, [])))
        answers.append(("write old state epoch", write(0, 1, -1, [])))
        answers.append(("read newer leader", read(2)))
        answers.append(("write fenced by the read", write(1, 1, -1, [])))
        answers.append(("summary", summary()))
        answers.append(("init older state epoch", init(0, 5)))
        answers.append(("re-init", init(2, 20)))
        answers.append(("read after re-init", read(2)))
        answers.append(("delete", delete()))
        answers.append(("read deleted", read(2)))
        answers.append(("delete again", delete()))
        return answers


@pytest.fixture(scope="module")
def kafka():
    configs = {"share.coordinator.state.topic.num.partitions": STATE_TOPIC_PARTITIONS}
    with ApacheKafka(1, configs=configs) as started:
        yield started


@pytest.fixture(scope="module")
def kafka_ref(tmp_path_factory):
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path_factory.mktemp("kr")),
        "share.coordinator.state.topic.num.partitions": STATE_TOPIC_PARTITIONS,
    }
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def ours(kafka_ref) -> list[tuple]:
    """The script's answers from kafka-ref (which leaves its records in the state topic)."""
    return script(kafka_ref.port)


@pytest.mark.spec("SHARE-80")
def test_state_rpcs_answer_as_kafka_does(kafka, ours):
    theirs = script(kafka.nodes[0].port)
    for (step, mine), (_, kafkas) in zip(ours, theirs, strict=True):
        assert mine == kafkas, step


@pytest.mark.spec("SHARE-71")
def test_kafka_dump_log_reads_kafka_refs_share_group_state(kafka_ref, ours):
    """Every record the script had kafka-ref write is decoded."""
    log_dir = kafka_ref.broker.config.log_dirs[0]
    segments = [
        os.path.join(log_dir, d, f)
        for d in sorted(os.listdir(log_dir))
        if d.startswith(SHARE_GROUP_STATE_TOPIC + "-")
        for f in sorted(os.listdir(os.path.join(log_dir, d)))
        if f.endswith(".log") and os.path.getsize(os.path.join(log_dir, d, f)) > 0
    ]
    assert segments, "the script wrote no share state"
    command = tool_command(
        "kafka-dump-log", "--share-group-state-decoder", "--files", ",".join(segments)
    )
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    payloads = [line for line in out.splitlines() if "payload:" in line]
    assert any('"type":"0"' in line or '"ShareSnapshot"' in line for line in payloads), out
    assert any('"type":"1"' in line or '"ShareUpdate"' in line for line in payloads), out
    assert "startOffset" in out and "stateBatches" in out, out
    assert "Unknown" not in out and "Error" not in out, out
