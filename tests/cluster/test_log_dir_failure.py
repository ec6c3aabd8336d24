"""A broker that loses one of its log dirs keeps serving the others (JBOD, KIP-112).

Three real brokers on their own ZooKeeper, each with two `log.dirs`; a topic of
replication factor 3 whose partitions are spread over both directories of every broker. The
failure is real: the test replaces a directory with a file while the broker runs, so the
broker's next file operation in it (its periodic checkpoint, every 500 ms here) fails with
ENOTDIR, as it would on a disk that was unmounted (DUR-16). Meanwhile a confluent-kafka
producer with acks=all sends a numbered stream to every partition.

Then, as Kafka's JBOD does: the partitions of the failed directory go offline on that
broker, it notifies the controller (/log_dir_event_notification), the controller moves the
leadership of those partitions to other ISR members and removes the broker from their ISRs
(CTRL-30); the partitions of its other directory keep being served by it; DescribeLogDirs
reports the failed directory with KAFKA_STORAGE_ERROR; every acknowledged number is
consumed. Restarted with the directory repaired, the broker's replicas catch up and rejoin
every ISR. A follower whose own append is the first I/O in the failed directory takes it
offline the same way. A broker that loses both directories stops (exit status 1).
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from kafka_ref.cluster.log_dir_events import (
    LOG_DIR_EVENT_NOTIFICATION,
    encode_log_dir_event,
    propagate_log_dir_event,
    take_log_dir_events,
)
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, DescribeLogDirsRequest
from kafka_ref.tools.cluster import ZooKeeperServer, zookeeper_installed
from tests.cluster.conftest import Cluster, wait_for
from tests.cluster.test_controller import create_topic
from tests.cluster.test_controller_requests import alter_partition, current_state
from tests.cluster.test_replication import consume_all, produce_stream, wait_full_isr

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 6


@pytest.fixture(scope="module")
def jbod(tmp_path_factory):
    """Three brokers with log.dirs=<broker>/a,<broker>/b and checkpoints every 500 ms."""
    if not zookeeper_installed():
        pytest.fail("ZooKeeper is missing: `make test` installs it (apt-get install zookeeper)")
    base = tmp_path_factory.mktemp("jbod")
    zookeeper = ZooKeeperServer(str(base / "zookeeper")).start()
    cluster = Cluster(zookeeper, str(base))
    for i, broker in cluster.brokers.items():
        broker.log_dirs = [f"{base}/broker-{i}/a", f"{base}/broker-{i}/b"]
        broker.configs.update(
            {
                "log.dirs": ",".join(broker.log_dirs),
                "log.flush.offset.checkpoint.interval.ms": 500,
                "replica.high.watermark.checkpoint.interval.ms": 500,
            }
        )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        zookeeper.stop()


def fail_dir(log_dir: str) -> None:
    """The disk is gone: the directory is replaced by a file (every new file in it fails).
    A running broker may make the directory again between the rename and the file (it
    places a replica there): that one is moved aside too, and the file tried again."""
    os.rename(log_dir, log_dir + ".failed")
    for attempt in range(10):
        try:
            fd = os.open(log_dir, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            os.rename(log_dir, f"{log_dir}.failed-{attempt}")
            continue
        with os.fdopen(fd, "w") as f:
            f.write("a failed disk\n")
        return
    raise AssertionError(f"{log_dir} kept coming back as a directory")


def repair_dir(log_dir: str) -> None:
    os.unlink(log_dir)
    os.rename(log_dir + ".failed", log_dir)


def partitions_in(log_dir: str, topic: str) -> set[int]:
    return {p for p in range(PARTITIONS) if os.path.isdir(os.path.join(log_dir, f"{topic}-{p}"))}


def describe_log_dirs(cluster, broker_id: int) -> dict[str, tuple[int, set[tuple[str, int]]]]:
    answer = cluster.request(
        broker_id, ApiKey.DESCRIBE_LOG_DIRS, DescribeLogDirsRequest(topics=None)
    )
    return {
        r.log_dir: (
            r.error_code,
            {(t.name, p.partition_index) for t in r.topics for p in t.partitions},
        )
        for r in answer.results
    }


@pytest.mark.spec("DUR-16", "CTRL-30", "BROKER-52")
def test_a_failed_log_dir_moves_its_partitions_and_loses_no_acknowledged_write(jbod):
    topic = "jbod-stream"
    create_topic(jbod, topic, partitions=PARTITIONS, rf=3, configs={"min.insync.replicas": "2"})
    victim = jbod.state(topic, 0).leader
    failed_dir, good_dir = jbod.brokers[victim].log_dirs
    wait_for(  # its LeaderAndIsr may come after the states are in ZooKeeper
        lambda: (
            partitions_in(failed_dir, topic) | partitions_in(good_dir, topic)
            == set(range(PARTITIONS))
        ),
        what=f"broker {victim} to host every partition",
    )
    if 0 not in partitions_in(failed_dir, topic):
        failed_dir, good_dir = good_dir, failed_dir
    offline, online = partitions_in(failed_dir, topic), partitions_in(good_dir, topic)
    assert offline and online and offline | online == set(range(PARTITIONS))
    before = {p: jbod.state(topic, p) for p in range(PARTITIONS)}

    stop, out = threading.Event(), {}
    thread = threading.Thread(
        target=lambda: out.update(r=produce_stream(jbod, topic, PARTITIONS, stop))
    )
    thread.start()
    try:
        time.sleep(2)
        fail_dir(failed_dir)  # mid-stream
        for p in sorted(offline):  # new leaders elsewhere, the victim out of the ISR
            wait_for(
                lambda p=p: (
                    (s := jbod.state(topic, p)).leader not in (victim, -1) and victim not in s.isr
                ),
                what=f"{topic}-{p} to move off broker {victim}'s failed log dir",
            )
        for p in sorted(online):  # untouched: same leader and epoch, the victim in the ISR
            state = jbod.state(topic, p)
            assert (state.leader, state.leader_epoch) == (before[p].leader, before[p].leader_epoch)
            assert victim in state.isr
        dirs = describe_log_dirs(jbod, victim)
        assert dirs[failed_dir] == (ErrorCode.KAFKA_STORAGE_ERROR, set())
        assert dirs[good_dir] == (ErrorCode.NO_ERROR, {(topic, p) for p in online})
        time.sleep(3)  # the stream goes on, to every partition
    finally:
        stop.set()
        thread.join(120)
    acked, failed = out["r"]
    assert failed == [], failed[:10]
    for p in range(PARTITIONS):
        assert len(acked[p]) > 10, f"partition {p} stopped taking acks=all writes"
    for p in sorted(online):  # the victim served them all along: still in their ISR
        assert victim in jbod.state(topic, p).isr, f"{topic}-{p} lost broker {victim}"
    state = current_state(jbod, topic, 0)  # the leader may not take the victim back (CTRL-22)
    controller = jbod.controller()[0]
    answer = alter_partition(
        jbod,
        controller,
        state.leader,
        topic,
        state.leader_epoch,
        (*state.isr, victim),
        state.zk_version,
    )
    assert answer.topics[0].partitions[0].error_code == ErrorCode.OPERATION_NOT_ATTEMPTED
    seen = consume_all(jbod, topic, PARTITIONS)
    for p in range(PARTITIONS):
        missing = set(acked[p]) - set(seen[p])
        assert not missing, f"partition {p} lost acknowledged writes {sorted(missing)[:10]}"

    jbod.stop(victim)  # repaired and restarted: the replicas come back and catch up
    repair_dir(failed_dir)
    jbod.ensure_running()
    wait_full_isr(jbod, topic, PARTITIONS)
    assert describe_log_dirs(jbod, victim)[failed_dir][0] == ErrorCode.NO_ERROR


@pytest.mark.spec("DUR-16", "CTRL-30")
def test_a_follower_whose_append_fails_takes_its_dir_offline(jbod):
    """The victim only follows (it is last in every assignment), its checkpoints are far
    apart and segments roll every few records: the first I/O in the failed directory is
    its replica fetcher's append, rolling a segment there (or the fsync of that rolled
    segment, whichever comes first)."""
    topic, victim = "jbod-follower", 3
    # Six partitions led by 1 and 2: the victim's log dirs take new partitions by their
    # counts (DUR-13), so whatever earlier tests left, each dir gets at least one of them.
    assignment = [[1, 2, 3], [2, 1, 3]] * (PARTITIONS // 2)
    create_topic(jbod, topic, configs={"segment.bytes": "2000"}, assignment=assignment)
    dirs = jbod.brokers[victim].log_dirs
    wait_for(lambda: all(partitions_in(d, topic) for d in dirs), what="partitions in each dir")
    failed_dir, kept_dir = dirs
    failed, kept = min(partitions_in(failed_dir, topic)), min(partitions_in(kept_dir, topic))
    before = {p: jbod.state(topic, p) for p in (failed, kept)}
    configs = dict(jbod.brokers[victim].configs)
    jbod.brokers[victim].configs.update(
        {
            "log.flush.offset.checkpoint.interval.ms": 600_000,
            "replica.high.watermark.checkpoint.interval.ms": 600_000,
        }
    )
    try:
        jbod.stop(victim)
        jbod.ensure_running()
        wait_full_isr(jbod, topic, PARTITIONS)
        stop, out = threading.Event(), {}
        thread = threading.Thread(
            target=lambda: out.update(r=produce_stream(jbod, topic, PARTITIONS, stop))
        )
        thread.start()
        try:
            time.sleep(1)
            fail_dir(failed_dir)
            wait_for(  # by the controller (a new leader epoch), not by the leader's lag check
                lambda: (
                    (s := jbod.state(topic, failed)).leader_epoch > before[failed].leader_epoch
                    and victim not in s.isr
                ),
                what=f"broker {victim} to leave {topic}-{failed}'s ISR",
            )
            # the follower's append, or the periodic fsync of a segment that append rolled;
            # never the checkpoints, ten minutes apart here
            cause = jbod.brokers[victim].log().split("is offline:")[-1][:200]
            assert "append to" in cause or "flushing" in cause, cause
            assert victim in jbod.state(topic, kept).isr
        finally:
            stop.set()
            thread.join(120)
        assert out["r"][1] == []
        jbod.stop(victim)
        repair_dir(failed_dir)
    finally:
        jbod.brokers[victim].configs = configs
    jbod.ensure_running()
    wait_full_isr(jbod, topic, PARTITIONS)


@pytest.mark.spec("DUR-16")
def test_a_broker_whose_every_log_dir_failed_stops(jbod):
    topic = "jbod-all"
    create_topic(jbod, topic, partitions=2, rf=3)
    victim = jbod.state(topic, 0).leader
    for log_dir in jbod.brokers[victim].log_dirs:
        fail_dir(log_dir)
    process = jbod.brokers[victim].proc
    wait_for(lambda: process.poll() is not None, timeout=60, what=f"broker {victim} to stop")
    assert process.returncode == 1
    assert "all log dirs in" in jbod.brokers[victim].log()
    wait_for(lambda: victim not in jbod.zk.get_broker_ids(), what="its registration to go")
    wait_for(lambda: jbod.state(topic, 0).leader not in (victim, -1), what="a new leader")
    for log_dir in jbod.brokers[victim].log_dirs:
        repair_dir(log_dir)
    jbod.ensure_running()
    wait_full_isr(jbod, topic, 2)


@pytest.mark.spec("CTRL-30")
def test_a_log_dir_event_is_kafkas_json_and_the_controller_takes_it(jbod):
    """The notification as Kafka's LogDirEventNotificationSequenceZNode writes it; the
    controller deletes it (for a broker that is not live it does nothing else)."""
    assert encode_log_dir_event(7) == b'{"version":1,"broker":7,"event":1}'
    zk = jbod.zk.zk
    path = propagate_log_dir_event(zk, 7)
    assert path.startswith(f"{LOG_DIR_EVENT_NOTIFICATION}/log_dir_event_")
    assert path[-10:].isdigit()  # a sequential znode
    wait_for(lambda: zk.get_children(LOG_DIR_EVENT_NOTIFICATION) == [], what="it to be taken")
    assert take_log_dir_events(zk) == []
