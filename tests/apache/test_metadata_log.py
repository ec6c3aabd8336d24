"""kafka-ref's metadata log beside Apache Kafka's (spec/metadata.md META-1, META-10..META-12).

Three checks against the real thing: the record declarations equal the JSON inside Kafka
4.4's own jars; Kafka's `kafka-dump-log.sh --cluster-metadata-decoder` reads a segment and a
snapshot kafka-ref wrote, and the snapshot a running kafka-ref KRaft node wrote of its
metadata image; and kafka-ref reads the `__cluster_metadata-0` directory of a
running Apache Kafka KRaft node, its log and its snapshots, into the image Kafka built.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import time
import uuid
import zipfile

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.apache.classpath import classpath
from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.apache.tools import tool_command
from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.metadata import records as r
from kafka_ref.metadata.batches import build_metadata_batch, read_metadata_batches
from kafka_ref.metadata.image import load
from kafka_ref.metadata.records import METADATA_RECORDS
from kafka_ref.metadata.serde import ApiMessageAndVersion
from kafka_ref.metadata.snapshot import (
    OffsetAndEpoch,
    list_snapshots,
    read_snapshot,
    snapshot_batches,
    snapshot_file_name,
    write_snapshot,
)
from kafka_ref.protocol.schema import Field, Message, parse_versions, snake_case
from kafka_ref.record.control import ControlRecordType
from kafka_ref.record.kraft_control import (
    KRAFT_CONTROL_MESSAGES,
    LeaderChangeMessage,
    build_kraft_control_batch,
)
from kafka_ref.tools.cluster import KRaftNodeProcess
from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(240)

# -- META-1: the declarations are Kafka's ---------------------------------------------------


def kafka_json(jar_name: str, folder: str) -> dict[str, dict]:
    """The message JSON files inside one of Kafka's jars, by message name (comments dropped)."""
    (jar,) = [p for p in classpath().split(os.pathsep) if os.path.basename(p) == jar_name]
    found = {}
    with zipfile.ZipFile(jar) as archive:
        for name in archive.namelist():
            if name.startswith(folder) and name.endswith(".json"):
                text = re.sub(r"^\s*//.*$", "", archive.read(name).decode(), flags=re.M)
                message = json.loads(text)
                found[message["name"]] = message
    return found


def declared(fields: tuple[Field, ...]) -> list[tuple]:
    return [
        (
            f.name,
            f.type,
            f.versions,
            f.nullable_versions,
            f.tagged_versions,
            f.tag,
            declared(f.struct.fields) if f.struct else [],
        )
        for f in fields
    ]


def from_json(fields: list[dict], common: dict[str, list[dict]]) -> list[tuple]:
    return [
        (
            f["name"],
            f["type"],
            parse_versions(f["versions"]),
            parse_versions(f.get("nullableVersions")) or range(0),
            parse_versions(f.get("taggedVersions")) or range(0),
            f.get("tag"),
            from_json(f.get("fields") or common.get(f["type"].removeprefix("[]"), []), common),
        )
        for f in fields
    ]


def assert_same_declaration(ours: Message, theirs: dict) -> None:
    common = {s["name"]: s["fields"] for s in theirs.get("commonStructs", [])}
    assert ours.api_key == theirs.get("apiKey"), ours.name
    assert ours.valid_versions == parse_versions(theirs["validVersions"]), ours.name
    assert ours.flexible_versions == parse_versions(theirs["flexibleVersions"]), ours.name
    assert declared(ours.fields) == from_json(theirs["fields"], common), ours.name


@pytest.mark.spec("META-1")
def test_every_metadata_record_is_declared_as_in_kafkas_jar():
    version = re.compile(r"kafka-metadata-[\d.]+\.jar")
    (jar,) = {
        os.path.basename(p)
        for p in classpath().split(os.pathsep)
        if version.match(os.path.basename(p))
    }
    theirs = kafka_json(jar, "common/metadata/")
    assert sorted(m.name for m in METADATA_RECORDS.values()) == sorted(theirs)
    for message in METADATA_RECORDS.values():
        assert_same_declaration(message, theirs[message.name])


@pytest.mark.spec("META-4")
def test_the_kraft_control_records_are_declared_as_in_kafkas_jar():
    version = re.compile(r"kafka-clients-[\d.]+\.jar")
    (jar,) = {
        os.path.basename(p)
        for p in classpath().split(os.pathsep)
        if version.match(os.path.basename(p))
    }
    theirs = kafka_json(jar, "common/message/")
    for message in KRAFT_CONTROL_MESSAGES.values():
        assert_same_declaration(message, theirs[message.name])


# -- META-10: Kafka's dump-log reads what kafka-ref wrote -----------------------------------

TOPIC_ID = uuid.UUID("5d7f1c86-9a3b-4a52-a6f1-3f1e3a0c1b2d")
CHANGE = r.PartitionChangeRecord(
    partition_id=0, topic_id=TOPIC_ID, isr=[1], leader=1, eligible_leader_replicas=[2]
)


def dump(path: str) -> list[str]:
    done = subprocess.run(
        tool_command("kafka-dump-log", "--cluster-metadata-decoder", "--files", path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.spec("META-10")
def test_kafka_dump_log_decodes_a_segment_and_a_snapshot_kafka_ref_wrote(tmp_path):
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    every = [ApiMessageAndVersion.of(m()) for m in METADATA_RECORDS.values()]
    topic = ApiMessageAndVersion.of(r.TopicRecord(name="clicks", topic_id=TOPIC_ID))
    entries = [topic, ApiMessageAndVersion.of(CHANGE), *every]
    leader = LeaderChangeMessage(
        version=0, leader_id=1, voters=[LeaderChangeMessage.Voter(voter_id=1)]
    )
    segment = build_kraft_control_batch(
        [(ControlRecordType.LEADER_CHANGE, leader)], base_offset=0, leader_epoch=4, timestamp=7
    ) + build_metadata_batch(entries, base_offset=1, leader_epoch=4, append_time=8)
    log = directory / "00000000000000000000.log"
    log.write_bytes(segment)

    lines = dump(str(log))
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert len(batches) == 2 and all("isvalid: true" in b for b in batches)
    assert "partitionLeaderEpoch: 4" in batches[0] and "producerId: -1" in batches[1]
    assert any('LeaderChange: {"version":0,"leaderId":1' in line for line in lines)
    payloads = [json.loads(line.split("payload: ", 1)[1]) for line in lines if "payload: " in line]
    assert [(p["type"], p["version"]) for p in payloads] == [
        (snake_case(e.name).upper(), e.version) for e in entries
    ]
    assert payloads[0]["data"] == {"name": "clicks", "topicId": "XX8chpo7SlKm8T8eOgwbLQ"}
    assert payloads[1]["data"]["isr"] == [1] and payloads[1]["data"]["eligibleLeaderReplicas"] == [
        2
    ]

    sid = OffsetAndEpoch(len(entries) + 1, 4)
    image = load(
        [
            ApiMessageAndVersion.of(
                r.FeatureLevelRecord(name="metadata.version", feature_level=27)
            ),
            *entries[:1],
        ]
    )
    snapshot = snapshot_batches(sid, image.records(), last_contained_log_timestamp=8, now=9)
    lines = dump(write_snapshot(str(directory), sid, snapshot))
    assert f"Snapshot end offset: {sid.offset}, epoch: {sid.epoch}" in lines
    assert any('SnapshotHeader {"version":0,"lastContainedLogTimestamp":8}' in x for x in lines)
    assert any('SnapshotFooter {"version":0}' in x for x in lines)
    assert sum('"type":"TOPIC_RECORD"' in x for x in lines) == 1


# -- META-11: kafka-ref reads what Kafka wrote ----------------------------------------------


@pytest.fixture(scope="module")
def kafka_metadata_dir(tmp_path_factory):
    """A KRaft node's `__cluster_metadata-0` after two topics were created and a snapshot
    taken that holds them (snapshots every 500 ms of new records), the node stopped."""
    workdir = str(tmp_path_factory.mktemp("apache-kafka"))
    kafka = ApacheKafka(1, {"metadata.log.max.snapshot.interval.ms": 500}, workdir=workdir)
    with kafka:
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        created = admin.create_topics([NewTopic("meta-a", 3, 1), NewTopic("meta-b", 1, 1)])
        for future in created.values():
            future.result(30)
        directory = os.path.join(kafka.nodes[0].data_dir, "__cluster_metadata-0")
        deadline = time.monotonic() + 60
        while not snapshot_has_topics(directory):
            assert time.monotonic() < deadline, (
                f"no snapshot with the topics: {os.listdir(directory)}"
            )
            time.sleep(0.2)
    return directory


def snapshot_has_topics(directory: str) -> bool:
    newest = list_snapshots(directory)[-1]
    snapshot = read_snapshot(os.path.join(directory, snapshot_file_name(newest)))
    return {"meta-a", "meta-b"} <= {
        e.message.name for e in snapshot.records if e.name == "TopicRecord"
    }


@pytest.mark.spec("META-11")
def test_kafka_ref_reads_a_kafka_nodes_metadata_log_and_snapshots(kafka_metadata_dir):
    with open(os.path.join(kafka_metadata_dir, "00000000000000000000.log"), "rb") as f:
        batches = list(read_metadata_batches(f.read()))
    records = [e for b in batches for e in b.records]
    kinds = collections.Counter(e.name for e in records)
    assert kinds["TopicRecord"] == 2 and kinds["PartitionRecord"] == 4
    assert kinds["RegisterBrokerRecord"] >= 1 and kinds["FeatureLevelRecord"] >= 1
    controls = {t for b in batches for t, _ in b.control}
    assert ControlRecordType.LEADER_CHANGE in controls
    assert all(b.records or b.control for b in batches)

    from_log = load(records)
    assert {t.name: len(t.partitions) for t in from_log.topics.values()} == {
        "meta-a": 3,
        "meta-b": 1,
    }
    assert 1 in from_log.brokers and from_log.features["metadata.version"] > 0

    snapshots = list_snapshots(kafka_metadata_dir)
    assert snapshots[0] == OffsetAndEpoch(0, 0)  # the bootstrap snapshot `format` wrote
    for sid in snapshots:
        read_snapshot(os.path.join(kafka_metadata_dir, snapshot_file_name(sid)))  # every one reads
    newest = read_snapshot(os.path.join(kafka_metadata_dir, snapshot_file_name(snapshots[-1])))
    tail = [e for b in batches if b.base_offset >= newest.snapshot_id.offset for e in b.records]
    assert load(tail, load(newest.records)) == from_log


# -- META-12: Kafka's dump-log reads the snapshot a running kafka-ref node wrote -----------


@pytest.mark.spec("META-12")
def test_kafka_dump_log_decodes_the_snapshot_a_kafka_ref_node_wrote(tmp_path):
    voters = {1: free_port()}
    node = KRaftNodeProcess(
        1,
        str(tmp_path / "node-1"),
        new_cluster_id(),
        voters,
        configs={"metadata.log.max.record.bytes.between.snapshots": 1024},
    )
    directory = tmp_path / "node-1" / "data" / "__cluster_metadata-0"
    try:
        node.start(timeout=60)
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        names = [f"snapshotted-{i}" for i in range(8)]
        for future in admin.create_topics([NewTopic(n, 2, 1) for n in names]).values():
            future.result(30)
        deadline = time.monotonic() + 60
        while not [s for s in list_snapshots(str(directory)) if s.offset > 0]:
            assert time.monotonic() < deadline, "no snapshot written"
            time.sleep(0.2)
    finally:
        node.stop()
    sid = max(list_snapshots(str(directory)))
    path = str(directory / snapshot_file_name(sid))
    ours = read_snapshot(path)
    image = load(ours.records)
    lines = dump(path)
    assert f"Snapshot end offset: {sid.offset}, epoch: {sid.epoch}" in lines
    assert any("SnapshotHeader" in x for x in lines) and any("SnapshotFooter" in x for x in lines)
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert batches and all("isvalid: true" in b for b in batches)
    payloads = [json.loads(line.split("payload: ", 1)[1]) for line in lines if "payload: " in line]
    # every record of the image, in its order: features first, metadata.version before others
    assert [p["type"] for p in payloads] == [snake_case(e.name).upper() for e in image.records()]
    assert payloads[0]["data"]["name"] == "metadata.version"
    topics = {p["data"]["name"] for p in payloads if p["type"] == "TOPIC_RECORD"}
    assert topics == {t.name for t in image.topics.values()} and topics
