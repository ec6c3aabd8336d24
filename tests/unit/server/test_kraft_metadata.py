"""A KRaft broker's image (cluster/kraft_metadata.py), fed the records a real QuorumController
decides: what it folds, when it publishes, what it reads and what it tells the broker."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest

from kafka_ref.clock import ManualClock
from kafka_ref.cluster.config_changes import DEFAULT_ENTITY
from kafka_ref.cluster.kraft_metadata import KRaftClusterMetadata, NotDecidedHereError
from kafka_ref.cluster.metadata import BrokerEndpoint, PartitionState
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode
from kafka_ref.log.log_manager import LogManager
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.cluster_control import BrokerRegistrationRequest
from kafka_ref.metadata.controller.config_control import SET, AlterableConfig, AlterConfigsResource
from kafka_ref.metadata.controller.replication_control import AlterPartitionData
from kafka_ref.metadata.image import Endpoint
from kafka_ref.metadata.serde import ApiMessageAndVersion, serialize
from kafka_ref.raft.listener import CommittedBatch
from kafka_ref.server.purgatory import DelayedOperationPurgatory
from kafka_ref.server.replica_manager import ReplicaManager
from tests.unit.metadata.controller.harness import CLUSTER_ID, SUPPORTED, Harness

ME = 1


class Recorder:
    """A broker part that writes down what it is told (the ReplicaManager's place)."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def on_partition_state(self, state: PartitionState) -> None:
        self.events.append(("state", state.topic, state.partition, state))

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        self.events.append(("deleted", topic, partitions))

    def on_topic_config(self, topic: str, config: LogConfig) -> None:
        self.events.append(("config", topic, config))

    def states(self) -> list[tuple[str, int]]:
        return [(e[1], e[2]) for e in self.events if e[0] == "state"]


class Feed:
    """The committed log of a Harness, handed to a broker's image batch by batch."""

    def __init__(self, harness: Harness, incarnation: uuid.UUID | None = None) -> None:
        self.harness = harness
        self.told = 0  # records of the harness's log handed over so far
        self.high_watermark = 0
        self.metadata = KRaftClusterMetadata(
            BrokerEndpoint(ME, "127.0.0.1", 9092),
            CLUSTER_ID,
            incarnation or harness.incarnations.get(ME) or uuid.uuid4(),
            high_watermark=lambda: self.high_watermark,
            rng=random.Random(0),
        )
        self.recorder = Recorder()
        self.metadata.listeners.append(self.recorder)
        self.broker_configs: list[tuple[str, dict]] = []
        self.metadata.on_broker_config = lambda e, c: self.broker_configs.append((e, c))

    def deliver(self, entries: list[ApiMessageAndVersion] | None = None) -> None:
        """The harness's records not yet told as one committed batch (the high watermark
        at its end), or `entries` as the next batch."""
        if entries is None:
            entries = self.harness.log[self.told :]
            self.told = len(self.harness.log)
        base = self.high_watermark
        self.high_watermark = base + len(entries)
        self.metadata.handle_commit(batch(base, entries))


def batch(base: int, entries: list[ApiMessageAndVersion]) -> CommittedBatch:
    records = tuple((base + i, serialize(e)) for i, e in enumerate(entries))
    return CommittedBatch(base, base + len(entries) - 1, 1, records)


def entry(message) -> ApiMessageAndVersion:
    return ApiMessageAndVersion.of(message)


@pytest.mark.spec("KBROKER-1")
def test_committed_batches_fold_into_the_image_and_a_transaction_waits_for_its_end():
    h = Harness(brokers=3)
    feed = Feed(h)
    feed.deliver()
    assert sorted(feed.metadata.image.brokers) == [0, 1, 2]
    assert feed.metadata.published_offset == len(h.log) - 1
    topic_id = uuid.uuid4()
    begin = [
        entry(r.BeginTransactionRecord(name="t")),
        entry(r.TopicRecord(name="t", topic_id=topic_id)),
    ]
    feed.deliver(begin)
    # the transaction is open: nothing of it is in the image, and the image ends before it
    assert feed.metadata.topic("t") is None
    assert feed.metadata.published_offset == len(h.log) - 1
    partition = r.PartitionRecord(
        partition_id=0, topic_id=topic_id, replicas=[1], isr=[1], leader=1, leader_epoch=0
    )
    feed.deliver([entry(partition), entry(r.EndTransactionRecord())])
    assert feed.metadata.topic("t").partitions == 1
    assert feed.metadata.published_offset == feed.high_watermark - 1


@pytest.mark.spec("KBROKER-2")
def test_a_starting_broker_publishes_once_it_has_read_up_to_the_high_watermark():
    h = Harness(brokers=3)
    h.create("gone", partitions=2)
    h.commit(h.qc.delete_topics(["gone"]))
    h.create("gone", partitions=1)  # the same name, a new topic
    h.create("kept", partitions=2, **{"retention.ms": "1000"})
    feed = Feed(h)
    feed.high_watermark = len(h.log) + 5  # the quorum has committed more than we read
    first = h.log[:10]
    feed.metadata.handle_commit(batch(0, first))
    assert feed.metadata.published_offset == -1 and not feed.metadata.topics()
    assert not feed.recorder.events
    feed.metadata.handle_commit(batch(10, h.log[10:]))
    assert feed.metadata.published_offset == -1  # still below the high watermark
    noops = [entry(r.NoOpRecord()) for _ in range(5)]
    feed.metadata.handle_commit(batch(len(h.log), noops))
    # one publication of the cluster as it is: no deletion of the logs of "gone"
    assert feed.metadata.published_offset == len(h.log) + 4
    assert [t.name for t in feed.metadata.topics()] == ["gone", "kept"]
    kinds = [e[0] for e in feed.recorder.events]
    # the logs opened at start take their topic's config, then the states
    assert kinds == ["config", "state", "state", "state"] and feed.recorder.events[0][1] == "kept"
    assert sorted(feed.recorder.states()) == [("gone", 0), ("kept", 0), ("kept", 1)]


def registration(broker_id: int, port: int, *, rack: str | None = None):
    return BrokerRegistrationRequest(
        broker_id,
        CLUSTER_ID,
        uuid.uuid4(),
        listeners=(
            Endpoint("CLIENT", f"client-{broker_id}", port, 1),  # SSL
            Endpoint("PLAINTEXT", f"broker-{broker_id}", port + 1, 0),
        ),
        features=SUPPORTED,
        rack=rack,
    )


@pytest.mark.spec("KBROKER-3")
def test_live_brokers_are_the_unfenced_registered_ones_reached_on_their_listeners():
    h = Harness(brokers=0)
    for broker_id in (1, 2, 3):
        reply = h.commit(h.qc.register_broker(registration(broker_id, 9000 + 10 * broker_id), 0))
        h.epochs[broker_id] = reply.broker_epoch
    for broker_id in (1, 2):
        h.heartbeat(broker_id)
    feed = Feed(h)
    feed.deliver()
    brokers = feed.metadata.brokers()
    assert [b.node_id for b in brokers] == [1, 2]  # 3 is registered but fenced
    one = brokers[0]
    assert (one.host, one.port) == ("broker-1", 9011)  # the inter-broker listener
    assert one.address("CLIENT") == ("client-1", 9010)
    assert {e.listener: e.protocol for e in one.endpoints} == {
        "CLIENT": "SSL",
        "PLAINTEXT": "PLAINTEXT",
    }
    # the controller a client is told is a live broker, each of them over many answers
    assert {feed.metadata.controller_id for _ in range(50)} == {1, 2}
    h.fence(1)
    h.fence(2, now_ms=200_000)
    feed.deliver()
    assert feed.metadata.brokers() == [] and feed.metadata.controller_id == -1


@pytest.mark.spec("KBROKER-3")
def test_a_partition_state_is_its_registration_and_a_log_config_its_overrides():
    h = Harness(brokers=3)
    h.create("t", partitions=1, rf=3, **{"min.insync.replicas": "2", "retention.ms": "1000"})
    h.fence(0)
    feed = Feed(h)
    feed.deliver()
    registration = h.partition("t")
    state = feed.metadata.partition_state("t", 0)
    assert (state.leader, state.leader_epoch, state.replicas, state.isr) == (
        registration.leader,
        registration.leader_epoch,
        registration.replicas,
        registration.isr,
    )
    assert state.zk_version == registration.partition_epoch > 0  # the partition epoch
    assert state.elr == registration.elr and 0 not in state.isr
    meta = feed.metadata.topic("t")
    assert feed.metadata.topic_by_id(meta.topic_id) is meta
    assert (meta.partitions, meta.replication_factor) == (1, 3)
    config = feed.metadata.log_config("t")
    assert (config.min_insync_replicas, config.retention_ms) == (2, 1000)
    assert config.segment_bytes == feed.metadata.log_defaults.segment_bytes
    assert feed.metadata.partition_state("t", 1) is None and feed.metadata.topic("x") is None


@pytest.mark.spec("KBROKER-4")
def test_the_broker_hears_of_its_own_replicas_changes_deletions_and_configs():
    h = Harness(brokers=3)
    h.create_assigned("mine", {0: [1, 2], 1: [2, 0]})
    h.create_assigned("other", {0: [0, 2]})
    feed = Feed(h)
    feed.deliver()
    assert feed.recorder.states() == [("mine", 0)]  # only the replicas of broker 1
    feed.recorder.events.clear()
    # broker 2 fenced: "mine"-0 and "other"-0 change, only the first is ours
    h.fence(2)
    feed.deliver()
    [(kind, topic, index, state)] = feed.recorder.events
    assert (kind, topic, index, state.isr) == ("state", "mine", 0, (1,))
    feed.recorder.events.clear()
    # a reassignment that moves partition 0 away from broker 1, then completes
    h.heartbeat(2)  # back (unfenced)
    h.commit(h.qc.alter_partition_reassignments({("mine", 0): [0, 2]}))
    moved = h.partition("mine")
    assert 1 in moved.replicas  # still a replica while the new ones catch up
    feed.deliver()
    feed.recorder.events.clear()
    topic_id = h.image.topic_by_name("mine").id
    for new_isr in ([1, 0], [1, 0, 2]):
        p = h.partition("mine")
        data = [_alter(p, new_isr)]
        h.commit(h.qc.alter_partition(p.leader, h.epochs[p.leader], {topic_id: data}))
    assert 1 not in h.partition("mine").replicas
    feed.deliver()
    last = [e for e in feed.recorder.events if e[0] == "state"][-1][3]
    assert 1 not in last.replicas  # told, so that it stops and deletes its replica
    feed.recorder.events.clear()
    # a config change, a broker config, then a deletion
    h.commit(h.qc.incremental_alter_configs([_set_config(2, "mine", "retention.ms", "5")]))
    h.commit(h.qc.incremental_alter_configs([_set_config(4, "", "log.retention.ms", "7")]))
    feed.deliver()
    [(kind, topic, config)] = feed.recorder.events
    assert (kind, topic, config.retention_ms) == ("config", "mine", 5)
    assert feed.broker_configs == [(DEFAULT_ENTITY, {"log.retention.ms": "7"})]
    assert feed.metadata.broker_configs(DEFAULT_ENTITY) == {"log.retention.ms": "7"}
    feed.recorder.events.clear()
    h.commit(h.qc.delete_topics(["mine"]))
    feed.deliver()
    assert feed.recorder.events == [("deleted", "mine", 2)]
    assert feed.metadata.topic("mine") is None and feed.metadata.partition_state("mine", 0) is None


def _alter(partition, new_isr):
    isr = tuple((b, -1) for b in new_isr)
    return AlterPartitionData(0, partition.leader_epoch, partition.partition_epoch, isr)


def _set_config(resource_type: int, name: str, key: str, value: str):
    return AlterConfigsResource(resource_type, name, [AlterableConfig(key, SET, value)])


@pytest.mark.spec("KBROKER-5")
def test_requests_wait_for_the_image_to_hold_this_processs_registration():
    h = Harness(brokers=3)
    stale = Feed(h, incarnation=uuid.uuid4())  # another process of broker 1 registered
    fresh = Feed(h)

    async def scenario() -> list[str]:
        answered: list[str] = []
        assert stale.metadata.hold(lambda: answered.append("stale"))
        assert fresh.metadata.hold(lambda: answered.append("fresh"))
        stale.deliver()
        fresh.deliver()
        assert not fresh.metadata.hold(lambda: answered.append("late"))
        return answered

    assert asyncio.run(scenario()) == ["fresh"]
    assert stale.metadata.hold(lambda: None)  # still waiting (until its timeout)


@pytest.mark.spec("KBROKER-8", "KBROKER-12")
def test_a_broker_decides_no_change_itself():
    feed = Feed(Harness(brokers=1))
    for change in (
        lambda m: m.delete_topic("t"),
        lambda m: m.create_partitions("t", 3),
        lambda m: m.alter_topic_configs("t", {}),
        lambda m: m.create_topic("t"),  # nobody to send it to yet
        lambda m: m.allocate_producer_id_block(1, 1000),
    ):
        with pytest.raises(NotDecidedHereError) as refused:
            change(feed.metadata)
        assert refused.value.code == ErrorCode.INVALID_REQUEST  # not retried by a client
    sent = []

    class Creator:
        def create_topic(self, *args):
            sent.append(args)

    feed.metadata.topic_creator = Creator()
    feed.metadata.create_topic("t", 3, 2, {"retention.ms": "5", "dropped": None})
    feed.metadata.num_partitions, feed.metadata.default_replication_factor = 4, 3
    feed.metadata.create_topic("u")  # the broker's num.partitions, default.replication.factor
    assert sent == [("t", 3, 2, {"retention.ms": "5"}), ("u", 4, 3, {})]


class NoTimers:
    """The purgatories' scheduler: nothing here waits long enough to expire."""

    def __call__(self, delay_s: float, callback):
        return NoTimer()


class NoTimer:
    def cancel(self) -> None:
        pass


@pytest.mark.spec("KBROKER-6")
def test_the_replica_manager_follows_changes_within_a_leader_epoch(tmp_path):
    h = Harness(brokers=3)
    h.create_assigned("t", {0: [1, 2, 0]})  # broker 1 leads
    feed = Feed(h)
    clock = ManualClock()
    logs = LogManager([str(tmp_path)], clock=clock, topic_config=feed.metadata.log_config)
    rm = ReplicaManager(
        ME,
        logs,
        DelayedOperationPurgatory("Fetch", NoTimers()),
        clock=clock,
        produce_purgatory=DelayedOperationPurgatory("Produce", NoTimers()),
        replica_lag_time_max_ms=30_000,
    )
    rm.alter_partition = lambda alter, replicas, on_result: None  # sent, not answered
    feed.metadata.listeners.append(rm)
    feed.deliver()
    partition = rm.partitions[("t", 0)]
    assert partition.is_leader and partition.isr == (1, 2, 0)
    epoch, follower = partition.leader_epoch, partition.remote[0]
    # broker 2 is fenced: it leaves the ISR, broker 1 still leads in the same leader epoch
    h.fence(2)
    feed.deliver()
    assert (partition.leader_epoch, partition.isr) == (epoch, (1, 0))
    assert partition.version == h.partition("t").partition_epoch
    assert set(partition.remote) == {0, 2}  # still replicas: followers it keeps track of
    assert partition.remote[0] is follower  # what it knows of them is kept
    # the partition moves to brokers 0 and 2 and completes: broker 1's replica goes
    h.heartbeat(2, now_ms=100_000)
    h.commit(h.qc.alter_partition_reassignments({("t", 0): [0, 2]}))
    feed.deliver()
    topic_id = h.image.topic_by_name("t").id
    for new_isr in ([1, 0], [1, 0, 2]):
        p = h.partition("t")
        h.commit(
            h.qc.alter_partition(p.leader, h.epochs[p.leader], {topic_id: [_alter(p, new_isr)]})
        )
    assert h.partition("t").replicas == (0, 2)
    feed.deliver()
    assert ("t", 0) not in rm.partitions and ("t", 0) not in logs.logs
    assert not (tmp_path / "t-0").exists()
    logs.close()


@pytest.mark.spec("KBROKER-1")
def test_the_log_manager_leaves_the_metadata_log_to_the_quorum(tmp_path):
    quorum_log = tmp_path / "__cluster_metadata-0"
    quorum_log.mkdir()
    (quorum_log / "quorum-state").write_text("{}")
    logs = LogManager([str(tmp_path)])
    logs.get_or_create_log("t", 0)
    logs.close()
    logs = LogManager([str(tmp_path)])
    assert list(logs.logs) == [("t", 0)] and not logs.stray_paths
    assert sorted(p.name for p in quorum_log.iterdir()) == ["quorum-state"]  # untouched
    logs.close()


@pytest.mark.spec("KBROKER-21")
def test_a_partition_in_a_failed_log_dir_stays_offline_and_the_others_follow_the_image(
    tmp_path,
):
    h = Harness(brokers=3)
    h.create_assigned("t", {0: [0, ME, 2], 1: [0, ME, 2]})  # ME follows both
    feed = Feed(h)
    clock = ManualClock()
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    logs = LogManager(dirs, clock=clock, topic_config=feed.metadata.log_config)
    rm = ReplicaManager(
        ME,
        logs,
        DelayedOperationPurgatory("Fetch", NoTimers()),
        clock=clock,
        produce_purgatory=DelayedOperationPurgatory("Produce", NoTimers()),
        replica_lag_time_max_ms=30_000,
    )
    feed.metadata.listeners.append(rm)
    feed.deliver()
    [failed] = [d for d in dirs if ("t", 0) in logs.logs_in(d)]
    logs.maybe_add_offline_log_dir(failed, "a test", OSError(5, "Input/output error"))
    assert ("t", 0) in rm.offline_partitions and ("t", 1) in rm.partitions
    h.fence(0)  # both partitions change: a new leader in the image for each
    feed.deliver()  # the offline one is skipped, the publication goes on to the other
    assert ("t", 0) not in rm.partitions and ("t", 0) in rm.offline_partitions
    partition = rm.partitions[("t", 1)]
    assert partition.leader_epoch == h.partition("t", 1).leader_epoch
