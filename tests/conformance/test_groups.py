"""Consumer groups over the wire: rebalances, generations, member ids, and committed offsets.

Members are driven request by request (kafka_ref.conformance.groups.Member), so a test can
be the stale member or the unknown one on purpose. Each test uses a fresh group.
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance.groups import (
    MEMBER_ID_REQUIRED,
    Member,
    commit,
    fetch_offsets,
    form_group_again,
    two_members,
)

ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
OFFSET_METADATA_TOO_LARGE = 12


@pytest.mark.spec("REBAL-1", "REBAL-2", "REBAL-9")
def test_each_member_gets_exactly_its_own_assignment(connect, group):
    leader, follower = two_members(connect, group)
    assert leader.generation == follower.generation
    assert {m.member_id for m in leader.members} == {leader.member_id, follower.member_id}
    assert follower.members == [], "only the leader receives the member list"
    plan = {leader.member_id: b"partitions 0,1", follower.member_id: b"partitions 2,3"}
    follower.send_sync()  # the follower waits for the leader's assignment (REBAL-2)
    mine = leader.sync(plan)
    theirs = follower.wire.receive()
    assert (mine.error_code, theirs.error_code) == (0, 0)
    # REBAL-1: each gets the bytes the leader gave *its* id, so no partition has two owners
    assert bytes(mine.assignment) == plan[leader.member_id]
    assert bytes(theirs.assignment) == plan[follower.member_id]


@pytest.mark.spec("REBAL-2")
def test_a_member_the_leader_left_out_gets_an_empty_assignment(connect, group):
    leader, follower = two_members(connect, group)
    follower.send_sync()
    assert bytes(leader.sync({leader.member_id: b"everything"}).assignment) == b"everything"
    assert bytes(follower.wire.receive().assignment) == b""


@pytest.mark.spec("REBAL-3", "OFFSET-8")
def test_a_stale_generation_is_illegal_generation(target, connect, group, make_topic):
    leader, follower = two_members(connect, group)
    stale = leader.generation
    form_group_again([leader, follower])  # a second rebalance: `stale` is now the past
    assert leader.generation != stale
    assert leader.heartbeat(generation=stale) == ILLEGAL_GENERATION
    assert leader.sync({}, generation=stale).error_code == ILLEGAL_GENERATION
    topic = make_topic("commit")
    errors = commit(
        leader.wire, group, {(topic, 0): 5}, generation=stale, member_id=leader.member_id
    )
    assert errors == {(topic, 0): ILLEGAL_GENERATION}
    assert leader.heartbeat() == 0, "the current generation is fine"


@pytest.mark.spec("REBAL-4")
def test_unknown_members_are_unknown_member_id(connect, group):
    leader, follower = two_members(connect, group)
    follower.send_sync()
    leader.sync({})
    follower.wire.receive()  # a Stable group
    assert leader.heartbeat(member_id="nobody-123") == UNKNOWN_MEMBER_ID
    ghost = Member(connect(), group)
    ghost.member_id, ghost.generation = "nobody-456", leader.generation
    assert ghost.sync({}).error_code == UNKNOWN_MEMBER_ID
    assert ghost.leave() == UNKNOWN_MEMBER_ID


@pytest.mark.spec("REBAL-10")
def test_a_new_member_first_gets_its_id(connect, group):
    member = Member(connect(), group)
    assert member.get_member_id() == MEMBER_ID_REQUIRED
    assert member.member_id, "MEMBER_ID_REQUIRED carries the id to join with"
    resp = member.join()
    assert resp.error_code == 0 and resp.member_id == member.member_id


@pytest.mark.spec("REBAL-5", "REBAL-12", "REBAL-9")
def test_a_leaving_member_triggers_a_rebalance_the_other_learns_of(connect, group):
    leader, follower = two_members(connect, group)
    follower.send_sync()
    leader.sync({})
    follower.wire.receive()
    generation = leader.generation
    assert follower.leave() == 0
    # REBAL-5: the remaining member's heartbeat says "rejoin"
    assert leader.heartbeat() == REBALANCE_IN_PROGRESS
    resp = leader.join()
    assert resp.error_code == 0 and resp.generation_id == generation + 1  # REBAL-9
    assert [m.member_id for m in resp.members] == [leader.member_id]  # REBAL-12


@pytest.mark.spec("OFFSET-1")
def test_a_partition_never_committed_fetches_minus_one(target, connect, group, make_topic):
    topic = make_topic("never")
    got = fetch_offsets(connect(), group, [(topic, 0), (topic, 1)])
    assert {k: v.committed_offset for k, v in got.items()} == {(topic, 0): -1, (topic, 1): -1}


@pytest.mark.spec("OFFSET-3", "OFFSET-2")
def test_commit_metadata_round_trips_and_too_long_is_refused(target, connect, group, make_topic):
    topic = make_topic("meta")
    w = connect()
    text = "ünïcode \x00 and | pipes"
    assert commit(w, group, {(topic, 0): 42}, metadata=text) == {(topic, 0): 0}
    got = fetch_offsets(w, group, [(topic, 0)])[(topic, 0)]
    assert (got.committed_offset, got.metadata) == (42, text)
    errors = commit(w, group, {(topic, 0): 43}, metadata="x" * 5000)
    assert errors == {(topic, 0): OFFSET_METADATA_TOO_LARGE}
    assert fetch_offsets(w, group, [(topic, 0)])[(topic, 0)].committed_offset == 42


@pytest.mark.spec("OFFSET-8")
def test_an_outsider_commits_only_to_an_empty_group(target, connect, group, make_topic):
    topic = make_topic("outsider")
    w = connect()
    assert commit(w, group, {(topic, 0): 1}) == {(topic, 0): 0}, "an Empty group: accepted"
    two_members(connect, group)
    assert commit(w, group, {(topic, 0): 2}) == {(topic, 0): UNKNOWN_MEMBER_ID}


@pytest.mark.spec("OFFSET-4", "BROKER-46")
def test_committed_offsets_survive_a_restart(target, connect, group, make_topic):
    target.require("restart")
    topic = make_topic("durable")
    w = connect()
    offsets = {(topic, 0): 17, (topic, 1): 4}
    assert set(commit(w, group, offsets, metadata="m").values()) == {0}
    w.close()
    target.restart()
    got = fetch_offsets(connect(), group, list(offsets))
    assert {k: v.committed_offset for k, v in got.items()} == offsets
