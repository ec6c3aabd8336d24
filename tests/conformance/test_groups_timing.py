"""Consumer groups against the clock: session and rebalance timeouts, the initial delay,
static members, the states a group goes through, and where a group lives.

Timing rules are checked with the smallest timeouts a broker allows, so they need the
`short-sessions` capability (500 ms sessions, no initial rebalance delay); the one that
needs a non-zero initial delay asks for a broker started with it (`configurable-broker`).
Each wait is a few times the timeout, so a loaded machine does not make a test flaky, and
each check is one a broker that ignored the timeout would fail.
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.conformance.groups import (
    MEMBER_ID_REQUIRED,
    Member,
    commit,
    coordinator,
    describe,
    form_group,
    join_together,
    list_groups,
    two_members,
)
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol.messages import ApiKey, HeartbeatRequest, LeaveGroupRequest

UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT, REBALANCE_IN_PROGRESS = 25, 26, 27
INVALID_GROUP_ID, GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID = 24, 81, 82
SESSION_MS = 500


def sync_all(leader: Member, followers: list[Member], plan: dict[str, bytes] | None = None):
    for m in followers:
        m.send_sync()
    mine = leader.sync(plan or {})
    return [mine] + [m.wire.receive() for m in followers]


def heartbeat_for(member: Member, seconds: float) -> list[int]:
    """Heartbeat every 100 ms for `seconds`; the error codes seen."""
    codes, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        codes.append(member.heartbeat())
        time.sleep(0.1)
    return codes


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.spec("REBAL-6")
def test_a_silent_member_is_removed_but_a_parked_one_is_not(target, connect, group):
    target.require("short-sessions")
    leader, follower = two_members(connect, group, session_timeout_ms=SESSION_MS)
    sync_all(leader, [follower])
    generation = leader.generation
    # the follower falls silent; the leader keeps heartbeating and is told to rejoin
    codes = heartbeat_for(leader, 4 * SESSION_MS / 1000)
    assert REBALANCE_IN_PROGRESS in codes, f"the silent member was not removed: {codes}"
    # the leader's JoinGroup completes without the follower: it was removed
    resp = leader.join()
    assert resp.error_code == 0 and resp.generation_id > generation
    assert [m.member_id for m in resp.members] == [leader.member_id]
    assert follower.heartbeat() == UNKNOWN_MEMBER_ID


@pytest.mark.spec("REBAL-6")
def test_a_member_parked_in_join_outlives_its_session(target, connect, group):
    target.require("short-sessions")
    leader, follower = two_members(connect, group, session_timeout_ms=SESSION_MS)
    sync_all(leader, [follower])
    leader.send_join()  # parked until the follower rejoins or is removed
    time.sleep(4 * SESSION_MS / 1000)  # both silent; only the follower is *not* waiting
    resp = leader.finish_join()
    assert resp.error_code == 0, "the parked member was not removed"
    assert [m.member_id for m in resp.members] == [leader.member_id]
    # the last member silent: removed too, the group is Empty
    sync_all(leader, [])
    time.sleep(4 * SESSION_MS / 1000)
    with connect() as w:
        assert describe(w, group).group_state == "Empty"


@pytest.mark.spec("REBAL-7")
def test_members_that_do_not_rejoin_in_the_rebalance_timeout_are_removed(target, connect, group):
    target.require("short-sessions")
    # long sessions, a 1 s rebalance timeout: only the rebalance timeout can remove anyone
    leader, follower = two_members(connect, group, rebalance_timeout_ms=1000)
    sync_all(leader, [follower])
    started = time.monotonic()
    leader.send_join()
    # it knows, and does not rejoin (a heartbeat on its own connection may be handled
    # before the leader's JoinGroup: it is answered as before the rebalance)
    wait_until(lambda: follower.heartbeat() == REBALANCE_IN_PROGRESS, 5, "the rebalance")
    resp = leader.finish_join()
    waited = time.monotonic() - started
    assert resp.error_code == 0 and [m.member_id for m in resp.members] == [leader.member_id]
    assert 0.5 <= waited < 8, f"the join completed after {waited:.1f}s, not at the timeout"
    assert follower.heartbeat() == UNKNOWN_MEMBER_ID


@pytest.mark.spec("REBAL-13")
def test_members_that_do_not_sync_in_the_rebalance_timeout_are_removed(target, connect, group):
    target.require("short-sessions")
    _leader, follower = two_members(connect, group, rebalance_timeout_ms=1000)
    generation = follower.generation
    follower.send_sync()  # waits for the leader's assignment, which never comes
    started = time.monotonic()
    resp = follower.wire.receive()
    assert resp.error_code == REBALANCE_IN_PROGRESS, "the group rebalanced without the leader"
    assert time.monotonic() - started < 8
    rejoined = follower.join()
    assert rejoined.error_code == 0 and rejoined.generation_id > generation
    assert rejoined.leader == follower.member_id
    assert [m.member_id for m in rejoined.members] == [follower.member_id]


@pytest.mark.spec("REBAL-8")
def test_without_an_initial_delay_a_lone_join_completes_at_once(target, connect, group):
    target.require("short-sessions")
    member = Member(connect(), group)
    member.get_member_id()
    started = time.monotonic()
    assert member.join().error_code == 0
    assert time.monotonic() - started < 1.5, "no initial rebalance delay on this target"


@pytest.mark.spec("REBAL-8")
def test_the_initial_delay_gathers_members_into_one_generation(configured_broker):
    broker = configured_broker({"group.initial.rebalance.delay.ms": 1500})
    broker.require("groups")
    group = broker.group_name("delay")
    with broker.wire() as w:
        _host, port = coordinator(w, group)
    a, b = Member(Wire(broker.host, port), group), Member(Wire(broker.host, port), group)
    try:
        for m in (a, b):
            assert m.get_member_id() in (0, MEMBER_ID_REQUIRED)
        started = time.monotonic()
        a.send_join()
        time.sleep(0.5)  # b arrives during a's delay
        b.send_join()
        ra, rb = a.finish_join(), b.finish_join()
        waited = time.monotonic() - started
        assert (ra.error_code, rb.error_code) == (0, 0)
        assert ra.generation_id == rb.generation_id, "one generation for both"
        assert waited >= 1.4, f"the first join completed after {waited:.2f}s, before the delay"
    finally:
        a.wire.close()
        b.wire.close()


@pytest.mark.spec("REBAL-11")
def test_a_static_member_rejoins_without_a_rebalance_and_fences_its_old_id(target, connect, group):
    target.require("short-sessions")
    old = Member(connect(), group, instance_id="instance-1")
    assert old.join().error_code == 0  # a static member needs no MEMBER_ID_REQUIRED round
    other = Member(connect(), group)
    assert other.get_member_id() == MEMBER_ID_REQUIRED
    join_together([old, other])
    leader, follower = (old, other) if old.is_leader else (other, old)
    plan = {old.member_id: b"old's partitions", other.member_id: b"other's partitions"}
    sync_all(leader, [follower], plan)
    generation = old.generation
    # "instance-1" restarts: an empty member id, the same instance id
    new = Member(connect(), group, instance_id="instance-1")
    resp = new.join()
    assert resp.error_code == 0 and resp.generation_id == generation, "no rebalance"
    assert resp.member_id != old.member_id and resp.member_id.startswith("instance-1-")
    assert other.heartbeat() == 0, "the others were not made to rebalance"
    assert bytes(new.sync().assignment) == b"old's partitions", "it takes the old place"
    with connect() as w:
        assert describe(w, group).group_state == "Stable"
    # the old member id is fenced
    assert old.heartbeat() == FENCED_INSTANCE_ID
    assert old.sync().error_code == FENCED_INSTANCE_ID
    body = HeartbeatRequest(
        group_id=group,
        generation_id=generation,
        member_id=old.member_id,
        group_instance_id="instance-1",
    )
    assert old.wire.request(ApiKey.HEARTBEAT, 3, body).error_code == FENCED_INSTANCE_ID


@pytest.mark.spec("REBAL-14")
def test_join_group_checks_the_session_timeout_and_the_group_id(target, connect, group):
    for timeout in (1, 10**8):  # below any minimum, above the 30-minute default maximum
        member = Member(connect(), group, session_timeout_ms=timeout)
        assert member.join().error_code == INVALID_SESSION_TIMEOUT, timeout
    with target.wire() as w:
        nobody = Member(w, "")
        assert nobody.join().error_code == INVALID_GROUP_ID
        nobody.member_id, nobody.generation = "someone", 1
        assert nobody.sync().error_code == INVALID_GROUP_ID
        assert nobody.heartbeat() == INVALID_GROUP_ID
        body = LeaveGroupRequest(group_id="", member_id="someone")
        assert w.request(ApiKey.LEAVE_GROUP, 1, body).error_code == INVALID_GROUP_ID


@pytest.mark.spec("REBAL-14")
def test_a_member_beyond_group_max_size_is_refused(configured_broker):
    broker = configured_broker({"group.max.size": 2})
    broker.require("groups")
    group = broker.group_name("max")
    with broker.wire() as w:
        _, port = coordinator(w, group)
    members = [Member(Wire(broker.host, port), group) for _ in range(3)]
    try:
        form_group(members[:2])
        third = members[2]
        code = third.get_member_id()
        if code == MEMBER_ID_REQUIRED:
            code = third.join().error_code
        assert code == GROUP_MAX_SIZE_REACHED
    finally:
        for m in members:
            m.wire.close()


@pytest.mark.spec("REBAL-15")
def test_describe_groups_reports_the_states_by_kafkas_names(target, connect, group):
    w = connect()
    assert describe(w, group).group_state == "Dead", "an unknown group"
    a = Member(connect(), group)
    a.get_member_id()
    assert a.join().error_code == 0
    assert describe(w, group).group_state == "CompletingRebalance"
    assert a.sync({a.member_id: b"all"}).error_code == 0
    state = describe(w, group)
    assert (state.group_state, state.protocol_type) == ("Stable", "consumer")
    assert list_groups(w).get(group) == "consumer"
    b = Member(connect(), group)
    b.get_member_id()
    b.send_join()  # parked until a rejoins
    time.sleep(0.3)
    assert describe(w, group).group_state == "PreparingRebalance"
    a.send_join()
    a.finish_join(), b.finish_join()
    assert describe(w, group).group_state == "CompletingRebalance"
    assert a.leave() == 0 and b.leave() == 0
    assert describe(w, group).group_state == "Empty"


def java_hash(text: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, wrapping at 32 bits (an int32)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def utils_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, with Integer.MIN_VALUE mapped to 0."""
    return 0 if n == -(1 << 31) else abs(n)


def misread_by_to_positive(group: str, partitions: int) -> bool:
    """True when `hash & 0x7fffffff` (Utils.toPositive) names another partition than
    Utils.abs does: a negative hash whose two readings differ modulo `partitions`."""
    h = java_hash(group)
    return utils_abs(h) % partitions != (h & 0x7FFFFFFF) % partitions


def offsets_topic_ends(wire: Wire, partitions: int) -> list[int]:
    return [wire.list_offset("__consumer_offsets", p, -1).offset for p in range(partitions)]


@pytest.mark.spec("REBAL-16")
def test_a_group_lives_on_the_partition_its_java_hash_names(target, wire, make_topic):
    target.require("groups", "list-offsets")
    topic = make_topic("where", 1)
    coordinator(wire, target.group_name())  # creates __consumer_offsets if needed
    meta = wire.metadata(["__consumer_offsets"])
    if not meta.topics or meta.topics[0].error_code != 0:
        pytest.skip("the target keeps committed offsets outside a __consumer_offsets topic")
    n = len(meta.topics[0].partitions)
    # non-ASCII ids: a hash over UTF-8 bytes or code points would pick other partitions
    groups = [target.group_name(hint) for hint in ("plain", "ünïcödé", "clef-\U0001d11e")]
    # an id of negative hash for which `hash & 0x7fffffff` (toPositive) names another partition
    if n > 1:
        candidates = (target.group_name(f"n{i}") for i in range(1000))
        groups.append(next(g for g in candidates if misread_by_to_positive(g, n)))
    for group in groups:
        want = utils_abs(java_hash(group)) % n
        before = offsets_topic_ends(wire, n)
        assert commit(wire, group, {(topic, 0): 1}) == {(topic, 0): 0}
        after = offsets_topic_ends(wire, n)
        grew = [p for p in range(n) if after[p] > before[p]]
        assert grew == [want], f"{group!r}: written to {grew}, hash says {want}"
