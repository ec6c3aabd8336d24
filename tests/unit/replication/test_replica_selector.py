"""KIP-392's replica selector: which replica a consumer should read from (REPL-14, REPL-15).

The rack-aware selector is checked on Kafka's own example (`ReplicaSelectorTest`), on its
tie-breaks, and by hypothesis on arbitrary views; `find_preferred_read_replica` on a real
leader `Partition` whose followers fetched, as the leader sees them: in or out of the ISR,
alive or not, holding the offset or not.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.common import TopicPartition
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log
from kafka_ref.replication.leader_epoch import LeaderEpochFileCache
from kafka_ref.replication.messages import FetchRequest, LeaderAndIsr
from kafka_ref.replication.partition import Partition
from kafka_ref.replication.replica_selector import (
    RACK_AWARE_REPLICA_SELECTOR,
    ClientMetadata,
    PartitionView,
    RackAwareReplicaSelector,
    ReplicaView,
    find_preferred_read_replica,
    replica_selector,
)
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from tests.unit.replication.test_partition import batch

TP = TopicPartition("t", 0)
T0 = 1_700_000_000_000
SELECTOR = RackAwareReplicaSelector()


def client(rack: str) -> ClientMetadata:
    return ClientMetadata(rack, "PLAINTEXT")


def select(rack: str, replicas: list[ReplicaView], leader: ReplicaView) -> ReplicaView | None:
    return SELECTOR.select(TP, client(rack), PartitionView(frozenset(replicas), leader))


@pytest.mark.spec("REPL-15")
def test_the_rack_aware_selector_on_kafkas_example():
    """Kafka's ReplicaSelectorTest: leader 0 in rack-a, followers 1 (rack-a), 2 and 3
    (rack-b), 3 more caught up than 2."""
    leader = ReplicaView(0, "rack-a", 4, 0)
    replicas = [
        leader,
        ReplicaView(1, "rack-a", 2, 5),
        ReplicaView(2, "rack-b", 3, 3),
        ReplicaView(3, "rack-b", 4, 2),
    ]
    assert select("rack-b", replicas, leader).broker_id == 3  # the more caught up of rack-b
    assert select("not-a-rack", replicas, leader) == leader  # nobody there: the leader
    assert select("rack-a", replicas, leader) == leader  # the leader is in the rack
    assert select("", replicas, leader) == leader  # a client that names no rack


@pytest.mark.spec("REPL-15")
def test_ties_go_to_the_more_recently_caught_up_then_the_larger_broker_id():
    leader = ReplicaView(0, "a", 10, 0)
    recent, stale = ReplicaView(1, "b", 10, 100), ReplicaView(2, "b", 10, 900)
    assert select("b", [leader, recent, stale], leader) == recent
    twin = ReplicaView(3, "b", 10, 100)
    assert select("b", [leader, recent, twin], leader) == twin
    further = ReplicaView(4, "b", 11, 5_000)  # the log end offset comes first
    assert select("b", [leader, recent, stale, twin, further], leader) == further


views = st.builds(
    ReplicaView,
    broker_id=st.integers(0, 20),
    rack=st.sampled_from(["a", "b", "c", None]),
    log_end_offset=st.integers(0, 5),
    time_since_last_caught_up_ms=st.integers(0, 3),
)


@pytest.mark.spec("REPL-15")
@given(
    leader=views,
    followers=st.lists(views, max_size=6, unique_by=lambda v: v.broker_id),
    rack=st.sampled_from(["", "a", "b", "c"]),
)
def test_the_selector_picks_the_leader_or_the_most_caught_up_of_the_clients_rack(
    leader, followers, rack
):
    followers = [f for f in followers if f.broker_id != leader.broker_id]
    chosen = select(rack, [leader, *followers], leader)
    same_rack = [r for r in followers if rack and r.rack == rack]
    if not rack or leader.rack == rack or not same_rack:
        assert chosen == leader
        return
    assert chosen in same_rack
    for other in same_rack:  # none is more caught up, by Kafka's comparator's three keys
        assert other.log_end_offset <= chosen.log_end_offset
        if other.log_end_offset == chosen.log_end_offset:
            ahead = other.time_since_last_caught_up_ms - chosen.time_since_last_caught_up_ms
            assert ahead >= 0
            if ahead == 0:
                assert other.broker_id <= chosen.broker_id


# ---------------------------------------------------------------------- on a leader partition
RACKS = {0: "a", 1: "b", 2: "b"}  # broker -> rack, every one alive


@pytest.fixture
def clock():
    return ManualClock(T0)


def replica(tmp_path, broker: int, clock) -> Partition:
    log = Log.open(tmp_path / "t-0", LogConfig(), clock)
    cache = LeaderEpochFileCache.load(tmp_path / "t-0")
    return Partition("t", 0, broker, log, cache, clock, replica_lag_time_max_ms=1_000)


@pytest.fixture
def leader(tmp_path, clock) -> Partition:
    """Broker 0 leads t-0 with ISR {0, 1, 2}; 4 records; follower 1 has fetched them all
    (LEO 4), follower 2 has 3 (LEO 3), both with log start 0."""
    partition = replica(tmp_path, 0, clock)
    partition.make_leader(LeaderAndIsr("t", 0, 0, 1, (0, 1, 2), (0, 1, 2)))
    for value in (b"a", b"b", b"c", b"d"):
        partition.append_records_to_leader(batch(value), 1)
    follower_fetch(partition, 2, 3)
    follower_fetch(partition, 1, 4)
    return partition


def follower_fetch(partition: Partition, broker: int, offset: int, log_start: int = 0) -> None:
    """What the leader learns from a follower's fetch: its log end and log start offsets."""
    request = FetchRequest(
        "t", 0, broker, offset, partition.leader_epoch, log_start_offset=log_start
    )
    assert partition.fetch(request).error == 0


def preferred(partition: Partition, rack: str, offset: int, racks=RACKS) -> int | None:
    return find_preferred_read_replica(SELECTOR, partition, client(rack), offset, T0, racks)


@pytest.mark.spec("REPL-15")
def test_the_leader_names_the_most_caught_up_follower_of_the_clients_rack(leader):
    assert preferred(leader, "b", 0) == 1  # LEO 4 beats LEO 3
    assert preferred(leader, "b", 4) == 1  # at the log end: 1 holds it, 2 does not
    assert preferred(leader, "a", 0) is None  # the leader's own rack: read here
    assert preferred(leader, "", 0) is None
    assert preferred(leader, "z", 0) is None


@pytest.mark.spec("REPL-15")
def test_a_follower_that_lacks_the_offset_or_is_not_alive_is_not_named(leader):
    follower_fetch(leader, 1, 4, log_start=2)  # 1's log now starts at 2 (retention)
    assert preferred(leader, "b", 1) == 2  # only 2 holds offset 1
    assert preferred(leader, "b", 4) == 1  # only 1 holds offset 4
    dead_one = {0: "a", 2: "b"}  # broker 1 not alive (no endpoint on the listener)
    assert preferred(leader, "b", 3, racks=dead_one) == 2
    assert preferred(leader, "b", 4, racks=dead_one) is None


@pytest.mark.spec("REPL-15")
def test_a_follower_out_of_the_isr_is_not_named_from_then_on(leader):
    assert preferred(leader, "b", 0) == 1
    leader.make_leader(LeaderAndIsr("t", 0, 0, 2, (0, 2), (0, 1, 2)))  # 1 left the ISR
    follower_fetch(leader, 1, 4)  # caught up, ahead of 2, but its return is still pending
    assert leader.isr == (0, 2)
    assert preferred(leader, "b", 0) == 2


@pytest.mark.spec("REPL-15")
def test_only_a_leader_names_a_replica(tmp_path, clock):
    partition = replica(tmp_path, 1, clock)
    partition.make_follower(LeaderAndIsr("t", 0, 0, 1, (0, 1, 2), (0, 1, 2)))
    assert preferred(partition, "b", 0) is None


@pytest.mark.spec("REPL-14")
def test_replica_selector_class_is_unset_by_default_and_takes_kafkas_rack_aware_name():
    assert KafkaConfig.from_props({})["replica.selector.class"] is None
    assert replica_selector(None) is None
    config = KafkaConfig.from_props({"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR})
    assert isinstance(replica_selector(config["replica.selector.class"]), RackAwareReplicaSelector)
    for wrong in ("", "com.example.MySelector", "RackAwareReplicaSelector"):
        with pytest.raises(ConfigError, match=r"replica\.selector\.class"):
            KafkaConfig.from_props({"replica.selector.class": wrong})
