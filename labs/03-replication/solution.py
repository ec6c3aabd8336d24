"""Lab 03, replication: your high-watermark rule and your follower truncation.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 03

Each function takes the place of kafka-ref's own of the same name (in
kafka_ref/replication/partition.py and kafka_ref/replication/truncation.py) whenever
KAFKA_REF_SOLUTION names this file: every leader in the deterministic cluster simulator
(kafka_ref/sim) and in a real broker then moves its high watermark with your rule, and every
follower that runs `replica.truncation=leader-epoch` cuts its log with your step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from kafka_ref.replication.leader_epoch import LeaderEpochFileCache


class TruncationStep(NamedTuple):
    """Truncate to `offset`; `done` when the logs now share a prefix, else ask again."""

    offset: int
    done: bool


def leader_high_watermark(
    leader_log_end_offset: int, follower_log_end_offsets: Iterable[int], high_watermark: int
) -> int:
    """The leader's new high watermark (REPL-3).

    `leader_log_end_offset`: the leader's LEO; `follower_log_end_offsets`: the LEO of each
    follower in the ISR, as its last fetch said (-1 for one that has not fetched from this
    leader yet); `high_watermark`: the HW reached so far. A record is committed once every
    ISR member has it; the HW never goes down.
    """
    raise NotImplementedError


def truncation_step(
    cache: LeaderEpochFileCache,
    log_end_offset: int,
    high_watermark: int,
    leader_epoch: int,
    leader_end_offset: int,
) -> TruncationStep:
    """One round of leader-epoch truncation (KIP-101 with KIP-279; TRUNC-5, TRUNC-6).

    The follower asked the leader (OffsetsForLeaderEpoch) where the follower's latest epoch
    ends; the leader answered `leader_epoch`, the largest epoch it knows that is at most the
    one asked for, and `leader_end_offset`, where that epoch ends on the leader. `cache` is
    the follower's leader epoch cache: `cache.end_offset_for(epoch, log_end_offset)` returns
    (the largest epoch <= `epoch` the follower knows, where it ends on the follower's log),
    or (-1, -1) when it knows none. `log_end_offset` and `high_watermark` are the follower's.

    Return where to truncate, and whether the logs then share a prefix (`done`) or the
    follower must ask again about its new latest epoch:
    - `leader_end_offset` is -1 (the leader knows no epoch: an old log): the HW, done;
    - `leader_epoch` is -1: min(leader_end_offset, LEO), done;
    - the follower knows no epoch <= `leader_epoch`: min(leader_end_offset, LEO), done;
    - the follower's epoch found differs from `leader_epoch` (the leader never had it):
      where that epoch ends on the follower, capped at the LEO, NOT done;
    - else both have `leader_epoch`: the smaller of where it ends on each, capped at the
      LEO, done.
    """
    raise NotImplementedError
