"""A correct solution of lab 03, written from the handout (tests/test_labs.py grades it in a
student edition)."""

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
    smallest = leader_log_end_offset
    for offset in follower_log_end_offsets:
        smallest = min(smallest, offset)
    return smallest if smallest > high_watermark else high_watermark


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
    if end == -1:
        return TruncationStep(min(leader_end_offset, log_end_offset), True)
    if epoch != leader_epoch:
        return TruncationStep(min(end, log_end_offset), False)
    return TruncationStep(min(leader_end_offset, end, log_end_offset), True)
