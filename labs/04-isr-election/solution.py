"""Lab 04, the ISR and leader election: who is in sync, and who may lead.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 04

Each function takes the place of kafka-ref's own of the same name whenever
KAFKA_REF_SOLUTION names this file (the grader sets it): `can_join_isr` and
`out_of_sync_replicas` in kafka_ref/replication/isr.py, which every partition leader asks at
each follower fetch and every replica.lag.time.max.ms / 2, and `elect_leader` in
kafka_ref/cluster/election.py, which the controller (ZooKeeper mode) and the simulator's
controller ask whenever a partition needs a leader. From kafka_ref you may import anything
but the modules that hold these functions (beyond the names this file imports from them):
`kafka-ref lab check` refuses a solution that reaches kafka-ref's own code of them (LAB-5).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kafka_ref.cluster.election import Election


def can_join_isr(
    follower_log_end_offset: int, high_watermark: int, leader_epoch_start_offset: int
) -> bool:
    """May a follower that is not in the ISR join it now? (ISR-2, Kafka
    `Partition.isFollowerInSync`.)

    `follower_log_end_offset`: the follower's LEO, as its last fetch told the leader.
    `high_watermark`: the leader's HW. `leader_epoch_start_offset`: the offset at which the
    leader's current epoch began (its LEO when it became leader). The follower joins when
    it has every committed record and has caught up with this leader's epoch.
    """
    raise NotImplementedError


def out_of_sync_replicas(
    leader_id: int,
    isr: Collection[int],
    last_caught_up_time_ms: Mapping[int, int],
    now: int,
    replica_lag_time_max_ms: int,
) -> set[int]:
    """The ISR members that must leave the ISR now (ISR-3, Kafka `getOutOfSyncReplicas`).

    `isr`: the current ISR, the leader `leader_id` included. `last_caught_up_time_ms[r]`:
    the last time (ms) follower r held everything the leader had (there is an entry for
    every follower). A follower leaves when that was *more than* `replica_lag_time_max_ms`
    before `now`. The leader never leaves its own ISR.
    """
    raise NotImplementedError


def elect_leader(
    assignment: Sequence[int],
    isr: Collection[int],
    live_brokers: Collection[int],
    *,
    unclean_leader_election: bool = False,
) -> Election:
    """Kafka's offline-partition election (ISR-6, CTRL-6; Kafka
    `PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection`).

    `assignment`: the partition's replicas in assignment order (the first is the preferred
    leader). `isr`: its ISR as the controller last recorded it. `live_brokers`: the brokers
    that are up. Return `Election(leader, isr, unclean)`:

    - clean: the first replica in assignment order that is live and in the ISR leads; the
      new ISR is the live ISR members, in assignment order;
    - otherwise, if `unclean_leader_election`: the first live replica leads alone
      (`isr=(leader,)`, `unclean=True`); it may lack acknowledged writes;
    - otherwise no leader (`leader=None`): the ISR keeps its first member in assignment
      order (or is empty if it had none), so that the partition comes back cleanly as
      soon as that broker does.
    """
    raise NotImplementedError
