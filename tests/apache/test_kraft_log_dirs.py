"""KRaft's log directories (KIP-858) beside Apache Kafka 4.4.

First what Kafka writes: a Kafka node with two `log.dirs` registers with both directory ids
(those of their `meta.properties`), creates a new topic's replicas UNASSIGNED, and its
broker's AssignReplicasToDirs gets a PartitionChangeRecord per replica whose only change
is the directory where the log is. kafka-ref's controller writes the same records for the
same decisions (KCTRL-22).

Then the records of a failed log directory: the controller's decisions of
tests/unit/metadata/controller/test_log_directories.py (a broker registered with two
directories, its replicas assigned, one directory reported offline by a heartbeat) are
written as a `__cluster_metadata` segment; Kafka's `kafka-dump-log.sh
--cluster-metadata-decoder` must decode every record, with the directories where kafka-ref
put them (KCTRL-21, KCTRL-22, META-10).
"""

from __future__ import annotations

import base64
import json
import os
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.cluster.embedded import ensure_directory_id
from kafka_ref.metadata import directory_id
from kafka_ref.metadata.batches import build_metadata_batch, read_metadata_batches
from kafka_ref.protocol.schema import snake_case
from tests.apache.test_metadata_log import dump
from tests.unit.metadata.controller.test_log_directories import (
    DIRS,
    assign,
    heartbeat_offline,
    jbod,
    placed,
)

pytestmark = pytest.mark.timeout(240)


def kafka_uuid(value) -> str:
    """A UUID as Kafka prints it (`Uuid.toString`): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


@pytest.mark.spec("KCTRL-21", "KCTRL-22")
def test_kafka_dump_log_reads_the_records_of_directory_assignments_and_a_failure(tmp_path):
    h = jbod()
    h.create_assigned("t", {0: [0, 1, 2], 1: [1, 0, 2]})
    assign(h, 0, DIRS[0][0], "t", 0)
    assign(h, 0, DIRS[0][1], "t", 1)
    heartbeat_offline(h, 0, DIRS[0][0])
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    log = directory / "00000000000000000000.log"
    log.write_bytes(build_metadata_batch(h.log, base_offset=0, leader_epoch=1, append_time=5))

    lines = dump(str(log))
    payloads = [json.loads(line.split("payload: ", 1)[1]) for line in lines if "payload: " in line]
    assert [(p["type"], p["version"]) for p in payloads] == [
        (snake_case(e.name).upper(), e.version) for e in h.log
    ]
    registered = [p["data"] for p in payloads if p["type"] == "REGISTER_BROKER_RECORD"]
    assert registered[-1]["logDirs"] == [kafka_uuid(d) for d in DIRS[2]]
    changes = [p["data"] for p in payloads if p["type"] == "PARTITION_CHANGE_RECORD"]
    assigned, moved = changes[0], changes[-1]
    assert assigned["directories"][0] == kafka_uuid(DIRS[0][0])
    assert set(assigned) == {"partitionId", "topicId", "directories"}  # nothing else changes
    assert moved == {
        "partitionId": 0,
        "topicId": assigned["topicId"],
        "leader": 1,
        "isr": [1, 2],
    }
    [online] = [
        p["data"]["logDirs"]
        for p in payloads
        if p["type"] == "BROKER_REGISTRATION_CHANGE_RECORD" and p["data"].get("logDirs")
    ]
    assert online == [kafka_uuid(DIRS[0][1])]


def metadata_records(directory: str) -> list:
    records = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".log"):
            with open(os.path.join(directory, name), "rb") as f:
                records += [e for b in read_metadata_batches(f.read()) for e in b.records]
    return records


def shape(entry) -> tuple:
    """A PartitionChangeRecord's version and every field but the ids and directories."""
    m = entry.message
    return (
        entry.version,
        m.leader,
        m.isr,
        m.replicas,
        m.removing_replicas,
        m.adding_replicas,
        m.leader_recovery_state,
        m.eligible_leader_replicas,
        m.last_known_elr,
    )


@pytest.mark.spec("KCTRL-22")
def test_kafka_and_kafka_ref_place_a_jbod_brokers_replicas_with_the_same_records(tmp_path):
    workdir = str(tmp_path)
    data = os.path.join(workdir, "node-1")
    dirs = [os.path.join(data, "a"), os.path.join(data, "b")]
    configs = {"log.dirs": ",".join(dirs), "metadata.log.dir": os.path.join(data, "data")}
    with ApacheKafka(1, configs, workdir=workdir) as kafka:
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        [future] = admin.create_topics([NewTopic("jbod", 4, 1)]).values()
        future.result(30)
        metadata = os.path.join(data, "data", "__cluster_metadata-0")
        deadline = time.monotonic() + 60
        while True:  # until the broker's AssignReplicasToDirs is in the log
            records = metadata_records(metadata)
            theirs = [e for e in records if e.name == "PartitionChangeRecord"]
            if len(theirs) >= 4:
                break
            assert time.monotonic() < deadline, [e.name for e in records]
            time.sleep(0.2)
    ids = {ensure_directory_id(os.path.join(d, "meta.properties")): d for d in dirs}
    [registration] = [e.message for e in records if e.name == "RegisterBrokerRecord"]
    assert set(registration.log_dirs) == set(ids)
    created = [e for e in records if e.name == "PartitionRecord"]
    assert [e.message.directories for e in created] == [[directory_id.UNASSIGNED]] * 4
    for change in (e.message for e in theirs):  # where the broker created each log
        [directory] = change.directories
        assert os.path.isdir(os.path.join(ids[directory], f"jbod-{change.partition_id}"))

    # kafka-ref's controller, asked the same, writes the same records
    h = jbod(brokers=1)
    h.create_assigned("jbod", {i: [0] for i in range(4)})
    ours = [e for e in h.log if e.name == "PartitionRecord"]
    assert [(e.version, e.message.directories) for e in ours] == [
        (e.version, e.message.directories) for e in created
    ]
    assign(h, 0, DIRS[0][1], "jbod", 0, 1, 2, 3)
    changes = [e for e in h.log if e.name == "PartitionChangeRecord"]
    assert [shape(e) for e in changes] == [shape(e) for e in theirs]
    assert set(placed(h, "jbod").values()) == {DIRS[0][1]}
