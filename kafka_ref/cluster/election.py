"""Leader election: which replica of a partition becomes its leader.

When a partition's leader dies, the controller picks a new one from the partition's
*assigned replicas* (the brokers that hold a copy, in the order they were assigned). Which
replicas may be picked is the whole trade-off between availability and durability:

* **Clean election** (the default): only a replica in the **ISR**, the in-sync replicas,
  may lead. Every write acknowledged with `acks=all` is on every ISR member, so a clean
  leader has all of them.
* **Unclean election** (`unclean.leader.election.enable=true`): if no ISR member is alive,
  any live replica may lead. The partition is available again at once, but the new leader
  may lack acknowledged writes, and they are lost: the followers truncate to its log.
  Jepsen's 2013 analysis of Kafka 0.8 is the classic demonstration.

Among the candidates the first in assignment order wins, so that leadership returns to the
*preferred replica* (the first assigned) whenever it can, which spreads leaders evenly over
the brokers (Kafka: `PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection`).

This module decides; it does not act (and `elect_leader` is a seam, kafka_ref/seams.py, that
lab 04 replaces with a student's code). The controller (ZooKeeper mode) and the simulator
call it, then bump the leader epoch and publish the new leader and ISR.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import NamedTuple

from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.seams import seam

logger = logging.getLogger("kafka_ref.cluster.election")

NO_LEADER = -1  # Kafka: LeaderAndIsr.NoLeader


class Election(NamedTuple):
    """The outcome: a leader (or None: the partition stays offline) and the new ISR."""

    leader: int | None
    isr: tuple[int, ...]
    unclean: bool = False


@seam
def elect_leader(
    assignment: Sequence[int],
    isr: Collection[int],
    live_brokers: Collection[int],
    *,
    unclean_leader_election: bool = False,
) -> Election:
    """Kafka's offline-partition election: the first live ISR member in assignment order;
    with unclean election allowed and no live ISR member, the first live replica."""
    for replica in assignment:
        if replica in isr and replica in live_brokers:
            new_isr = tuple(r for r in assignment if r in isr and r in live_brokers)
            return Election(replica, new_isr)
    if unclean_leader_election:
        for replica in assignment:
            if replica in live_brokers:
                return Election(replica, (replica,), unclean=True)
    # Kafka keeps the last ISR member recorded when no leader can be elected, so that a
    # clean election is possible as soon as that broker returns.
    last = tuple(r for r in assignment if r in isr)[:1]
    return Election(None, last)


def next_state(
    state: PartitionState, live: set[int], *, unclean: bool, controller_epoch: int
) -> PartitionState | None:
    """The partition's new state after the live brokers became `live`, or None if unchanged.

    The leader stays while alive, and the ISR loses the dead; otherwise a new leader is
    elected (CTRL-6). Any change bumps the leader epoch (CTRL-7).
    """
    if state.leader in live:
        leader, isr = state.leader, tuple(b for b in state.isr if b in live)
    else:
        election = elect_leader(state.replicas, state.isr, live, unclean_leader_election=unclean)
        leader = NO_LEADER if election.leader is None else election.leader
        isr = election.isr
        if election.unclean:
            logger.warning(
                "unclean leader election for %s-%d: broker %d leads without being in the ISR"
                " %s; acknowledged writes may be lost",
                state.topic,
                state.partition,
                leader,
                list(state.isr),
            )
    if leader == state.leader and isr == state.isr:
        return None
    return PartitionState(
        state.topic,
        state.partition,
        leader,
        state.leader_epoch + 1,
        state.replicas,
        isr,
        controller_epoch,
    )


def preferred_leader(state: PartitionState, live: Collection[int]) -> int | None:
    """Kafka's `preferredReplicaPartitionLeaderElection`: the first assigned replica, if it
    is alive and in the ISR; None otherwise (CTRL-27)."""
    preferred = state.replicas[0] if state.replicas else None
    if preferred is not None and preferred in live and preferred in state.isr:
        return preferred
    return None


def reassignment_leader(
    state: PartitionState, target: Sequence[int], live: Collection[int]
) -> int | None:
    """Kafka's `reassignPartitionLeaderElection`: the current leader if it is one of the
    target replicas, else the first target replica alive and in the ISR (CTRL-25)."""
    if state.leader in target and state.leader in live:
        return state.leader
    return next((r for r in target if r in live and r in state.isr), None)


class PartitionChange(NamedTuple):
    """A partition's leader, ISR and eligible leader replicas after a change (KIP-966)."""

    leader: int | None
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    unclean: bool = False


def change_with_elr(
    replicas: Sequence[int],
    leader: int | None,
    isr: Collection[int],
    elr: Collection[int],
    last_known_elr: Collection[int],
    live: Collection[int],
    min_isr: int,
    *,
    unclean_leader_election: bool = False,
    unclean_shutdown: Collection[int] = (),
) -> PartitionChange:
    """The partition after the live brokers became `live`, with eligible leader replicas
    (KIP-966; Kafka: `PartitionChangeBuilder.electLeader`, `maybeUpdateRecordElr`).

    The notes' dilemma was: when every ISR member is gone, wait (the partition stays
    offline) or elect any replica (and lose acknowledged writes). KIP-966 notices that a
    replica which left the ISR *while the ISR was below min.insync.replicas* still holds
    every committed record: with fewer than min.insync.replicas in the ISR, acks=all
    writes fail and the high watermark does not move (REPL-5). Such a replica is kept as
    an **eligible leader replica** (ELR), and when the ISR is empty it may be elected
    cleanly, its ISR starting with itself (ELR-1, ELR-2).

    * A dead (fenced) replica leaves the ISR, even the last one: the ISR may become empty.
    * The leader stays if it is alive and in the ISR (or, with an empty ISR, in the ELR);
      otherwise the first such replica in assignment order leads; failing that, with
      unclean election allowed, the first live replica, and the ELR is forgotten (ELR-3).
    * Once the ISR has at least `min_isr` members, the ELR and the last known ELR are
      empty: the ISR alone then holds the committed records. Below it, the ELR is the old
      ISR and ELR minus the new ISR, and minus every replica that shut down uncleanly (its
      unflushed records may be gone, so it is no longer known to hold them, ELR-4). The last
      known ELR keeps the other former members, for an operator's last resort.
    """
    target_isr = tuple(r for r in replicas if r in isr and r in live)
    target_elr = tuple(r for r in replicas if r in elr and r not in unclean_shutdown)

    def eligible(replica: int) -> bool:
        if replica not in live:
            return False
        return replica in target_isr or (not target_isr and replica in target_elr)

    unclean = False
    if leader is not None and leader != NO_LEADER and eligible(leader):
        new_leader: int | None = leader
    else:
        new_leader = next((r for r in replicas if eligible(r)), None)
        if new_leader is None and unclean_leader_election:
            new_leader = next((r for r in replicas if r in live), None)
            unclean = new_leader is not None
    if new_leader is not None and new_leader not in target_isr:
        target_isr = (new_leader,)  # elected from the ELR, or uncleanly: the ISR restarts
    if unclean:
        return PartitionChange(new_leader, target_isr, (), (), unclean=True)
    new_elr, new_last_known = next_elr(
        replicas, isr, target_isr, target_elr, last_known_elr, min_isr, unclean_shutdown
    )
    return PartitionChange(new_leader, target_isr, new_elr, new_last_known)


def next_elr(
    replicas: Sequence[int],
    old_isr: Collection[int],
    new_isr: Collection[int],
    elr: Collection[int],
    last_known_elr: Collection[int],
    min_isr: int,
    unclean_shutdown: Collection[int] = (),
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ELR and last known ELR once the ISR went from `old_isr` to `new_isr`, by a
    leader's AlterPartition or by an election (Kafka: `maybeUpdateRecordElr`; ELR-1)."""
    if len(new_isr) >= min_isr:
        return (), ()
    former = set(elr) | set(old_isr)
    new_elr = tuple(
        r for r in replicas if r in former and r not in new_isr and r not in unclean_shutdown
    )
    known = set(last_known_elr) | set(old_isr)
    new_last_known = tuple(
        r for r in replicas if r in known and r not in new_isr and r not in new_elr
    )
    assert not set(new_isr) & set(new_elr), f"ISR {new_isr} and ELR {new_elr} overlap"
    return new_elr, new_last_known
