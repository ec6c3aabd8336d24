"""When a rebalance starts and when its JoinGroup round ends: the delayed joins.

A rebalance starts (`_prepare_rebalance`, Kafka `prepareRebalance`) when a member joins or
leaves, when a member's subscription changes, or when a member is removed; the group goes to
PreparingRebalance and every member must rejoin. The round then waits as a delayed
operation (Kafka: `DelayedJoin` in the join purgatory):

* **DelayedJoin** completes as soon as every known member has rejoined, or when the
  rebalance timeout (the largest of the members' `rebalance_timeout_ms`, a consumer's
  `max.poll.interval.ms`) runs out. Then members that did not rejoin are removed; a static
  member is not: it keeps its place until its session times out (REBAL-7).
* **InitialDelayedJoin**: the first rebalance of an Empty group waits
  `group.initial.rebalance.delay.ms`, and again for as long as new members keep arriving (up
  to the rebalance timeout), so that consumers started together land in one generation
  (REBAL-8). It never completes early, not even with a delay of 0: it completes on its timer
  with the members joined by then, and each later JoinGroup starts the next rebalance
  (REBAL-17).

When the round completes (`_on_complete_join`, Kafka `onCompleteJoin`) the generation is
bumped, a protocol and a leader chosen and every waiting JoinGroup answered (join_round.py);
then each member must SyncGroup within the rebalance timeout, or it is removed and the group
rebalances again, so a leader that died after JoinGroup does not stall its group (REBAL-13,
Kafka 3.0's pending-sync timeout).

A part of `GroupRebalance` (rebalance.py); its timers are the injected scheduler's.

Rules: REBAL-7, REBAL-8, REBAL-13, REBAL-17 (spec/rebalance.md).
"""

from __future__ import annotations

from kafka_ref.errors import ErrorCode
from kafka_ref.group.group_metadata import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    GroupMetadata,
)


class DelayedJoins:
    """Starting a rebalance and completing its join round (a part of `GroupRebalance`)."""

    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.is_(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._cancel_timer(group, "sync_timer")
        group.pending_sync_members.clear()
        self._cancel_timer(group, "join_timer")
        initial = group.is_(EMPTY)
        group.transition_to(PREPARING_REBALANCE, self._now())
        if initial:  # even with a delay of 0: the join completes on the timer (REBAL-17)
            delay = self.config.group_initial_rebalance_delay_ms
            self._watch_initial_join(group, delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            group.join_is_initial = False
            if not self._try_complete_join(group):
                self._watch_join(group)

    def _watch_join(self, group: GroupMetadata) -> None:
        """Kafka `DelayedJoin`: complete when all joined, or at the rebalance timeout."""

        def expire() -> None:
            group.join_timer = None
            if group.is_(PREPARING_REBALANCE):
                self._on_complete_join(group)

        group.join_timer = self._timer(group.rebalance_timeout_ms(), expire)

    def _watch_initial_join(self, group: GroupMetadata, delay_ms: int, remaining_ms: int) -> None:
        """Kafka `InitialDelayedJoin`: wait the delay, and again (up to the rebalance timeout)
        for as long as new members keep arriving (REBAL-8). It never completes early, not even
        with a delay of 0: it completes on its timer with the members joined by then, pending
        ones not waited for (REBAL-17)."""
        group.join_is_initial = True

        def expire() -> None:
            group.join_timer = None
            if not group.is_(PREPARING_REBALANCE):
                return
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                next_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
                self._watch_initial_join(group, next_delay, max(remaining_ms - delay_ms, 0))
            else:
                group.join_is_initial = False
                self._on_complete_join(group)

        group.join_timer = self._timer(delay_ms, expire)

    def _try_complete_join(self, group: GroupMetadata) -> bool:
        if group.join_is_initial or not group.is_(PREPARING_REBALANCE):
            return False
        if not group.has_all_members_joined():
            return False
        self._cancel_timer(group, "join_timer")
        self._on_complete_join(group)
        return True

    def _on_complete_join(self, group: GroupMetadata) -> None:
        """The join round is over (Kafka `onCompleteJoin`)."""
        for member in group.not_yet_rejoined_members():
            if not member.is_static_member:  # static members wait for their session timeout
                self._cancel_heartbeat(member)
                group.remove(member.member_id)
        if group.is_(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined (only absent static members left): wait for their timeouts
            return self._watch_join(group)
        group.init_next_generation(self._now())
        if group.is_(EMPTY):
            # nothing waits for this write; a lost one leaves an older generation, harmless
            return self.manager.store_group(group, {}, lambda error: None)
        for member in list(group.members.values()):
            group.invoke_join(member, self._join_result(group, member))
            self.arm_heartbeat(group, member)
            member.is_new = False
        self._watch_pending_sync(group)

    def _watch_pending_sync(self, group: GroupMetadata) -> None:
        """REBAL-13: members that do not SyncGroup within the rebalance timeout are removed."""
        group.pending_sync_members = set(group.members)
        generation = group.generation_id

        def expire() -> None:
            group.sync_timer = None
            ok_state = group.is_(COMPLETING_REBALANCE) or group.is_(STABLE)
            if generation != group.generation_id or not ok_state:
                return
            for member_id in list(group.pending_sync_members):
                member = group.remove(member_id)
                if member is not None:
                    self._cancel_heartbeat(member)
            self._prepare_rebalance(group)

        group.sync_timer = self._timer(group.rebalance_timeout_ms(), expire)

    def _synced(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel_timer(group, "sync_timer")
