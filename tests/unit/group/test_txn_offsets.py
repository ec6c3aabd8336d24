"""TxnOffsetCommit's group checks (TXN-83) and OffsetFetch's require_stable (TXN-84), on
the group coordinator harness of test_coordinator.py."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from tests.unit.group.test_coordinator import TP0, TP1, E, Harness, om

PID, EPOCH = 4000, 0


def txn_commit(h: Harness, offsets, member=("", None, -1), group="group-a"):
    box: list = []
    h.coordinator.commit_txn_offsets(group, PID, EPOCH, offsets, box.append, member)
    return box[0] if box else None


@pytest.mark.spec("TXN-83")
def test_txn_offset_commit_v3_checks_the_member_and_generation():
    h = Harness()
    (a, _), gen = h.stable_group()
    assert txn_commit(h, {TP0: om(5)}, (a, None, gen)) == {TP0: ErrorCode.NO_ERROR}
    assert txn_commit(h, {TP0: om(6)}, (a, None, gen - 1)) == {TP0: E.ILLEGAL_GENERATION}
    assert txn_commit(h, {TP0: om(6)}, ("gone", None, gen)) == {TP0: E.UNKNOWN_MEMBER_ID}
    # v0-v2 name no member: accepted even though the group has members (Kafka does too)
    assert txn_commit(h, {TP1: om(7)}) == {TP1: ErrorCode.NO_ERROR}
    # a member of a group the coordinator does not know
    assert txn_commit(h, {TP0: om(1)}, ("m", None, 1), group="other") == {TP0: E.UNKNOWN_MEMBER_ID}


@pytest.mark.spec("TXN-83")
def test_txn_offset_commit_fences_a_replaced_static_member():
    h = Harness()
    (old,), gen = h.stable_group(n=1, instance="worker-1")
    new = h.join(instance="worker-1")[0].member_id  # the same instance id, restarted
    assert new != old
    assert txn_commit(h, {TP0: om(5)}, (old, "worker-1", gen)) == {TP0: E.FENCED_INSTANCE_ID}
    assert txn_commit(h, {TP0: om(5)}, (new, "nobody", gen)) == {TP0: E.UNKNOWN_MEMBER_ID}


@pytest.mark.spec("TXN-84")
def test_a_pending_transactional_commit_is_unstable_until_its_marker():
    h = Harness()
    assert h.commit({TP0: om(3), TP1: om(4)}) == {TP0: ErrorCode.NO_ERROR, TP1: ErrorCode.NO_ERROR}
    assert h.coordinator.unstable_offsets("group-a") == set()
    assert txn_commit(h, {TP0: om(9)}) == {TP0: ErrorCode.NO_ERROR}
    assert h.coordinator.unstable_offsets("group-a") == {TP0}
    partition = h.coordinator.partition_for("group-a")
    h.coordinator.complete_txn_offsets(partition, PID, commit=True)
    assert h.coordinator.unstable_offsets("group-a") == set()
    assert h.coordinator.fetch_offsets("group-a", [TP0])[1][TP0].offset == 9
