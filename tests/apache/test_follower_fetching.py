"""Reads from followers (KIP-392) on Apache Kafka 4.4 and on kafka-ref: the same answers.

Each side runs three brokers in racks a, b and c with Kafka's rack-aware replica selector:
Apache Kafka in KRaft (three combined nodes), kafka-ref on a ZooKeeper of its own. A topic
of one partition is placed [leader in a, follower in b, follower in c] and holds 4 records
written with acks=all. The same Fetch and ListOffsets requests then go to the leader and to
the follower of rack b, and what they answer, with broker ids replaced by the racks they sit
in, must be the same on both sides.

Starting three Apache Kafka brokers takes over a minute, so CI compares kafka-ref's answers
with Kafka's as recorded in `follower_fetching.kafka-4.4.json`, next to this file. The long
form (KAFKA_REF_LONG=1) starts Kafka, asks it again and fails if the recording is no longer
what Kafka answers; `KAFKA_REF_RECORD=1` with it writes the recording afresh.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.cluster import wait_for
from kafka_ref.conformance.wire import Wire, batch, decode_batches, fetch_body
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.replication.replica_selector import RACK_AWARE_REPLICA_SELECTOR
from kafka_ref.tools.cluster import ZooKeeperServer
from tests.cluster.test_follower_fetching import RackCluster

pytestmark = pytest.mark.timeout(600)

LONG = os.environ.get("KAFKA_REF_LONG") == "1"
RECORDING = Path(__file__).with_name("follower_fetching.kafka-4.4.json")
TOPIC = "read-where"
RACK_OF = ("a", "b", "c")  # by position in the partition's replica list


WAIT_MS = 6_000
MB = 1 << 20


def fetch(
    wire: Wire, version: int, offset: int, rack: str, epoch: int = -1, min_bytes: int = 1
) -> tuple[Any, float]:
    """The partition's answer and how long it took, in seconds."""
    body = fetch_body(
        [(TOPIC, 0, offset)],
        max_wait_ms=WAIT_MS,
        min_bytes=min_bytes,
        current_leader_epoch=epoch,
    )
    body.rack_id = rack
    started = time.monotonic()
    data = wire.request(ApiKey.FETCH, version, body).responses[0].partitions[0]
    return data, time.monotonic() - started


def observe(bootstrap: str, addresses: dict[int, tuple[str, int]], replicas: list[int]) -> Any:
    """Create the topic on `replicas`, write 4 records, and ask; the answers, with each
    broker id named by its rack."""
    rack = dict(zip(replicas, RACK_OF, strict=True))
    rack[-1] = "none"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replica_assignment=[replicas])])[
        TOPIC
    ].result(30)
    leader, follower, _ = (Wire(*addresses[b]) for b in replicas)
    wait_for(lambda: leader.produce(TOPIC, 0, batch([b"r0", b"r1", b"r2", b"r3"])).error_code == 0)
    # the leader knows every follower's log end, and rack b's follower knows the HW
    wait_for(lambda: fetch(follower, 12, 0, "b")[0].high_watermark == 4, what="follower HW 4")
    epoch = next(
        p.leader_epoch for t in leader.metadata([TOPIC], version=7).topics for p in t.partitions
    )
    seen: dict[str, Any] = {}
    for name, wire, version, offset, client_rack, fence, min_bytes in [
        ("leader, rack b, 1 MB wanted", leader, 12, 0, "b", -1, MB),
        ("leader, rack a, 1 MB wanted", leader, 12, 0, "a", -1, MB),
        ("leader, rack c", leader, 12, 0, "c", -1, 1),
        ("leader, no rack", leader, 12, 0, "", -1, 1),
        ("leader, v10", leader, 10, 0, "", -1, 1),
        ("leader, rack b, at the log end", leader, 12, 4, "b", -1, 1),
        ("leader, rack b, past the log end", leader, 12, 5, "b", -1, 1),
        ("leader, rack b, current epoch", leader, 12, 0, "b", epoch, 1),
        ("leader, rack b, a newer epoch", leader, 12, 0, "b", epoch + 1, 1),
        ("follower b", follower, 12, 0, "b", -1, 1),
        ("follower b, another rack", follower, 12, 0, "a", -1, 1),
        ("follower b, v10", follower, 10, 0, "", -1, 1),
        ("follower b, past its log end", follower, 12, 5, "b", -1, 1),
    ]:
        data, took = fetch(wire, version, offset, client_rack, fence, min_bytes)
        records = [r.value.decode() for b in decode_batches(data.records) for r in b.records]
        seen[name] = {
            "error": ErrorCode(data.error_code).name,
            "preferred": rack[data.preferred_read_replica] if version >= 11 else None,
            "records": records,
            "offsets": [data.high_watermark, data.last_stable_offset, data.log_start_offset],
            "at once": took < WAIT_MS / 2000,  # else it waited for min_bytes, max_wait_ms
        }
    seen["follower b, ListOffsets"] = ErrorCode(follower.list_offset(TOPIC, 0, -1).error_code).name
    for wire in (leader, follower):
        wire.close()
    return seen


def ask_kafka(tmp_path_factory) -> dict[str, Any]:
    node = {"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR}
    kafka = ApacheKafka(
        brokers=3,
        workdir=str(tmp_path_factory.mktemp("apache")),
        node_configs={i: {**node, "broker.rack": rack} for i, rack in enumerate(RACK_OF, 1)},
    )
    kafka.start()
    try:
        return observe(
            kafka.bootstrap, {n.node_id: ("127.0.0.1", n.port) for n in kafka.nodes}, [1, 2, 3]
        )
    finally:
        kafka.stop()


@pytest.fixture(scope="module")
def kafka_ref_answers(tmp_path_factory):
    base = tmp_path_factory.mktemp("kafka-ref")
    zookeeper = ZooKeeperServer(str(base / "zookeeper")).start()
    cluster = RackCluster(zookeeper.connect, str(base))
    try:
        cluster.start()
        addresses = {i: ("127.0.0.1", b.port) for i, b in cluster.brokers.items()}
        return observe(cluster.bootstrap(), addresses, sorted(cluster.brokers))
    finally:
        cluster.close()
        zookeeper.stop()


@pytest.fixture(scope="module")
def kafka_answers(tmp_path_factory):
    """Kafka's answers: asked live in the long form, else as recorded."""
    if not LONG:
        return json.loads(RECORDING.read_text())
    live = ask_kafka(tmp_path_factory)
    if os.environ.get("KAFKA_REF_RECORD") == "1":
        RECORDING.write_text(json.dumps(live, indent=2) + "\n")
    assert json.loads(RECORDING.read_text()) == live, "Kafka no longer answers as recorded"
    return live


@pytest.mark.spec("REPL-16", "REPL-17")
def test_kafka_and_kafka_ref_answer_reads_from_followers_alike(kafka_answers, kafka_ref_answers):
    assert kafka_ref_answers == kafka_answers
    # and what they agree on is KIP-392's behaviour, not an accident of both
    sent_to_b = kafka_answers["leader, rack b, 1 MB wanted"]
    assert (sent_to_b["preferred"], sent_to_b["records"], sent_to_b["at once"]) == ("b", [], True)
    kept = kafka_answers["leader, rack a, 1 MB wanted"]
    assert (kept["preferred"], len(kept["records"]), kept["at once"]) == ("none", 4, False)
    assert kafka_answers["follower b"]["records"] == ["r0", "r1", "r2", "r3"]
    assert kafka_answers["leader, rack b, a newer epoch"]["error"] == "UNKNOWN_LEADER_EPOCH"
