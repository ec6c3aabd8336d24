"""Never truncates below the follower's HW, believing committed records safe; KIP-101's
second scenario needs exactly that cut (TRUNC-5: the HW is never used to truncate)."""

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
    return max(high_watermark, min([leader_log_end_offset, *follower_log_end_offsets]))


def truncation_step(
    cache: LeaderEpochFileCache,
    log_end_offset: int,
    high_watermark: int,
    leader_epoch: int,
    leader_end_offset: int,
) -> TruncationStep:
    if leader_end_offset == -1:
        return TruncationStep(min(high_watermark, log_end_offset), True)
    if leader_epoch == -1:
        return TruncationStep(max(high_watermark, min(leader_end_offset, log_end_offset)), True)
    epoch, end = cache.end_offset_for(leader_epoch, log_end_offset)
    if end == -1:
        return TruncationStep(max(high_watermark, min(leader_end_offset, log_end_offset)), True)
    if epoch != leader_epoch:
        return TruncationStep(max(high_watermark, min(end, log_end_offset)), False)
    return TruncationStep(
        min(log_end_offset, max(high_watermark, min(leader_end_offset, end))), True
    )
