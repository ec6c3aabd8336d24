"""librdkafka consumers started together, with and without the initial rebalance delay.

Each test runs once against a broker with `group.initial.rebalance.delay.ms=0` (what
`make run` and Kafka's development server.properties set) and once with Kafka's default of
3 s. With 3 s, consumers started together form one generation (REBAL-8). With 0, the first
ones complete the join alone and each later JoinGroup starts the next rebalance (REBAL-17),
which completes only when every member has rejoined: a librdkafka consumer rejoins from
inside `poll()`, so the tests poll every consumer in turn, as an application polls each of
its consumers. Either way, at no moment do two live consumers own one partition (the eager
protocol: a member revokes before it rejoins), and the group ends with the partitions shared,
disjoint and complete.

The last test stops polling one member and makes a third one join: the rebalance must wait
for the silent member until its `max.poll.interval.ms` runs out (REBAL-18).

Every consumer runs in a process of its own (member_process.py), polled in turn from here:
librdkafka's close of a consumer past `max.poll.interval.ms` can block inside C, holding the
GIL, beyond any timeout a thread or a signal of this process could enforce. A child that does
not close in time is killed: what the tests judge, it reported before.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_ref.tools.server_process import free_port
from tests.interop.conftest import GROUP_BROKER_CONFIGS, SESSION_TIMEOUT_MS, BrokerProcess
from tests.interop.member_process import Member
from tests.interop.test_groups import PARTITIONS, make_topic

pytestmark = pytest.mark.timeout(120)

MAX_POLL_INTERVAL_MS = 3000  # librdkafka wants it >= session.timeout.ms (2 s here)


@pytest.fixture(scope="module", params=[0, 3000], ids=["delay-0", "delay-3s"])
def broker(request, tmp_path_factory):
    """A broker with group.initial.rebalance.delay.ms = the parameter."""
    delay = request.param
    base = tmp_path_factory.mktemp(f"groups-delay-{delay}")
    configs = {**GROUP_BROKER_CONFIGS, "group.initial.rebalance.delay.ms": delay}
    broker = BrokerProcess(str(base / "data"), free_port(), configs)
    broker.start()
    broker.initial_delay_ms = delay
    yield broker
    broker.stop()


def member(broker, group: str, instance_id: str | None = None) -> Member:
    """A consumer of the topic named like its group, in a process of its own; static when it
    has an instance id. It commits only when told, so the committed offsets stay its own."""
    config = {
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 300,
        "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
    }
    if instance_id is not None:
        config["group.instance.id"] = instance_id
    return Member(broker.bootstrap, group, group, **config)


def poll_in_turn(members: list[Member], done, timeout: float = 30.0, each_round=None) -> None:
    """Poll every member in turn until `done()`, checking after every poll that no partition
    has two owners among them."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, [sorted(m.owned) for m in members]
        for member in members:
            member.poll()
            owners = [p for m in members for p in m.owned]
            assert len(owners) == len(set(owners)), [sorted(m.owned) for m in members]
        if each_round is not None:
            each_round()


def shared(members: list[Member]) -> bool:
    """Every member owns partitions, and together they own each partition once."""
    owners = sorted(p for m in members for p in m.owned)
    return all(m.owned for m in members) and owners == list(range(PARTITIONS))


@pytest.mark.spec("REBAL-8", "REBAL-17")
@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("count", [2, 3])
def test_consumers_started_together_share_the_partitions(broker, count, static):
    group = f"together-{broker.initial_delay_ms}-{count}-{'static' if static else 'dynamic'}"
    make_topic(broker.bootstrap, group)
    members = [member(broker, group, f"i-{i}" if static else None) for i in range(count)]
    try:
        for m in members:  # all at once, before any of them polls
            m.subscribe()
        poll_in_turn(members, lambda: shared(members))
        if broker.initial_delay_ms:
            # REBAL-8: one generation; nobody had partitions revoked on the way
            assert [(m.assigned, m.revoked) for m in members] == [(1, 0)] * count
    finally:
        for m in members:
            m.close()


@pytest.mark.spec("REBAL-18")
@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_a_member_that_stops_polling_keeps_its_partitions_for_max_poll_interval(broker, static):
    """Two members share the partitions; `a` stops polling (after committing what it read),
    and a third member `c` joins, which starts a rebalance that `a` cannot join. The others
    get `a`'s partitions only after `a`'s max.poll.interval.ms has run out since its last
    poll (a dynamic member leaves then; a static one stops heartbeating and its session
    expires; the rebalance timeout alone would end the wait no sooner), and they start at
    `a`'s committed offsets: nothing lost, nothing twice. The broker agrees: the group's
    members are then `b` and `c` only, and `a`'s partitions' committed offsets are still the
    ones `a` committed."""
    group = f"max-poll-{broker.initial_delay_ms}-{'static' if static else 'dynamic'}"
    make_topic(broker.bootstrap, group, records=60)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})

    def produce_to_every_partition() -> None:  # so there is always something to receive
        for p in range(PARTITIONS):
            producer.produce(group, value=b"more", partition=p)
        producer.poll(0)

    # c's process starts now: started later, under load, it could keep b from polling for
    # longer than b's own max.poll.interval.ms
    a, b, c = (member(broker, group, name if static else None) for name in ("a", "b", "c"))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        for m in (a, b):
            m.subscribe()

        def a_read_each_of_its_partitions() -> bool:
            return {p for t, p, _ in a.records if t > a.assigned_at} == a.owned

        poll_in_turn([a, b], lambda: shared([a, b]) and a_read_each_of_its_partitions())
        silent = set(a.owned)
        positions = a.commit()  # a commits what it read, then stops polling
        assert set(positions) == silent, (positions, silent)
        stopped = a.last_poll

        c.subscribe()
        others = [b, c]

        def took_over() -> bool:
            received = {p for m in others for t, p, _ in m.records if t > stopped}
            return shared(others) and silent <= received

        poll_in_turn(others, took_over, each_round=produce_to_every_partition)

        allowed = stopped + MAX_POLL_INTERVAL_MS / 1000
        for m in others:
            taken = [(t, p, o) for t, p, o in m.records if p in silent and t > stopped]
            assert all(t >= allowed for t, _, _ in taken), (taken[0][0] - stopped, silent)
            firsts = {}
            for _, p, o in taken:
                firsts.setdefault(p, o)
            assert all(o == positions[p] for p, o in firsts.items()), (firsts, positions)

        # the broker's view, while b and c go on polling (they too have a max.poll.interval.ms)
        [described] = admin.describe_consumer_groups([group]).values()
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(group, p) for p in silent])
        [listed] = admin.list_consumer_group_offsets([request]).values()
        poll_in_turn(others, lambda: described.done() and listed.done())
        members = {m.member_id for m in described.result().members}
        assert members == {b.member_id, c.member_id}, (members, a.member_id, b.member_id)
        committed = {tp.partition: tp.offset for tp in listed.result().topic_partitions}
        assert committed == positions, (committed, positions)
    finally:
        for m in (a, b, c):
            m.close()
