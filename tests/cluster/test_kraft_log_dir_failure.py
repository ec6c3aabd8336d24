"""A KRaft broker that loses one of its log directories keeps serving the others (KIP-858).

Three combined KRaft nodes; node 3 has two `log.dirs` (its metadata log in a third
directory). Each has a directory id from `kafka-ref storage format`; node 3 registers with
both, and as it creates the logs of a new topic's replicas (the controller left their
directory UNASSIGNED) it tells the controller where each went with AssignReplicasToDirs, so
the metadata image places every replica (KCTRL-22, KBROKER-21).

Then, while a confluent-kafka producer with acks=all sends a numbered stream to every
partition, one of node 3's directories fails the way tests/cluster/test_log_dir_failure.py
fails one: it is replaced by a file, and node 3's next checkpoint in it (every 500 ms here)
fails with ENOTDIR (DUR-16). As Kafka 4.4 does on KRaft: node 3 takes that directory's
partitions offline and its next heartbeat, sent at once, names the directory in
OfflineLogDirs; the active controller moves the leaderships of those replicas and takes
them out of their ISRs (KCTRL-21), and registers node 3 with its one directory left. Node 3
stays unfenced and keeps leading and following the partitions of its other directory. No
acknowledged write is lost. Restarted with the directory repaired, node 3 registers with
both directories again, and its replicas catch up and rejoin every ISR.
"""

from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace

import pytest

from kafka_ref.metadata import directory_id
from tests.cluster.test_kraft_brokers import CombinedCluster, create, wait_for
from tests.cluster.test_log_dir_failure import fail_dir, repair_dir
from tests.cluster.test_replication import consume_all, produce_stream

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 6
VICTIM = 3


@pytest.fixture
def jbod(tmp_path):
    base = os.path.join(tmp_path, f"node-{VICTIM}")
    overrides = {
        VICTIM: {
            "log.dirs": f"{base}/a,{base}/b",
            "metadata.log.dir": f"{base}/meta",
            "log.flush.offset.checkpoint.interval.ms": "500",
            "replica.high.watermark.checkpoint.interval.ms": "500",
        }
    }
    nodes = CombinedCluster(str(tmp_path), overrides=overrides).start()
    yield nodes
    nodes.close()


class Clients:
    """What produce_stream and consume_all read of a cluster: its bootstrap servers."""

    def __init__(self, cluster: CombinedCluster) -> None:
        self.cluster = cluster
        self.brokers = {0: SimpleNamespace(bootstrap=cluster.bootstrap)}

    def bootstrap(self) -> str:
        return self.cluster.bootstrap


def image(cluster: CombinedCluster, node: int = 1):
    return cluster.brokers[node].kraft_mode.metadata.image


def placement(cluster: CombinedCluster, topic: str) -> dict[int, object]:
    """The directory the image names for node 3's replica of each partition."""
    found = image(cluster).topic_by_name(topic)
    if found is None:
        return {}
    return {
        index: p.directories[p.replicas.index(VICTIM)]
        for index, p in found.partitions.items()
        if VICTIM in p.replicas
    }


def state(cluster: CombinedCluster, topic: str):
    """{partition: (leader, leader epoch, isr)} in the image of node 1."""
    found = image(cluster).topic_by_name(topic)
    return {i: (p.leader, p.leader_epoch, p.isr) for i, p in found.partitions.items()}


@pytest.mark.spec("KBROKER-21", "KCTRL-21")
def test_a_failed_log_dir_on_kraft_moves_its_replicas_and_loses_no_acknowledged_write(jbod):
    topic = "jbod-stream"
    broker = jbod.brokers[VICTIM]
    dirs = broker.kraft_mode.directory_ids  # log dir -> directory.id
    assert len(set(dirs.values())) == 2
    assert not any(directory_id.reserved(d) for d in dirs.values())
    assert set(image(jbod).brokers[VICTIM].directories) == set(dirs.values())

    create(jbod.bootstrap, topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    wait_for(lambda: all(len(isr) == 3 for _, _, isr in state(jbod, topic).values()), "full ISRs")
    # every replica of node 3 placed by the directory its log is in
    logs = broker.log_manager.logs
    wait_for(
        lambda: (
            all((topic, p) in logs for p in range(PARTITIONS))  # node 3's image may lag
            and placement(jbod, topic)
            == {p: dirs[logs[(topic, p)].parent_dir] for p in range(PARTITIONS)}
        ),
        "node 3's replicas assigned to their directories",
    )
    led = [p for p, (leader, _, _) in state(jbod, topic).items() if leader == VICTIM]
    assert led, state(jbod, topic)
    failed_dir = logs[(topic, led[0])].parent_dir  # it leads one of the failing replicas
    offline = {p for p in range(PARTITIONS) if logs[(topic, p)].parent_dir == failed_dir}
    online = set(range(PARTITIONS)) - offline
    assert offline and online
    good_dir = next(d for d in dirs if d != failed_dir)
    before = state(jbod, topic)

    stop, out = threading.Event(), {}
    clients = Clients(jbod)
    thread = threading.Thread(
        target=lambda: out.update(r=produce_stream(clients, topic, PARTITIONS, stop))
    )
    thread.start()
    try:
        time.sleep(2)
        fail_dir(failed_dir)  # mid-stream
        wait_for(
            lambda: all(
                leader not in (VICTIM, -1) and VICTIM not in isr
                for p, (leader, _, isr) in state(jbod, topic).items()
                if p in offline
            ),
            "the failed directory's partitions to move off node 3",
        )
        assert image(jbod).brokers[VICTIM].directories == (dirs[good_dir],)
        assert not image(jbod).brokers[VICTIM].fenced  # unfenced: it serves the others
        now = state(jbod, topic)
        for p in sorted(online):  # untouched: same leader and epoch, node 3 in the ISR
            assert now[p][:2] == before[p][:2] and VICTIM in now[p][2], (p, now[p])
        time.sleep(3)  # the stream goes on, to every partition
    finally:
        stop.set()
        thread.join(120)
    acked, failed = out["r"]
    assert failed == [], failed[:10]
    for p in range(PARTITIONS):
        assert len(acked[p]) > 10, f"partition {p} stopped taking acks=all writes"
    for p in sorted(online):  # node 3 served them all along: still in their ISR
        assert VICTIM in state(jbod, topic)[p][2]
    consumed = consume_all(clients, topic, PARTITIONS)
    for p in range(PARTITIONS):
        assert set(acked[p]) <= set(consumed[p]), f"partition {p} lost acknowledged writes"

    # restarted with the directory repaired: both directories, every ISR full again
    jbod.stop(VICTIM)
    repair_dir(failed_dir)
    jbod.restart(VICTIM)
    wait_for(
        lambda: set(image(jbod).brokers[VICTIM].directories) == set(dirs.values()),
        "node 3 registered with both directories",
    )
    wait_for(
        lambda: all(VICTIM in isr for _, _, isr in state(jbod, topic).values()),
        "node 3 back in every ISR",
    )


@pytest.mark.spec("KBROKER-21")
def test_a_kraft_broker_whose_every_log_dir_failed_stops(jbod):
    topic = "jbod-all"
    broker = jbod.brokers[VICTIM]
    create(jbod.bootstrap, topic, PARTITIONS, 3)
    wait_for(lambda: all(len(isr) == 3 for _, _, isr in state(jbod, topic).values()), "full ISRs")
    for log_dir in broker.kraft_mode.directory_ids:
        fail_dir(log_dir)
    wait_for(broker.all_log_dirs_failed.is_set, "node 3 to give up")  # serve() then stops it
    jbod.stop(VICTIM)
    assert all(
        leader != VICTIM and VICTIM not in isr for leader, _, isr in state(jbod, topic).values()
    ), state(jbod, topic)
    assert image(jbod).brokers[VICTIM].fenced
