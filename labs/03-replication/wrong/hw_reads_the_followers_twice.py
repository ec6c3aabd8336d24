"""Reads `follower_log_end_offsets` twice (once to look for a follower at LEO -1, once for
the minimum): given a one-pass iterator, as its Iterable type allows, the second read finds
nothing and the HW jumps to the leader's LEO past a follower that lacks the records (REPL-3).
"""

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
    if any(leo == -1 for leo in follower_log_end_offsets):
        return high_watermark
    return max(high_watermark, min([leader_log_end_offset, *follower_log_end_offsets]))


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
        return TruncationStep(min(end, log_end_offset), False)
    return TruncationStep(min(leader_end_offset, end, log_end_offset), True)
