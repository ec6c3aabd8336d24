"""When the leader never had the follower's epoch, truncates to where that epoch ends on the
follower without capping at the LEO: with a leader epoch cache ahead of the log, it
"truncates" past its log end (TRUNC-6)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from kafka_ref.replication.leader_epoch import LeaderEpochFileCache


class TruncationStep(NamedTuple):
    offset: int
    done: bool


def leader_high_watermark(
    leader_log_end_offset: int, follower_log_end_offsets: Iterable[int], high_watermark: int
) -> int:
    new = leader_log_end_offset
    for leo in follower_log_end_offsets:
        new = min(new, leo)
    return max(high_watermark, new)


def truncation_step(
    cache: LeaderEpochFileCache,
    log_end_offset: int,
    high_watermark: int,
    leader_epoch: int,
    leader_end_offset: int,
) -> TruncationStep:
    if leader_end_offset == -1:
        return TruncationStep(high_watermark, True)
    if leader_epoch == -1:
        return TruncationStep(min(leader_end_offset, log_end_offset), True)
    epoch, end = cache.end_offset_for(leader_epoch, log_end_offset)
    if epoch == -1:
        return TruncationStep(min(leader_end_offset, log_end_offset), True)
    if epoch != leader_epoch:
        return TruncationStep(end, False)
    return TruncationStep(min(leader_end_offset, end, log_end_offset), True)
