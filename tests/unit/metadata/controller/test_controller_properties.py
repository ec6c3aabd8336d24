"""Random histories of a KRaft cluster: the controller's records keep every partition safe.

Hypothesis draws sequences of operations (brokers registering, cleanly or not, heartbeating
while behind on the log, asking to shut down or be fenced, falling silent until their
session expires; topics created with random min.insync.replicas and unclean election
settings; leaders shrinking and growing their ISR; preferred and unclean ElectLeaders;
brokers unregistered; topics deleted). After every decision's records are replayed, the
image must satisfy KCTRL-15's invariants, and the decision itself must not have touched the
image. At the end, a follower replaying the whole log from the start reaches the same image.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from kafka_ref.metadata.controller import config_control
from kafka_ref.metadata.controller.cluster_control import BrokerHeartbeatRequest, active_brokers
from kafka_ref.metadata.controller.partition_change import RECOVERING
from kafka_ref.metadata.controller.replication_control import (
    PREFERRED,
    UNCLEAN,
    AlterPartitionData,
    CreatableTopic,
)
from kafka_ref.metadata.image import NO_LEADER, MetadataImage, load
from tests.unit.metadata.controller.harness import Harness

BROKERS = range(4)
TOPICS = ("a", "b", "c")

operations = st.one_of(
    # Time passes; every broker process still running heartbeats, maybe behind on the log.
    st.tuples(st.just("tick"), st.sampled_from([0, 500, 2_000, 5_000, 10_000]), st.integers(0, 2)),
    st.tuples(st.just("tick"), st.sampled_from([0, 500, 2_000, 5_000, 10_000]), st.integers(0, 2)),
    st.tuples(st.just("crash"), st.sampled_from(BROKERS)),  # the process stops, silently
    st.tuples(st.just("restart"), st.sampled_from(BROKERS), st.booleans()),  # clean or not
    st.tuples(
        st.just("heartbeat"), st.sampled_from(BROKERS), st.sampled_from(["shut_down", "fence"])
    ),
    st.tuples(
        st.just("create"),
        st.sampled_from(TOPICS),
        st.integers(1, 3),  # partitions
        st.integers(1, 3),  # replication factor
        st.integers(1, 3),  # min.insync.replicas
        st.booleans(),  # unclean.leader.election.enable
    ),
    st.tuples(
        st.just("alter"),
        st.sampled_from(TOPICS),
        st.integers(0, 2),
        st.just(63) | st.integers(0, 63),  # which replicas the leader puts in its new ISR
        st.booleans(),  # a stale partition epoch
    ),
    st.tuples(st.just("elect"), st.sampled_from([PREFERRED, UNCLEAN])),
    st.tuples(
        st.just("reassign"),
        st.sampled_from(TOPICS),
        st.integers(0, 2),
        st.none() | st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3, unique=True),
    ),
    st.tuples(st.just("unregister"), st.sampled_from(BROKERS)),
    st.tuples(st.just("delete"), st.sampled_from(TOPICS)),
)


def check_invariants(
    before: MetadataImage, after: MetadataImage, unclean_asked: bool, isr_from_leader: bool
) -> None:
    active = active_brokers(after)
    for topic in after.topics.values():
        old_topic = before.topics.get(topic.id)
        unclean_allowed = unclean_asked or config_control.unclean_leader_election(
            after, Harness.CONFIG, topic.name
        )
        min_isr = config_control.min_insync_replicas(after, Harness.CONFIG, topic.name)
        for index, p in topic.partitions.items():
            where = f"{topic.name}-{index} {p}"
            assert p.leader == NO_LEADER or p.leader in p.isr, where
            assert set(p.isr) <= set(p.replicas) and set(p.elr) <= set(p.replicas), where
            assert not set(p.isr) & set(p.elr), where
            moving = set(p.adding_replicas) | set(p.removing_replicas)
            assert moving <= set(p.replicas), where
            assert not set(p.adding_replicas) & set(p.removing_replicas), where
            assert set(p.isr) <= active, f"{where}: an ISR member is fenced or gone"
            assert not p.elr or len(p.isr) < min_isr, f"{where}: ELR with a full ISR"
            old = None if old_topic is None else old_topic.partitions.get(index)
            if old is None:
                continue
            assert p.leader_epoch >= old.leader_epoch, where
            assert p.partition_epoch >= old.partition_epoch, where
            if p.elr:
                event("a partition has eligible leader replicas")
            if old.adding_replicas and not p.adding_replicas:
                event("a reassignment completed or cancelled")
            if p.leader != old.leader and p.leader != NO_LEADER:
                # A leader's AlterPartition vouches for the ISR it sends: completing a
                # reassignment may hand the leadership to a replica it just added.
                vouched = set(p.isr) if isr_from_leader else set()
                clean = p.leader in set(old.isr) | set(old.elr) | vouched
                event("a leader from the ELR" if p.leader in old.elr else "a leader elected")
                if not clean:
                    event("an unclean election")
                assert clean or unclean_allowed, f"{where}: unclean leader from {old}"
                assert clean or p.leader_recovery_state == RECOVERING, where
    for broker in after.brokers.values():
        if broker.fenced:
            assert not any(
                p.leader == broker.id for t in after.topics.values() for p in t.partitions.values()
            ), f"fenced broker {broker.id} leads"


def decide(h: Harness, decision, unclean_asked: bool = False, isr_from_leader: bool = False):
    """Decide, check the decision left the image alone, commit, check the invariants."""
    before = h.image
    result = decision()
    assert h.image is before, "a decision changed the image"
    reply = h.commit(result)
    check_invariants(before, h.image, unclean_asked, isr_from_leader)
    return reply


def heartbeat(h: Harness, broker: int, offset: int, **wishes: bool) -> None:
    if broker in h.epochs and broker in h.image.brokers:
        request = BrokerHeartbeatRequest(broker, h.epochs[broker], max(offset, 0), **wishes)
        reply = decide(h, lambda: h.qc.broker_heartbeat(request, h.now))
        if reply.in_controlled_shutdown:
            event("a controlled shutdown")


def run(h: Harness, op: tuple) -> None:
    """Decide `op` and commit its records, one decision at a time: each sees the records of
    the ones before, as the active controller's do."""
    kind = op[0]
    if kind == "tick":
        _, elapsed, lag = op
        h.now += elapsed
        for broker in sorted(set(h.epochs) - h.silent):
            heartbeat(h, broker, h.qc.next_offset - 1 - lag)
    elif kind == "crash":
        h.silent.add(op[1])
    elif kind == "restart":
        _, broker, clean = op
        previous = h.epochs.get(broker, -1) if clean else -1
        request = h.registration(broker, previous_epoch=previous)
        reply = decide(h, lambda: h.qc.register_broker(request, h.now))
        if reply.error.ok:
            h.epochs[broker] = reply.broker_epoch
            h.silent.discard(broker)
    elif kind == "heartbeat":
        _, broker, wish = op
        heartbeat(h, broker, h.qc.next_offset - 1, **{f"want_{wish}": True})
    elif kind == "create":
        _, name, count, factor, min_isr, unclean = op
        configs = {
            "min.insync.replicas": str(min_isr),
            "unclean.leader.election.enable": str(unclean).lower(),
        }
        topic = CreatableTopic(name, count, factor, configs=configs)
        decide(h, lambda: h.qc.create_topics([topic]))
    elif kind == "alter":
        _, name, index, bits, stale = op
        topic = h.image.topic_by_name(name)
        p = None if topic is None else topic.partitions.get(index)
        if p is not None and p.leader != NO_LEADER and p.leader in h.epochs:
            brokers = h.image.brokers
            isr = [b for i, b in enumerate(p.replicas) if bits >> i & 1 or b == p.leader]
            data = AlterPartitionData(
                index,
                p.leader_epoch,
                p.partition_epoch - stale,
                [(b, brokers[b].epoch if b in brokers else -1) for b in isr],
            )
            request = {topic.id: [data]}
            before = h.image
            alter = lambda: h.qc.alter_partition(p.leader, h.epochs[p.leader], request)  # noqa: E731
            decide(h, alter, isr_from_leader=True)
            if h.image is not before:
                event("an ISR changed by AlterPartition")
    elif kind == "elect":
        decide(h, lambda: h.qc.elect_leaders(op[1], None), unclean_asked=op[1] == UNCLEAN)
    elif kind == "reassign":
        _, name, index, target = op
        decide(h, lambda: h.qc.alter_partition_reassignments({(name, index): target}))
        if any(p.adding_replicas for t in h.image.topics.values() for p in t.partitions.values()):
            event("a reassignment under way")
    elif kind == "unregister":
        decide(h, lambda: h.qc.unregister_broker(op[1]))
    elif kind == "delete":
        decide(h, lambda: h.qc.delete_topics([op[1]]))
    # The controller's periodic task: fence every broker whose session expired.
    while h.qc.heartbeats.stale_broker(h.image, h.now) is not None:
        decide(h, lambda: h.qc.fence_stale_broker(h.now))
        event("a broker fenced by its session timeout")


@pytest.mark.spec("KCTRL-15")
@given(
    st.integers(1, 3),
    st.booleans(),
    st.lists(operations, min_size=5, max_size=80),
    st.integers(0, 2**32),
)
def test_every_history_keeps_the_partitions_safe(min_isr, unclean, history, seed):
    h = Harness(brokers=4, seed=seed)
    h.silent = set()  # brokers whose process is down: they send no heartbeats
    run(h, ("create", "a", 3, 3, min_isr, unclean))
    for op in history:
        run(h, op)
    assert load(h.log) == h.image  # a follower replaying the log agrees
