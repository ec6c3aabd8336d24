"""The ISR's two decisions: who joins the in-sync replicas, and who leaves them.

The **ISR** (in-sync replicas) is the leader plus the followers that keep up with it. It
decides what "committed" means: the high watermark is the smallest LEO over the ISR
(REPL-3), an acks=all write waits for every member (REPL-4), and only a member may be
elected leader cleanly (ISR-6). So the ISR must hold exactly the replicas that have every
committed record, and it changes in two ways:

* **expand** (ISR-2, Kafka `Partition.isFollowerInSync`): a follower outside the ISR joins
  once its log end offset reached the leader's high watermark *and* the offset where the
  leader's current epoch began. The first makes sure it has every committed record; the
  second that it has truncated to this leader's log (a follower that merely reached the HW
  may still hold a diverging tail of an older epoch, Kip320.tla);
* **shrink** (ISR-3, Kafka `Partition.getOutOfSyncReplicas`): a follower that has not been
  *caught up* (holding everything the leader had, replica.py) for more than
  `replica.lag.time.max.ms` leaves. Time, not a count of messages behind, is the measure
  since Kafka 0.9 (KIP-16's `replica.lag.max.messages` dropped followers at every burst).
  The leader itself never leaves its ISR.

Both are pure decisions and seams (kafka_ref/seams.py) that lab 04 (labs/04-isr-election)
replaces with a student's code; the leader (partition.py) asks them at every follower fetch
and every `replica.lag.time.max.ms / 2`, and sends the result to the controller as an
AlterIsr (ISR-5). A smaller ISR keeps the partition writable while a follower is slow or
dead, at the price of fewer copies of each new record: `min.insync.replicas` (REPL-5) says
how small it may get before acks=all writes are refused.

Rules: ISR-2, ISR-3.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from kafka_ref.seams import seam


@seam
def can_join_isr(
    follower_log_end_offset: int, high_watermark: int, leader_epoch_start_offset: int
) -> bool:
    """ISR-2: may a follower outside the ISR join it? Once its LEO (as its last fetch said)
    is at or past both the leader's HW and the start offset of the leader's epoch."""
    return (
        follower_log_end_offset >= high_watermark
        and follower_log_end_offset >= leader_epoch_start_offset
    )


@seam
def out_of_sync_replicas(
    leader_id: int,
    isr: Collection[int],
    last_caught_up_time_ms: Mapping[int, int],
    now: int,
    replica_lag_time_max_ms: int,
) -> set[int]:
    """ISR-3: the ISR members that must leave: every follower whose last caught-up time
    (`last_caught_up_time_ms[follower]`) is more than `replica_lag_time_max_ms` before
    `now`. The leader never leaves."""
    return {
        replica
        for replica in isr
        if replica != leader_id and now - last_caught_up_time_ms[replica] > replica_lag_time_max_ms
    }
