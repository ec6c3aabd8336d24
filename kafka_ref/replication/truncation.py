"""Follower truncation: how much of its own log a replica throws away when it starts to follow.

A follower may hold records the new leader never had: appended by an old leader that died
before they were replicated, or by a leader whose own copy was later lost. Before fetching,
it must cut its log back to the longest prefix it shares with the leader, or the two logs
hold different records at the same offset forever. Kafka has had two rules for the cut,
both here, chosen per broker with `replica.truncation`:

**`high-watermark`** (Kafka before 0.11; TRUNC-1). On becoming a follower, truncate to the
local high watermark, then fetch from there. The rule trusts the HW to mark what is
committed, but a follower learns the HW one fetch late, and after a restart it only has the
last `replication-offset-checkpoint`. KIP-101 shows the two failures (TRUNC-2, TRUNC-3):

1. the follower restarts, truncates a committed record that was above its stale HW, and
   is elected before it fetched it again: an acknowledged write is lost;
2. after a crash of both replicas the new leader lacks a record the other still holds below
   its HW: the HW rule truncates nothing and the logs diverge at that offset.

**`leader-epoch`** (KIP-101 in Kafka 0.11, fixed by KIP-279 in 2.0; TRUNC-4..TRUNC-7).
Every batch carries the epoch of the leader that wrote it, and each replica's leader epoch
cache says where each epoch starts (leader_epoch.py). The follower asks the leader
(OffsetsForLeaderEpoch) where its own latest epoch `e` ends. The leader answers with the
largest epoch `e' <= e` it knows and that epoch's end offset. Then (Kafka's
`AbstractFetcherThread.getOffsetTruncationState`):

* `e' == e`: both logs hold epoch `e`; they agree up to wherever the shorter one ends it.
  Truncate to min(leader's end, follower's end of `e`, follower LEO). Done.
* `e' < e`: the leader never had epoch `e`; everything the follower wrote in epochs above
  `e'` is suspect. Truncate to the follower's end of `e'` (which drops its epochs above),
  and ask again for its new latest epoch. This is KIP-279's iteration; Kafka 1.x stopped
  after one round and KAFKA-6361 shows the divergence that left (TRUNC-7).
* undefined answer, or the follower knows no epoch <= `e'`: truncate to min(leader's end,
  LEO) and stop (an empty cache falls back to the HW, as Kafka does).

The HW is never used for truncation again; it only says what is committed.

`truncation_step` is the pure rule; `follower_fetch_state.py` runs it against the leader, both on an
OffsetsForLeaderEpoch answer and on a fetch answered with a diverging epoch (Kafka 2.7+
folds the same check into Fetch: KIP-595's `divergingEpoch`).

Rules: TRUNC-1, TRUNC-4, TRUNC-5, TRUNC-6, TRUNC-7.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from kafka_ref.replication.leader_epoch import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochFileCache,
)
from kafka_ref.seams import seam


class TruncationRule(StrEnum):
    """`replica.truncation`: which rule a follower uses."""

    LEADER_EPOCH = "leader-epoch"
    HIGH_WATERMARK = "high-watermark"

    @classmethod
    def parse(cls, value: str | TruncationRule) -> TruncationRule:
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(r.value for r in cls)
            message = f"replica.truncation must be one of {choices}, not {value!r}"
            raise ValueError(message) from None


class TruncationStep(NamedTuple):
    """Truncate to `offset`; `done` when the logs now share a prefix, else ask again."""

    offset: int
    done: bool


def high_watermark_truncation(high_watermark: int, log_end_offset: int) -> int:
    """The pre-0.11 rule (TRUNC-1): on becoming a follower, cut back to the local HW."""
    return min(high_watermark, log_end_offset)


@seam
def truncation_step(
    cache: LeaderEpochFileCache,
    log_end_offset: int,
    high_watermark: int,
    leader_epoch: int,
    leader_end_offset: int,
) -> TruncationStep:
    """One round of KIP-101/279 (TRUNC-5, TRUNC-6): the leader said its largest epoch
    <= ours is `leader_epoch`, ending at `leader_end_offset`. Where do we cut?"""
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        # The leader knows no such epoch (an empty cache: an old log). Kafka falls back.
        return TruncationStep(min(high_watermark, log_end_offset), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return TruncationStep(min(leader_end_offset, log_end_offset), True)
    ours = cache.end_offset_for(leader_epoch, log_end_offset)
    if ours.end_offset == UNDEFINED_EPOCH_OFFSET:
        # We know no epoch <= the leader's answer: nothing of ours is known to be shared
        # beyond what the leader has.
        return TruncationStep(min(leader_end_offset, log_end_offset), True)
    if ours.epoch != leader_epoch:
        # The leader's epoch is unknown here; ours below it is `ours.epoch`. Cut to where
        # that ends on our log and ask again about it (KIP-279).
        return TruncationStep(min(ours.end_offset, log_end_offset), False)
    return TruncationStep(min(leader_end_offset, ours.end_offset, log_end_offset), True)
