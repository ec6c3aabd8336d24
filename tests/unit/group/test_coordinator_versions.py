"""The group coordinator's rules for the newer versions of the group APIs (Kafka 4.4).

The same `Harness` as test_coordinator.py: a real `GroupCoordinator` on a manual clock, its
`__consumer_offsets` in memory. What the wire adds (encodings, topic ids, batches of groups
and keys) is checked over the wire in tests/conformance.
"""

from __future__ import annotations

import logging

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.group import offsets_records as rec
from kafka_ref.group.group_metadata import EMPTY, STABLE
from kafka_ref.protocol.consumer_protocol import Subscription, encode_subscription
from tests.unit.group.test_coordinator import TP0, TP1, E, G, Harness, om

OK = ErrorCode.NO_ERROR


def subscribed(*topics: str) -> list[tuple[str, bytes]]:
    """A consumer's protocols: "range" with a subscription to `topics`."""
    return [("range", encode_subscription(Subscription(list(topics))))]


def delete_offsets(h: Harness, partitions, group=G):
    box = []
    h.coordinator.delete_offsets(group, list(partitions), lambda *answer: box.append(answer))
    return box[0]


def commit_at(h: Harness, version: int, offsets, member_id="", generation=-1, instance=None):
    box = []
    h.coordinator.commit_offsets(
        G, member_id, instance, generation, offsets, box.append, api_version=version
    )
    return box[0]


# -- OffsetCommit v6+, v7+, v9+ ---------------------------------------------------------
@pytest.mark.spec("OFFSET-10")
def test_the_committed_leader_epoch_is_kept_through_a_restart():
    h = Harness()
    assert h.commit({TP0: om(7)._replace(leader_epoch=4), TP1: om(8)}) == {TP0: OK, TP1: OK}
    for coordinator in (h.coordinator, h.restart):
        coordinator = coordinator() if callable(coordinator) else coordinator
        _, offsets = coordinator.fetch_offsets(G, [TP0, TP1])
        assert (offsets[TP0].offset, offsets[TP0].leader_epoch) == (7, 4)
        assert offsets[TP1].leader_epoch == -1  # a v2-v5 commit carries none


@pytest.mark.spec("OFFSET-11")
def test_v9_tells_a_member_of_a_missing_group_group_id_not_found():
    h = Harness()
    assert commit_at(h, 8, {TP0: om(1)}, "m", 3) == {TP0: E.ILLEGAL_GENERATION}
    assert commit_at(h, 9, {TP0: om(1)}, "m", 3) == {TP0: E.GROUP_ID_NOT_FOUND}
    assert h.group() is None and not any(h.log.values())  # nothing written
    assert commit_at(h, 9, {TP0: om(1)}) == {TP0: OK}  # generation -1: a simple group


@pytest.mark.spec("OFFSET-8")
def test_generation_minus_one_commits_to_an_empty_group_whatever_its_member_id():
    h = Harness()
    members, _ = h.stable_group(1)
    assert h.commit({TP0: om(1)}, "stranger", -1) == {TP0: E.UNKNOWN_MEMBER_ID}
    h.coordinator.rebalance.leave_group(G, [(members[0], None)])
    h.advance(0)
    assert h.group().state is EMPTY
    assert h.commit({TP0: om(2)}, "stranger", -1) == {TP0: OK}


@pytest.mark.spec("OFFSET-12")
def test_a_commit_names_its_instance_id_and_a_fenced_instance_cannot_commit():
    h = Harness()
    first = h.join(instance="i-x")[0]
    h.sync(first.member_id, first.generation_id, {first.member_id: b"a"}, instance="i-x")
    gen = first.generation_id
    again = h.join(instance="i-x")[0]  # the instance restarts: a new member id
    assert again.error == OK and h.group().state is STABLE
    offsets = {TP0: om(5)}
    assert commit_at(h, 7, offsets, first.member_id, gen, "i-x") == {TP0: E.FENCED_INSTANCE_ID}
    assert commit_at(h, 7, offsets, again.member_id, gen, "i-y") == {TP0: E.UNKNOWN_MEMBER_ID}
    assert commit_at(h, 7, offsets, again.member_id, gen, "i-x") == {TP0: OK}


# -- JoinGroup v8, v9 and LeaveGroup v5 ---------------------------------------------------
def static_leader_rejoins(supports_skip_assignment: bool):
    """i-x leads a Stable group with i-y; i-x restarts (a new member id, same protocols)."""
    h = Harness()
    x = h.join(instance="i-x")[0]
    y = h.join(instance="i-y")
    x = h.join(x.member_id, instance="i-x")[0]
    gen = x.generation_id
    h.sync(y[0].member_id, gen, instance="i-y")
    h.sync(x.member_id, gen, {x.member_id: b"X", y[0].member_id: b"Y"}, instance="i-x")
    box = []
    h.coordinator.rebalance.join_group(
        G,
        "",
        "i-x",
        True,
        "c",
        "/h",
        30_000,
        10_000,
        "consumer",
        [("range", b"sub")],
        box.append,
        supports_skip_assignment=supports_skip_assignment,
    )
    return h, x, box[0], gen


@pytest.mark.spec("REBAL-21", "REBAL-11")
def test_v9_a_static_leader_rejoining_a_stable_group_learns_its_members_and_skips_assignment():
    h, old, answer, gen = static_leader_rejoins(supports_skip_assignment=True)
    assert answer.error == OK and answer.generation_id == gen
    assert answer.leader_id == answer.member_id != old.member_id  # it is the leader again
    assert answer.skip_assignment is True
    assert sorted(m.group_instance_id for m in answer.members) == ["i-x", "i-y"]
    assert h.group().state is STABLE and h.group().generation_id == gen


@pytest.mark.spec("REBAL-21")
def test_before_v9_the_rejoining_static_leader_is_told_the_old_leader_id_and_no_members():
    h, old, answer, gen = static_leader_rejoins(supports_skip_assignment=False)
    assert answer.error == OK and answer.generation_id == gen
    assert answer.leader_id == old.member_id != answer.member_id
    assert answer.members == [] and answer.skip_assignment is False
    assert h.group().state is STABLE


@pytest.mark.spec("REBAL-21")
def test_a_static_follower_rejoining_gets_no_members_even_at_v9():
    h = Harness()
    x = h.join(instance="i-x")[0]
    y = h.join(instance="i-y")
    x = h.join(x.member_id, instance="i-x")[0]
    h.sync(y[0].member_id, x.generation_id, instance="i-y")
    h.sync(x.member_id, x.generation_id, {}, instance="i-x")
    box = []
    h.coordinator.rebalance.join_group(
        G,
        "",
        "i-y",
        True,
        "c",
        "/h",
        30_000,
        10_000,
        "consumer",
        [("range", b"sub")],
        box.append,
        supports_skip_assignment=True,
    )
    assert box[0].error == OK and box[0].leader_id == x.member_id
    assert box[0].members == [] and box[0].skip_assignment is False


@pytest.mark.spec("REBAL-20")
def test_a_members_reason_is_logged_and_changes_nothing(caplog):
    h = Harness()
    with caplog.at_level(logging.INFO, logger="kafka_ref.group.rebalance"):
        box = []
        h.coordinator.rebalance.join_group(
            G,
            "",
            None,
            False,
            "c",
            "/h",
            30_000,
            10_000,
            "consumer",
            [("range", b"s")],
            box.append,
            reason="rebalance after a restart",
        )
        h.scheduler.run_due()
        member = box[0].member_id
        assert box[0].error == OK and box[0].generation_id == 1
        error, results = h.coordinator.rebalance.leave_group(G, [(member, None, "shutting down")])
    assert (error, results) == (OK, [(member, None, OK)])
    text = caplog.text
    assert "client reason: rebalance after a restart" in text
    leaving = f"member '{member}' (instance None) leaves group {G}"
    assert f"{leaving}; client reason: shutting down" in text


@pytest.mark.spec("REBAL-22")
def test_a_batch_of_leaving_members_is_answered_member_by_member():
    h = Harness()
    members, _ = h.stable_group(2)
    error, results = h.coordinator.rebalance.leave_group(
        G, [(members[0], None), ("ghost", None), ("", "no-such-instance")]
    )
    assert error == OK
    assert [code for _, _, code in results] == [OK, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]
    assert list(h.group().members) == [members[1]]
    assert h.coordinator.rebalance.leave_group("nobody", [("a", None)]) == (
        OK,
        [("a", None, E.UNKNOWN_MEMBER_ID)],
    )


# -- ListGroups v4, v5 ---------------------------------------------------------------
@pytest.mark.spec("REBAL-24")
def test_list_groups_filters_by_state_and_type_ignoring_case():
    h = Harness()
    h.stable_group(1)
    h.commit({TP0: om(1)}, group="simple")
    everything = {g.group_id: (g.state, g.group_type) for g in h.coordinator.list_groups()[1]}
    assert everything == {G: ("Stable", "classic"), "simple": ("Empty", "classic")}

    def listed(states=(), types=()):
        return sorted(g.group_id for g in h.coordinator.list_groups(list(states), list(types))[1])

    assert listed(states=["stable"]) == [G]
    assert listed(states=[" EMPTY ", "Dead"]) == ["simple"]
    assert listed(types=["Classic"]) == [G, "simple"]
    assert listed(types=["consumer"]) == [] and listed(types=["share"]) == []
    assert listed(states=["Stable"], types=["classic"]) == [G]


# -- OffsetDelete --------------------------------------------------------------------
@pytest.mark.spec("OFFSET-15")
def test_offset_delete_writes_tombstones_and_the_offsets_stay_gone_after_a_restart():
    h = Harness()
    assert h.commit({TP0: om(5), TP1: om(6)}) == {TP0: OK, TP1: OK}
    assert delete_offsets(h, [TP0]) == (OK, {TP0: OK})
    partition = h.coordinator.partition_for(G)
    assert h.log[partition][-1] == (rec.offset_commit_key(G, TP0), None)
    for coordinator in (h.coordinator, h.restart):
        coordinator = coordinator() if callable(coordinator) else coordinator
        offsets = coordinator.fetch_offsets(G, [TP0, TP1])[1]
        assert offsets[TP0] is None and offsets[TP1].offset == 6
    assert h.group().state is EMPTY  # the group stays until the expiration removes it


@pytest.mark.spec("OFFSET-15")
def test_offset_delete_refuses_topics_a_member_subscribes_to():
    h = Harness()
    other = TP0._replace(topic="other")
    members, gen = h.stable_group(2, protocols=subscribed("t"))
    assert h.commit({TP0: om(1), other: om(2)}, members[0], gen) == {TP0: OK, other: OK}
    assert delete_offsets(h, [TP0, other]) == (OK, {TP0: E.GROUP_SUBSCRIBED_TO_TOPIC, other: OK})
    offsets = h.coordinator.fetch_offsets(G, [TP0, other])[1]
    assert offsets[TP0].offset == 1 and offsets[other] is None
    # once the members are gone the group subscribes to nothing
    for member in members:
        h.coordinator.rebalance.leave_group(G, [(member, None)])
    h.advance(0)
    assert h.group().state is EMPTY
    assert delete_offsets(h, [TP0]) == (OK, {TP0: OK})


@pytest.mark.spec("OFFSET-15")
def test_offset_delete_of_a_missing_group_or_one_whose_members_are_not_consumers():
    h = Harness()
    assert delete_offsets(h, [TP0]) == (E.GROUP_ID_NOT_FOUND, {})
    assert h.join(protocol_type="connect")[0].error == OK  # a member, not a consumer
    assert delete_offsets(h, [TP0]) == (E.NON_EMPTY_GROUP, {})
    assert delete_offsets(h, [TP0], group="") == (E.INVALID_GROUP_ID, {})


@pytest.mark.spec("OFFSET-15")
def test_offset_delete_of_undecodable_consumer_subscriptions_deletes_nothing():
    h = Harness()
    members, gen = h.stable_group(1, protocols=[("range", b"not a subscription")])
    assert h.commit({TP0: om(1)}, members[0], gen) == {TP0: OK}
    assert delete_offsets(h, [TP0]) == (OK, {TP0: E.GROUP_SUBSCRIBED_TO_TOPIC})


@pytest.mark.spec("OFFSET-15", "TXN-16")
def test_offset_delete_drops_a_pending_transactional_offset_too():
    h = Harness()
    box = []
    h.coordinator.commit_txn_offsets(G, 7, 0, {TP0: om(9)}, box.append)
    assert box == [{TP0: OK}]
    assert delete_offsets(h, [TP0]) == (OK, {TP0: OK})
    h.coordinator.complete_txn_offsets(h.coordinator.partition_for(G), 7, commit=True)
    assert h.coordinator.fetch_offsets(G, [TP0])[1][TP0] is None  # the marker brings nothing


@pytest.mark.spec("OFFSET-15")
def test_a_failed_tombstone_write_keeps_the_offsets():
    h = Harness()
    h.commit({TP0: om(5)})
    h.fail_appends = E.NOT_LEADER_OR_FOLLOWER
    assert delete_offsets(h, [TP0]) == (E.NOT_COORDINATOR, {})
    h.fail_appends = None
    assert h.coordinator.fetch_offsets(G, [TP0])[1][TP0].offset == 5
