"""Mutants: kafka-ref with one known bug each, to prove that the suite catches it.

A test suite that passes on a correct broker proves little by itself: it might check too
little. Mutation testing turns the question around. Each mutant below breaks kafka-ref in
one way that a real broker has been (or easily could be) broken, and declares the rules
whose tests must notice. `tests/unit/conformance/test_mutants.py` runs exactly those tests
with the mutant applied and requires at least one failure (CONF-3). A mutant that survives
means the suite has a blind spot.

Mutants are applied by monkey-patching kafka-ref's classes, so the production code carries
no switch for them. Each patch is a few lines, and reads as the bug. A bug seen over the
wire is played by a broker process (`python -m kafka_ref.conformance.mutant_broker
--mutant NAME broker ...`) that the conformance suite judges. A bug in a rule no client can
observe (a roll reason, a follower's grace period) is played inside a pytest process
(`pytest tests/unit --mutant NAME`, see tests/conftest.py) whose unit tests of those rules
must fail: `suite` says which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    bug: str  # what is broken, in one line
    rules: tuple[str, ...]  # the rules whose tests must catch it
    apply: Callable[[], None]  # the patch, applied in the broker process before it starts
    suite: str = "tests/conformance"  # the tests that judge it; tests/unit: in process


def _fetch_skips_batch() -> None:
    """A read at an offset inside a batch starts at the next batch (LOG-3)."""
    from kafka_ref.log.file_records import LogReadInfo
    from kafka_ref.log.log import Log

    original = Log.read

    def read(self, offset, max_bytes, *, max_offset=None, min_one_batch=True):
        info = original(self, offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch)
        if info.first_offset < 0 or info.first_offset == offset:
            return info
        # the bug: "the batch starting before `offset` is not ours", skip past it
        one = original(self, offset, 1, max_offset=max_offset, min_one_batch=True)
        if one.next_offset >= (max_offset if max_offset is not None else self.log_end_offset):
            return LogReadInfo(offset, -1, offset, [], info.log_start_offset, info.log_end_offset)
        return original(
            self, one.next_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch
        )

    Log.read = read


def _compaction_drops_latest() -> None:
    """The cleaner drops the record it should keep: the latest value of each key (COMPACT-1)."""
    from kafka_ref.log import cleaner

    original = cleaner.should_retain

    def should_retain(offset, key, is_tombstone, latest, map_end, delete_horizon, now):
        keep = original(offset, key, is_tombstone, latest, map_end, delete_horizon, now)
        if keep and key is not None and offset <= map_end and offset == latest:
            return False  # the bug: an off-by-one in "superseded"
        return keep

    cleaner.should_retain = should_retain


def _sync_gives_leaders_assignment() -> None:
    """SyncGroup answers every member with the leader's own assignment (REBAL-1)."""
    from kafka_ref.group.rebalance import GroupRebalance

    original = GroupRebalance._propagate_assignment

    def propagate(self, group, error):
        leader = group.members.get(group.leader_id)
        if leader is not None:
            for member in group.members.values():
                member.assignment = leader.assignment  # the bug: one partition, two owners
        return original(self, group, error)

    GroupRebalance._propagate_assignment = propagate


def _offsets_lost_at_restart() -> None:
    """The coordinator does not reload committed offsets when it takes over (OFFSET-4)."""
    from kafka_ref.group.group_metadata_manager import GroupMetadataManager

    original = GroupMetadataManager.load

    def load(self, partition, records):
        loaded = original(self, partition, records)
        for group in loaded:
            group.offsets = {}  # the bug: groups come back, their offsets do not
        return loaded

    GroupMetadataManager.load = load


def _dedup_window_one() -> None:
    """The producer state remembers 1 batch per producer instead of 5 (IDEM-3)."""
    from kafka_ref.log import producer_entry

    producer_entry.NUM_BATCHES_TO_RETAIN = 1  # read at call time by the deque factories


def _hw_past_lagging_isr() -> None:
    """The leader's HW follows the most advanced ISR follower, not the slowest (REPL-3)."""
    from kafka_ref.replication.partition import Partition

    def maybe_increment_high_watermark(self) -> bool:
        if not self.is_leader or self.is_under_min_isr:
            return False
        followers = [
            self.remote[r].log_end_offset
            for r in self.maximal_isr
            if r != self.broker_id and r in self.remote
        ]
        # the bug: max, not min, so one follower having a record commits it
        new = min(self.log_end_offset, max(followers, default=self.log_end_offset))
        if new > self.high_watermark:
            self.update_high_watermark(new)
            return True
        return False

    Partition._maybe_increment_high_watermark = maybe_increment_high_watermark


def _acks_all_without_isr() -> None:
    """acks=all is answered after the leader's own append, as acks=1 is (REPL-4)."""
    from kafka_ref.server.handlers.produce import DelayedProduce

    original = DelayedProduce.__init__

    def init(self, apis, request, outcome):
        original(self, apis, request, outcome)
        self.waiting = {}  # the bug: the leader's append is taken for the whole ISR's

    DelayedProduce.__init__ = init


def _unclean_election_always() -> None:
    """The controller elects a replica outside the ISR whatever the topic says (ISR-6)."""
    from kafka_ref.cluster.controller import KafkaController

    original = KafkaController.__init__

    def init(self, zk, broker_id, channel, *, unclean_leader_election, **options):
        # the bug: unclean.leader.election.enable read as true for every topic
        always = lambda topic, configs: True  # noqa: E731
        original(self, zk, broker_id, channel, unclean_leader_election=always, **options)

    KafkaController.__init__ = init


def _no_roll_when_offset_index_full() -> None:
    """A full offset index does not roll the segment; appends go on without entries (SEG-5)."""
    from kafka_ref.log.segment import Segment

    original = Segment.should_roll

    def should_roll(self, messages_size, max_timestamp, max_offset, now, config):
        reason = original(self, messages_size, max_timestamp, max_offset, now, config)
        return None if reason == "offset index full" else reason  # the bug: reason forgotten

    Segment.should_roll = should_roll


def _no_grace_for_new_leaders_followers() -> None:
    """A new leader counts its ISR followers as caught up never, not now (ISR-4)."""
    from kafka_ref.replication.replica import Replica

    original = Replica.__init__

    def init(self, broker_id, now, in_isr):
        original(self, broker_id, now, in_isr)
        self.last_caught_up_time_ms = 0  # the bug: no grace period, the ISR shrinks at once

    Replica.__init__ = init


def _lso_ignores_open_transactions() -> None:
    """The LSO is the high watermark: read_committed reads open transactions (TXN-4)."""
    from kafka_ref.log.isolation import ReadCommitted

    ReadCommitted.last_stable_offset = lambda self, log, high_watermark: high_watermark  # the bug


def _read_committed_returns_aborted() -> None:
    """A read_committed fetch lists no aborted transactions, so consumers keep their
    records (TXN-8)."""
    from kafka_ref.replication.reads import ConsumerReads

    ConsumerReads.aborted_transactions = lambda self, info: []  # the bug


def _older_epoch_accepted_after_fencing() -> None:
    """The partition's producer epoch check is gone: a fenced producer's batches and
    markers are taken, an older epoch treated like a new one (TXN-3, IDEM-5)."""
    from kafka_ref.errors import OutOfOrderSequenceError
    from kafka_ref.log import producer_entry, producer_state

    original = producer_entry.check_client_batch

    def check_client_batch(pid, entry, header):
        if entry is not None and 0 <= header.producer_epoch < entry.producer_epoch:
            # the bug: "a different epoch is a new epoch", as if it were newer
            if header.base_sequence != 0:
                raise OutOfOrderSequenceError(f"producer {pid}: a new epoch starts at 0")
            return None
        return original(pid, entry, header)

    def check_epoch(pid, entry, epoch):
        return None  # the bug: markers and coordinator appends of any epoch are taken

    producer_state.check_client_batch = check_client_batch
    producer_entry.check_epoch = producer_state.check_epoch = check_epoch


def _markers_before_decision_durable() -> None:
    """The coordinator sends the markers with EndTxn, before PrepareCommit/PrepareAbort is
    durable, so a failed or lost decision record leaves markers nobody decided (TXN-12)."""
    from kafka_ref.txn.coordinator import MarkerRequest, TransactionCoordinator

    original = TransactionCoordinator._end

    def end(self, meta, partition, commit, *args):
        epoch, partitions = self._epochs[partition], frozenset(meta.partitions)
        request = MarkerRequest(
            meta.transactional_id, meta.producer_id, meta.producer_epoch, commit, epoch, partitions
        )
        self.send_markers(request, lambda errors: None)  # the bug: before the decision's write
        return original(self, meta, partition, commit, *args)

    TransactionCoordinator._end = end


def _kraft_fenced_broker_keeps_leadership() -> None:
    """Fencing a broker writes only its fence record: it stays leader and in the ISRs of
    its partitions (KCTRL-4)."""
    from kafka_ref.metadata.controller import replication_control

    replication_control.broker_leaves = lambda image, config, broker_id: []


def _kraft_alter_partition_ignores_partition_epoch() -> None:
    """AlterPartition takes an ISR from a leader that has not seen the partition's last
    change, undoing it (KCTRL-8)."""
    import dataclasses

    from kafka_ref.metadata.controller import replication_control

    original = replication_control._alter_partition_error

    def check(image, broker_id, partition, data):
        if partition is not None and data.partition_epoch < partition.partition_epoch:
            data = dataclasses.replace(data, partition_epoch=partition.partition_epoch)
        return original(image, broker_id, partition, data)

    replication_control._alter_partition_error = check


def _kraft_election_ignores_isr() -> None:
    """The controller elects any live replica when the leader goes, as if unclean leader
    election were always on (KCTRL-7)."""
    from kafka_ref.metadata.controller import partition_change

    original = partition_change.change_with_elr

    def change(*args, **kwargs):
        return original(*args, **{**kwargs, "unclean_leader_election": True})

    partition_change.change_with_elr = change


def _kraft_unfence_before_caught_up() -> None:
    """A fenced broker is unfenced by its first heartbeat, before it has replayed its own
    registration (KCTRL-3)."""
    from kafka_ref.metadata.controller import quorum_controller

    original = quorum_controller.next_state

    def next_state(broker, request, registration_offset, *args):
        return original(broker, request, -1, *args)

    quorum_controller.next_state = next_state


def _kraft_reassignment_completes_early() -> None:
    """A reassignment completes before its new replicas are in the ISR: they become the
    only replicas without holding the partition's records (KCTRL-16)."""
    from kafka_ref.metadata.controller import partition_change

    original = partition_change.completed_reassignment

    def completed(partition, isr):
        adding = [b for b in partition.adding_replicas if b not in isr]
        return original(partition, [*isr, *adding])

    partition_change.completed_reassignment = completed


def _assign_before_revoke() -> None:
    """KIP-848's reconciliation gives a member its target partitions at once, before their
    previous owner revoked them (CGRP-5): a partition, two owners."""
    from kafka_ref.group import consumer_group, reconciliation

    def compute_next(member, target_epoch, target, owner_of, owned):
        return member.with_changes(
            state=consumer_group.MemberState.STABLE,
            member_epoch=target_epoch,
            previous_member_epoch=member.member_epoch,
            assigned=dict(target),
            pending_revocation={},
        )

    reconciliation._compute_next = compute_next


def _no_epoch_bump_on_commit() -> None:
    """Transactions v2 without the bump at a commit: the markers and the next transaction
    keep the epoch, so a late produce of the transaction is not fenced (TXN-92)."""
    from kafka_ref.txn.transaction_metadata import TransactionMetadata, TransactionState

    original = TransactionMetadata.prepare_abort_or_commit

    def prepare(self, state, now, *args, **kwargs):
        target = original(self, state, now, *args, **kwargs)
        if state == TransactionState.PREPARE_COMMIT:
            target.producer_epoch = self.producer_epoch
        return target

    TransactionMetadata.prepare_abort_or_commit = prepare


MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "fetch-skips-batch",
            "a fetch inside a batch starts at the next batch",
            ("LOG-3", "BROKER-18"),
            _fetch_skips_batch,
        ),
        Mutant(
            "compaction-drops-latest",
            "compaction drops the latest value of a key",
            ("COMPACT-1", "COMPACT-11"),
            _compaction_drops_latest,
        ),
        Mutant(
            "sync-gives-leaders-assignment",
            "SyncGroup gives every member the leader's assignment: a partition, two owners",
            ("REBAL-1",),
            _sync_gives_leaders_assignment,
        ),
        Mutant(
            "assign-before-revoke",
            "a consumer group member gets partitions before their owner revoked them",
            ("CGRP-5", "CGRP-6"),
            _assign_before_revoke,
            suite="tests/unit/group",
        ),
        Mutant(
            "offsets-lost-at-restart",
            "the coordinator does not reload committed offsets",
            ("OFFSET-4",),
            _offsets_lost_at_restart,
        ),
        Mutant(
            "dedup-window-1",
            "the idempotent dedup window is 1 batch instead of 5",
            ("IDEM-3",),
            _dedup_window_one,
        ),
        Mutant(
            "hw-past-lagging-isr",
            "the high watermark advances past a lagging ISR member",
            ("REPL-3",),
            _hw_past_lagging_isr,
        ),
        Mutant(
            "acks-all-without-isr",
            "acks=all is answered once the leader alone has the batch",
            ("REPL-4",),
            _acks_all_without_isr,
        ),
        Mutant(
            "unclean-election-always",
            "a replica outside the ISR is elected although unclean election is off",
            ("ISR-6", "CTRL-6"),
            _unclean_election_always,
        ),
        Mutant(
            "no-roll-when-offset-index-full",
            "a segment whose offset index is full does not roll",
            ("SEG-5",),
            _no_roll_when_offset_index_full,
            suite="tests/unit",
        ),
        Mutant(
            "no-grace-for-new-leaders-followers",
            "a new leader drops ISR followers that have not fetched from it yet at once",
            ("ISR-4",),
            _no_grace_for_new_leaders_followers,
            suite="tests/unit",
        ),
        Mutant(
            "lso-ignores-open-transactions",
            "the LSO is the high watermark: read_committed reads open transactions",
            ("TXN-61", "TXN-63"),
            _lso_ignores_open_transactions,
        ),
        Mutant(
            "read-committed-returns-aborted",
            "a read_committed fetch lists no aborted transactions: their records are read",
            ("TXN-60",),
            _read_committed_returns_aborted,
        ),
        Mutant(
            "older-epoch-accepted-after-fencing",
            "partitions take batches and markers of an older producer epoch",
            # a fenced transactional producer's batch is stopped before the log when the
            # leader asks the coordinator (its epoch is not the open transaction's, TXN-95);
            # an idempotent producer's reaches the log's check
            ("TXN-62", "IDEM-5"),
            _older_epoch_accepted_after_fencing,
        ),
        Mutant(
            "markers-before-decision-durable",
            "the coordinator writes markers before its PrepareCommit/PrepareAbort is durable",
            ("TXN-12",),
            _markers_before_decision_durable,
            suite="tests/unit",
        ),
        Mutant(
            "no-epoch-bump-on-commit",
            "a transactions-v2 commit keeps the producer epoch",
            ("TXN-92",),
            _no_epoch_bump_on_commit,
            suite="tests/unit/txn",
        ),
        Mutant(
            "kraft-fenced-broker-keeps-leadership",
            "the KRaft controller fences a broker without moving its leaderships",
            ("KCTRL-4", "KCTRL-15"),
            _kraft_fenced_broker_keeps_leadership,
            suite="tests/unit/metadata/controller",
        ),
        Mutant(
            "kraft-alter-partition-ignores-partition-epoch",
            "the KRaft controller takes an AlterPartition at an old partition epoch",
            ("KCTRL-8",),
            _kraft_alter_partition_ignores_partition_epoch,
            suite="tests/unit/metadata/controller",
        ),
        Mutant(
            "kraft-election-ignores-isr",
            "the KRaft controller elects any live replica, as if unclean election were on",
            ("KCTRL-7", "KCTRL-15"),
            _kraft_election_ignores_isr,
            suite="tests/unit/metadata/controller",
        ),
        Mutant(
            "kraft-unfence-before-caught-up",
            "the KRaft controller unfences a broker before it has replayed its registration",
            ("KCTRL-3",),
            _kraft_unfence_before_caught_up,
            suite="tests/unit/metadata/controller",
        ),
        Mutant(
            "kraft-reassignment-completes-early",
            "the KRaft controller completes a reassignment before the new replicas are in the ISR",
            ("KCTRL-16", "KCTRL-15"),
            _kraft_reassignment_completes_early,
            suite="tests/unit/metadata/controller",
        ),
    )
}


def apply(name: str) -> Mutant:
    mutant = MUTANTS[name]
    mutant.apply()
    return mutant
