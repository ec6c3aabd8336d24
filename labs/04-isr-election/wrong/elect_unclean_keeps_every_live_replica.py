"""Gives an unclean leader an ISR of every live replica, where CTRL-6 has it lead alone
(isr=[it]): the others hold data it lacks and are not in sync with it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kafka_ref.cluster.election import Election


def can_join_isr(
    follower_log_end_offset: int, high_watermark: int, leader_epoch_start_offset: int
) -> bool:
    return (
        follower_log_end_offset >= high_watermark
        and follower_log_end_offset >= leader_epoch_start_offset
    )


def out_of_sync_replicas(
    leader_id: int,
    isr: Collection[int],
    last_caught_up_time_ms: Mapping[int, int],
    now: int,
    replica_lag_time_max_ms: int,
) -> set[int]:
    return {
        replica
        for replica in isr
        if replica != leader_id and now - last_caught_up_time_ms[replica] > replica_lag_time_max_ms
    }


def elect_leader(
    assignment: Sequence[int],
    isr: Collection[int],
    live_brokers: Collection[int],
    *,
    unclean_leader_election: bool = False,
) -> Election:
    live_isr = [r for r in assignment if r in isr and r in live_brokers]
    if live_isr:
        return Election(live_isr[0], tuple(live_isr))
    if unclean_leader_election:
        live = [r for r in assignment if r in live_brokers]
        if live:
            return Election(live[0], tuple(live), unclean=True)
    return Election(None, tuple(r for r in assignment if r in isr)[:1])
