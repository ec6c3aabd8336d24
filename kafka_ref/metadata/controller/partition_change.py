"""One partition's change as a PartitionChangeRecord (Kafka: `PartitionChangeBuilder`).

Every change the controller makes to a partition, an election after a broker was fenced,
an ISR change a leader asked for, a preferred or unclean election an operator asked for, is
one PartitionChangeRecord that names only the fields that change; replaying it
(`PartitionRegistration.merge`) bumps the leader epoch if the leader changed and the
partition epoch always. No change, no record: an unchanged partition keeps its epochs.

The decisions are those the ZooKeeper-mode controller makes, with eligible leader replicas
(KIP-966, kafka_ref/cluster/election.py): `change_with_elr` for an election among the live
brokers, `next_elr` for the ELR once a leader's AlterPartition changed the ISR. An unclean
election (a leader from outside the ISR and the ELR) marks the partition's leader as
RECOVERING (KIP-704) until the new leader says it has recovered.

A reassignment (KIP-455) moves a partition to new replicas in two changes: the first makes
the replicas the target plus the ones leaving, marked `removingReplicas`, the new ones
marked `addingReplicas`; the new replicas fetch, the leader adds them to the ISR with
AlterPartition, and the change that puts the last of them in the ISR completes the
reassignment: the leaving replicas go, and if the leader was one of them the first ISR
member of the target leads.

A replica's log directory (KIP-858) changes by a record of its own, `assign_directory`.

Rules: KCTRL-7 (elections, with ELR), KCTRL-8 (AlterPartition's change), KCTRL-16
(reassignment), KCTRL-22 (directories).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from kafka_ref.cluster.election import change_with_elr, next_elr
from kafka_ref.metadata import directory_id
from kafka_ref.metadata import records as r
from kafka_ref.metadata.image import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration

RECOVERED = 0  # LeaderRecoveryState: the leader has every record it should have
RECOVERING = 1  # elected uncleanly: it may lack some (KIP-704)


def change_record(
    topic_id: uuid.UUID,
    index: int,
    partition: PartitionRegistration,
    *,
    leader: int,
    isr: Sequence[int],
    elr: Sequence[int],
    last_known_elr: Sequence[int],
    leader_recovery_state: int | None = None,
    replicas: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
) -> r.PartitionChangeRecord | None:
    """The record that takes `partition` to these values, naming only what changes."""
    record = r.PartitionChangeRecord(partition_id=index, topic_id=topic_id)
    changed = False
    if replicas is not None and tuple(replicas) != partition.replicas:
        record.replicas, changed = list(replicas), True
        old = dict(zip(partition.replicas, partition.directories, strict=True))
        record.directories = [old.get(b, directory_id.UNASSIGNED) for b in replicas]
    if removing is not None and tuple(removing) != partition.removing_replicas:
        record.removing_replicas, changed = list(removing), True
    if adding is not None and tuple(adding) != partition.adding_replicas:
        record.adding_replicas, changed = list(adding), True
    if leader != partition.leader:
        record.leader, changed = leader, True
    if tuple(isr) != partition.isr:
        record.isr, changed = list(isr), True
    if tuple(elr) != partition.elr:
        record.eligible_leader_replicas, changed = list(elr), True
    if tuple(last_known_elr) != partition.last_known_elr:
        record.last_known_elr, changed = list(last_known_elr), True
    recovery = (
        partition.leader_recovery_state if leader_recovery_state is None else leader_recovery_state
    )
    if recovery != partition.leader_recovery_state:
        record.leader_recovery_state, changed = recovery, True
    assert (
        record.leader == NO_LEADER_CHANGE or record.leader == NO_LEADER or record.leader in isr
    ), f"leader {record.leader} outside the ISR {list(isr)}"
    return record if changed else None


def assign_directory(
    topic_id: uuid.UUID,
    index: int,
    partition: PartitionRegistration,
    broker_id: int,
    directory: uuid.UUID,
) -> r.PartitionChangeRecord | None:
    """The record that places the broker's replica of `partition` in `directory` (Kafka:
    `PartitionChangeBuilder.setDirectory`); None if it is there already."""
    position = partition.replicas.index(broker_id)
    if partition.directories[position] == directory:
        return None
    directories = list(partition.directories)
    directories[position] = directory
    return r.PartitionChangeRecord(partition_id=index, topic_id=topic_id, directories=directories)


def elect(
    topic_id: uuid.UUID,
    index: int,
    partition: PartitionRegistration,
    live: Collection[int],
    min_isr: int,
    *,
    unclean: bool,
    unclean_shutdown: Collection[int] = (),
) -> r.PartitionChangeRecord | None:
    """The partition once the live brokers are `live`: dead replicas leave the ISR (into the
    ELR while the ISR is below `min_isr`), the leader stays if it may, else the first
    eligible replica leads, else none (or, with `unclean`, any live replica)."""
    change = change_with_elr(
        partition.replicas,
        partition.leader,
        partition.isr,
        partition.elr,
        partition.last_known_elr,
        live,
        min_isr,
        unclean_leader_election=unclean,
        unclean_shutdown=unclean_shutdown,
    )
    return change_record(
        topic_id,
        index,
        partition,
        leader=NO_LEADER if change.leader is None else change.leader,
        isr=change.isr,
        elr=change.elr,
        last_known_elr=change.last_known_elr,
        leader_recovery_state=RECOVERING if change.unclean else None,
    )


def alter_isr(
    topic_id: uuid.UUID,
    index: int,
    partition: PartitionRegistration,
    new_isr: Sequence[int],
    min_isr: int,
    leader_recovery_state: int,
) -> r.PartitionChangeRecord | None:
    """The leader's new ISR, in assignment order, with the ELR that follows from it; if it
    holds every target replica of a reassignment, the reassignment completes."""
    isr = [b for b in partition.replicas if b in new_isr]
    replicas: Sequence[int] = partition.replicas
    removing, adding = partition.removing_replicas, partition.adding_replicas
    completed = completed_reassignment(partition, isr)
    if completed is not None:
        (replicas, isr), removing, adding = completed, (), ()
    return _settle(
        topic_id, index, partition, replicas, isr, removing, adding, min_isr, leader_recovery_state
    )


def _settle(
    topic_id: uuid.UUID,
    index: int,
    partition: PartitionRegistration,
    replicas: Sequence[int],
    isr: Sequence[int],
    removing: Sequence[int],
    adding: Sequence[int],
    min_isr: int,
    leader_recovery_state: int | None = None,
) -> r.PartitionChangeRecord | None:
    """The record for new replicas and ISR: the leader stays if it is in the ISR, else the
    first ISR member in the new assignment order leads (a clean election)."""
    leader = partition.leader
    if leader not in isr:
        leader = next((b for b in replicas if b in isr), NO_LEADER)
    elr, last_known = next_elr(
        replicas, partition.isr, isr, partition.elr, partition.last_known_elr, min_isr
    )
    return change_record(
        topic_id,
        index,
        partition,
        leader=leader,
        isr=isr,
        elr=elr,
        last_known_elr=last_known,
        leader_recovery_state=leader_recovery_state,
        replicas=replicas,
        removing=removing,
        adding=adding,
    )


# -- reassignment (Kafka: `PartitionReassignmentReplicas`, `PartitionReassignmentRevert`) --


def completed_reassignment(
    partition: PartitionRegistration, isr: Sequence[int]
) -> tuple[list[int], list[int]] | None:
    """(replicas, ISR) once the reassignment under way completes with this ISR: the ISR
    without the replicas being removed still has a member and holds every target replica
    (Kafka: `maybeCompleteReassignment`); None while it cannot."""
    if not partition.removing_replicas and not partition.adding_replicas:
        return None
    removing = set(partition.removing_replicas)
    new_isr = [b for b in isr if b not in removing]
    new_replicas = [b for b in partition.replicas if b not in removing]
    if not new_isr or not new_replicas or not set(new_replicas) <= set(new_isr):
        return None
    return new_replicas, new_isr


def reassign(
    topic_id: uuid.UUID,
    index: int,
    partition: PartitionRegistration,
    target: Sequence[int],
    min_isr: int,
) -> r.PartitionChangeRecord | None:
    """Start moving the partition to `target`: the replicas are the target followed by the
    current replicas leaving it, marked removing; the new ones are marked adding. If the
    ISR already holds the target (only replicas removed), it completes at once."""
    removing = sorted(set(partition.replicas) - set(target))
    adding = sorted(set(target) - set(partition.replicas))
    replicas = [*target, *removing]
    isr = [b for b in replicas if b in partition.isr]
    moving = PartitionRegistration(
        replicas=tuple(replicas),
        directories=partition.directories,
        isr=tuple(isr),
        removing_replicas=tuple(removing),
        adding_replicas=tuple(adding),
        leader=partition.leader,
        leader_recovery_state=partition.leader_recovery_state,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch,
    )
    completed = completed_reassignment(moving, isr)
    if completed is not None:
        (replicas, isr), removing, adding = completed, [], []
    return _settle(topic_id, index, partition, replicas, isr, removing, adding, min_isr)


def revert(
    topic_id: uuid.UUID, index: int, partition: PartitionRegistration, min_isr: int
) -> r.PartitionChangeRecord | None:
    """Cancel the reassignment under way: back to the replicas before it, the ISR without
    the replicas that were being added. The caller checks that the ISR keeps a member."""
    adding = set(partition.adding_replicas)
    replicas = [b for b in partition.replicas if b not in adding]
    isr = [b for b in partition.isr if b not in adding]
    return _settle(topic_id, index, partition, replicas, isr, (), (), min_isr)
