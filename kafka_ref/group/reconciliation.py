"""Reconciliation: how one member of a consumer group moves towards its target assignment.

When the target assignment changes (consumer_group_assignors.py), partitions move from one
member to another. Under KIP-848 nobody stops: each member is moved one heartbeat at a time
by `next_member_state` (Kafka `CurrentAssignmentBuilder`), and the one rule that makes it
safe is **revoke before assign** (CGRP-5):

1. a member that owns partitions the target no longer gives it keeps only the others,
   is told to revoke (its answer's assignment leaves them out) and stays at its epoch in
   UNREVOKED_PARTITIONS until a heartbeat shows it no longer owns them;
2. only then does its epoch catch up with the target's, and it gets its new partitions,
   but only those no other member still owns; the others wait (UNRELEASED_PARTITIONS) and
   come in a later heartbeat, once their owner has revoked them;
3. with nothing left to revoke or wait for, the member is STABLE at the target's epoch.

A partition therefore never has two owners (CGRP-6), and a member's epoch never goes back
(CGRP-7). The function is pure: the member, the target, and who owns what in, the new
member out; the coordinator writes the records and answers.

Rules: CGRP-5, CGRP-7.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from kafka_ref.group.consumer_group import (
    Assignment,
    ConsumerGroupMember,
    MemberState,
    assignment,
    partitions_of,
)

OwnerOf = Callable[[uuid.UUID, int], "str | None"]


def next_member_state(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    owner_of: OwnerOf,
    owned: Assignment | None,
) -> ConsumerGroupMember:
    """The member after this heartbeat (Kafka `CurrentAssignmentBuilder.build`).

    `owned` is what the member says it owns (the heartbeat's TopicPartitions), None when it
    did not say (unchanged since its last heartbeat)."""
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(member.pending_revocation, owned):
            return member  # it has not revoked yet: wait (its rebalance timeout runs)
        return _compute_next(member, target_epoch, target, owner_of, owned=None)
    if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    # STABLE at an older epoch, or UNRELEASED_PARTITIONS (maybe released by now)
    return _compute_next(member, target_epoch, target, owner_of, owned)


def _still_owns(revoked: Assignment, owned: Assignment | None) -> bool:
    """Kafka `ownsRevokedPartitions`: without a report, the member is assumed to own them."""
    if owned is None:
        return True
    return bool(partitions_of(revoked) & partitions_of(owned))


def _compute_next(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    owner_of: OwnerOf,
    owned: Assignment | None,
) -> ConsumerGroupMember:
    """Kafka `computeNextAssignment`: revoke first; else assign what is free."""
    current = partitions_of(member.assigned)
    wanted = partitions_of(target)
    keep = current & wanted
    revoke = current - wanted
    free, unreleased = set(), False
    for tp in wanted - current:
        owner = owner_of(*tp)
        if owner is None or owner == member.member_id:
            free.add(tp)
        else:
            unreleased = True
    if revoke and _still_owns(assignment((t, [p]) for t, p in revoke), owned):
        # revoke before assign: the epoch stays, nothing new is given (CGRP-5)
        return member.with_changes(
            state=MemberState.UNREVOKED_PARTITIONS,
            previous_member_epoch=member.member_epoch,
            assigned=assignment((t, [p]) for t, p in keep),
            pending_revocation=assignment((t, [p]) for t, p in revoke),
        )
    assert target_epoch >= member.member_epoch, "a member epoch never goes back (CGRP-7)"
    return member.with_changes(
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=assignment((t, [p]) for t, p in keep | free),
        pending_revocation={},
    )
