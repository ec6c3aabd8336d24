"""Our consumers in groups, against an in-process kafka-ref broker.

Each test starts a broker with `group.initial.rebalance.delay.ms=0` and a small
`group.min.session.timeout.ms`, so rebalances take milliseconds. Several consumers are
driven from the test thread in turn (`settle`): a consumer's `poll(timeout)` advances its
join as far as the timeout allows, so one thread can run a whole group.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafka_ref.client import (
    Admin,
    CommitFailedError,
    Consumer,
    ConsumerRebalanceListener,
    NewTopic,
    Producer,
    TopicPartition,
)
from kafka_ref.errors import ErrorCode, KafkaError
from tests.unit.server.conftest import make_broker  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(90)

GROUP_PROPS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 200,
    "offsets.topic.num.partitions": 3,
}


@pytest.fixture
def cluster(make_broker):  # noqa: F811
    """(bootstrap, admin, consumer factory); every consumer is closed at the end."""
    broker = make_broker(props=GROUP_PROPS)
    bootstrap = f"127.0.0.1:{broker.port}"
    consumers: list[Consumer] = []

    def consumer(**config) -> Consumer:
        settings = {
            "group_id": "g",
            "auto_offset_reset": "earliest",
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 100,
            "fetch_max_wait_ms": 50,
            **config,
        }
        c = Consumer(bootstrap, **settings)
        consumers.append(c)
        return c

    admin = Admin(bootstrap)
    yield bootstrap, admin, consumer
    for c in consumers:
        c.close()
    admin.close()


def create_and_fill(bootstrap: str, admin: Admin, topic: str, partitions: int, n: int) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)])
    with Producer(bootstrap, linger_ms=0) as producer:
        for i in range(n):
            producer.send(topic, b"v%d" % i, partition=i % partitions)
        producer.flush()


def settle(
    consumers: list[Consumer], until: Callable[[], bool], timeout: float = 15.0, records=None
) -> float:
    """Poll every consumer in turn until `until()` holds; returns the seconds it took.
    Records polled are appended to records[i] for consumer i, with the assignment then."""
    start = time.monotonic()
    while not until():
        assert time.monotonic() - start < timeout, "the group did not settle in time"
        for i, c in enumerate(consumers):
            got = c.poll(0.02)
            if records is not None:
                records[i].extend((r, c.assignment()) for r in got)
    return time.monotonic() - start


def take(c: Consumer, n: int, timeout: float = 15.0) -> list:
    """Poll `c` until it returned at least `n` records."""
    records: list = []
    deadline = time.monotonic() + timeout
    while len(records) < n:
        assert time.monotonic() < deadline, f"only {len(records)} of {n} records arrived"
        records.extend(c.poll(0.05))
    return records


def stable(*consumers: Consumer) -> bool:
    return all(c.assignment() and not c.coordinator.rejoin_needed_or_pending() for c in consumers)


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, list[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked):
        self.events.append(("revoked", sorted(revoked)))

    def on_partitions_assigned(self, assigned):
        self.events.append(("assigned", sorted(assigned)))

    def on_partitions_lost(self, lost):
        self.events.append(("lost", sorted(lost)))


ALL6 = {TopicPartition("t", p) for p in range(6)}


@pytest.mark.spec("CLIENT-20", "CLIENT-21", "CLIENT-29")
def test_three_members_share_six_partitions_and_take_over_on_close(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "t", 6, 60)
    group = [consumer(), consumer(), consumer()]
    for c in group:
        c.subscribe(["t"])
    records: list[list] = [[], [], []]
    settle(group, lambda: stable(*group), records=records)
    owned = [c.assignment() for c in group]
    assert set().union(*owned) == ALL6  # complete
    assert sum(len(o) for o in owned) == 6  # disjoint
    assert sorted(len(o) for o in owned) == [2, 2, 2]  # range over 6 partitions, 3 members
    settle(group, lambda: sum(map(len, records)) >= 60, records=records)
    for got in records:  # a member reads only the partitions it owns (CLIENT-20)
        for record, assignment in got:
            assert TopicPartition(record.topic, record.partition) in assignment

    group[2].close()  # LeaveGroup: no waiting for its 6 s session timeout
    rest = group[:2]
    took = settle(rest, lambda: stable(*rest) and sum(len(c.assignment()) for c in rest) == 6)
    assert took < 5.0
    assert rest[0].assignment() | rest[1].assignment() == ALL6
    assert not rest[0].assignment() & rest[1].assignment()


@pytest.mark.spec("CLIENT-23")
def test_listener_revoked_comes_before_assigned_and_close_revokes(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "t", 6, 0)
    listener = Recorder()
    first = consumer(client_id="first")
    first.subscribe(["t"], listener=listener)
    settle([first], lambda: stable(first))
    assert listener.events == [("assigned", sorted(ALL6))]
    second = consumer(client_id="second")
    second.subscribe(["t"])
    settle([first, second], lambda: stable(first, second))
    kept = sorted(first.assignment())
    # eager (the default list includes "range"): everything revoked, then the new share
    assert listener.events[1:] == [("revoked", sorted(ALL6)), ("assigned", kept)]
    first.close()
    assert listener.events[-1] == ("revoked", kept)


@pytest.mark.spec("CLIENT-21", "CLIENT-23")
def test_cooperative_members_revoke_only_what_moves(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "t", 6, 0)
    listener = Recorder()
    first = consumer(partition_assignment_strategy=["cooperative-sticky"])
    first.subscribe(["t"], listener=listener)
    settle([first], lambda: stable(first))
    second = consumer(partition_assignment_strategy=["cooperative-sticky"])
    second.subscribe(["t"])
    settle([first, second], lambda: stable(first, second) and len(second.assignment()) == 3)
    revoked = [tps for kind, tps in listener.events if kind == "revoked"]
    assert revoked == [sorted(second.assignment())]  # only the partitions that moved
    assert first.assignment() | second.assignment() == ALL6
    assert not first.assignment() & second.assignment()


@pytest.mark.spec("CLIENT-22", "CLIENT-26")
def test_commit_and_resume_from_the_committed_offset(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "one", 1, 20)
    tp = TopicPartition("one", 0)
    reader = consumer(enable_auto_commit=False, max_poll_records=7)
    reader.subscribe(["one"])
    got = take(reader, 1)
    assert [r.offset for r in got] == list(range(7))
    assert reader.committed([tp]) == {tp: None}  # nothing committed yet
    reader.commit_sync()  # the position: the next record to read
    committed = reader.committed([tp])[tp].offset
    assert committed == reader.position(tp) == 7
    reader.commit_sync({tp: 5})
    assert reader.committed([tp])[tp].offset == 5 <= reader.position(tp)
    reader.close()  # auto-commit is off: the close commits nothing

    successor = consumer(enable_auto_commit=False)
    successor.subscribe(["one"])
    resumed = take(successor, 1)
    assert resumed[0].offset == 5  # from the committed offset, not auto.offset.reset

    fresh = consumer(group_id="other", auto_offset_reset="latest")  # never committed
    fresh.subscribe(["one"])
    settle([fresh], lambda: stable(fresh) and fresh.position(tp) is not None)
    assert fresh.position(tp) == 20


@pytest.mark.spec("CLIENT-28")
def test_auto_commit_commits_positions_periodically_and_on_close(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "one", 1, 10)
    tp = TopicPartition("one", 0)
    periodic = consumer(auto_commit_interval_ms=100)
    periodic.subscribe(["one"])
    take(periodic, 10)
    settle([periodic], lambda: admin.list_consumer_group_offsets("g").get(tp, (0,))[0] == 10)
    periodic.close()

    on_close = consumer(group_id="g2", auto_commit_interval_ms=600_000)
    on_close.subscribe(["one"])
    take(on_close, 10)
    assert admin.list_consumer_group_offsets("g2") == {}  # the interval has not passed
    on_close.close()
    assert admin.list_consumer_group_offsets("g2")[tp].offset == 10


@pytest.mark.spec("CLIENT-24")
def test_heartbeats_keep_a_member_that_does_not_poll(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "t", 6, 0)
    member = consumer(session_timeout_ms=600, heartbeat_interval_ms=100)
    member.subscribe(["t"])
    settle([member], lambda: stable(member))
    generation = member.coordinator.generation
    time.sleep(2.0)  # three session timeouts without poll(): only the heartbeat thread talks
    group = admin.describe_groups(["g"])["g"]
    assert group.state == "Stable"
    assert [m.member_id for m in group.members] == [generation.member_id]
    assert member.coordinator.generation == generation


@pytest.mark.spec("CLIENT-25", "CLIENT-23")
def test_max_poll_interval_leaves_the_group_and_the_next_poll_rejoins(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "t", 6, 0)
    listener = Recorder()
    slow = consumer(max_poll_interval_ms=1000, client_id="slow")
    slow.subscribe(["t"], listener=listener)
    busy = consumer(client_id="busy")
    busy.subscribe(["t"])
    settle([slow, busy], lambda: stable(slow, busy))
    owned = sorted(slow.assignment())
    # `slow` stops polling; its heartbeat thread leaves after max.poll.interval.ms
    took = settle([busy], lambda: stable(busy) and busy.assignment() == ALL6)
    assert took < 5.0
    assert [m.client_id for m in admin.describe_groups(["g"])["g"].members] == ["busy"]
    settle([slow, busy], lambda: stable(slow, busy))  # the next poll rejoins
    assert ("lost", owned) in listener.events  # no commit possible: lost, not revoked
    assert slow.assignment() | busy.assignment() == ALL6


@pytest.mark.spec("CLIENT-27")
def test_commits_carry_the_generation(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "one", 1, 3)
    tp = TopicPartition("one", 0)
    manual = consumer(group_id="solo")  # assign(): generation -1, member ""
    manual.assign([tp])
    manual.commit_sync({tp: 2})
    assert manual.committed([tp])[tp].offset == 2

    member = consumer()
    member.subscribe(["one"])
    settle([member], lambda: stable(member))
    outsider = consumer()  # same group "g", but outside its generation
    outsider.assign([tp])
    with pytest.raises(CommitFailedError):
        outsider.commit_sync({tp: 1})
    member.coordinator.reset_generation("test: the member was fenced")
    with pytest.raises(CommitFailedError):  # no generation: refused before any request
        member.commit_sync({tp: 1})


@pytest.mark.spec("CLIENT-29")
def test_a_static_member_keeps_its_partitions_across_a_restart(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "t", 6, 0)
    a = consumer(group_instance_id="a")
    b = consumer(group_instance_id="b")
    for c in (a, b):
        c.subscribe(["t"])
    settle([a, b], lambda: stable(a, b))
    owned, generation = a.assignment(), b.coordinator.generation.generation_id
    a.close()  # a static member sends no LeaveGroup: the group does not rebalance
    assert len(admin.describe_groups(["g"])["g"].members) == 2
    again = consumer(group_instance_id="a")
    again.subscribe(["t"])
    settle([again, b], lambda: stable(again, b))
    assert again.assignment() == owned
    assert b.coordinator.generation.generation_id == generation


@pytest.mark.spec("CLIENT-30")
def test_admin_describes_lists_alters_and_deletes_groups(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "t", 6, 12)
    member = consumer(client_id="describe-me")
    member.subscribe(["t"])
    settle([member], lambda: stable(member))
    member.commit_sync({TopicPartition("t", 0): 1})
    assert [g.group_id for g in admin.list_groups()] == ["g"]
    group = admin.describe_groups(["g"])["g"]
    assert (group.state, group.protocol, group.protocol_type) == ("Stable", "range", "consumer")
    (m,) = group.members
    assert m.client_id == "describe-me" and set(m.assignment) == ALL6 and m.topics == ("t",)
    assert admin.list_consumer_group_offsets("g")[TopicPartition("t", 0)].offset == 1
    for refused, expected in (
        (lambda: admin.alter_consumer_group_offsets("g", {TopicPartition("t", 0): 3}), None),
        (lambda: admin.delete_groups(["g"]), ErrorCode.NON_EMPTY_GROUP),
    ):
        with pytest.raises(KafkaError) as info:
            refused()
        assert expected is None or info.value.code == expected
    member.close()
    admin.alter_consumer_group_offsets("g", {TopicPartition("t", 0): 3})
    assert admin.list_consumer_group_offsets("g")[TopicPartition("t", 0)].offset == 3
    admin.delete_groups(["g"])
    assert admin.describe_groups(["g"])["g"].state == "Dead"
    assert admin.list_consumer_group_offsets("g") == {}


@pytest.mark.spec("CLIENT-21")
def test_a_pattern_subscription_picks_up_new_matching_topics(cluster):
    bootstrap, admin, consumer = cluster
    create_and_fill(bootstrap, admin, "p-a", 2, 0)
    create_and_fill(bootstrap, admin, "q", 2, 0)
    member = consumer(metadata_max_age_ms=200)
    member.subscribe("^p-.*")
    settle([member], lambda: stable(member) and len(member.assignment()) == 2)
    assert {tp.topic for tp in member.assignment()} == {"p-a"}
    create_and_fill(bootstrap, admin, "p-b", 1, 0)
    settle([member], lambda: stable(member) and len(member.assignment()) == 3)
    assert member.subscription() == {"p-a", "p-b"}
