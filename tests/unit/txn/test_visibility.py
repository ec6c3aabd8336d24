"""What read_committed sees, under every interleaving hypothesis can find (TXN-64).

The coordinator of tests/unit/txn/harness.py writes its markers into two real partition
logs (`Log`, with their producer state, LSO and `.txnindex`), and a state machine plays
transactional producers against them: InitProducerId (a restart: the previous instance
lives on as a zombie that must be fenced), AddPartitionsToTxn, transactional produce,
EndTxn(commit or abort); the coordinator's log writes landing or failing, marker requests
delivered or failing, time passing the transaction timeout, and the coordinator crashing
between any two steps (its in-flight writes landing or not) and reloading from its log.

The invariants read each partition as a read_committed consumer does (kafka-ref's fetch
path: the LSO bound and the aborted transactions, applied by kafka-ref's consumer):

* the LSO never passes a record whose transaction has no marker in that partition yet;
* below the LSO, a record is visible exactly when the coordinator's durable decision for
  its transaction was to commit: nothing aborted is visible and no committed transaction
  is partly visible.

A record's transaction is known from the producer's side: the instance that wrote it, and
which transaction of its transactional id was current when its AddPartitionsToTxn was
answered (counted in the coordinator's `__transaction_state` records).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    invariant,
    precondition,
    rule,
)

from kafka_ref.client.consumer_fetch import CompletedFetch
from kafka_ref.common import TopicPartition
from kafka_ref.errors import KafkaError
from kafka_ref.log.isolation import READ_COMMITTED
from kafka_ref.log.log import Log
from kafka_ref.record.batch import RecordBatch, build_batch
from kafka_ref.record.record import Record
from kafka_ref.replication.reads import ConsumerReads
from kafka_ref.txn.transaction_metadata import TransactionState as S
from tests.unit.log.conftest import open_broker_log
from tests.unit.txn.harness import OK, CoordinatorWorld, Harness

TIDS = ["a", "b"]
PARTS = [("t", 0), ("t", 1)]
TIMEOUT_MS = 10_000


@dataclass
class Instance:
    """One incarnation of a transactional producer (a zombie once another one inits)."""

    tid: str
    pid: int = -1
    epoch: int = -1
    ordinal: int = -1  # which transaction of the id its partitions were added to
    added: set = field(default_factory=set)
    seq: dict = field(default_factory=dict)


class Leader(ConsumerReads):
    """A one-replica partition: its high watermark is its log end."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.isolation = READ_COMMITTED  # as a broker's partitions read (isolation.py)

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset


def visible_offsets(log: Log) -> tuple[set[int], int]:
    """(offsets a read_committed consumer reads from offset 0, the LSO)."""
    leader = Leader(log)
    lso = leader.last_stable_offset
    if lso == 0:
        return set(), lso
    info = leader.read(0, 1 << 30, min_one_batch=True, read_committed=True)
    data = SimpleNamespace(
        error_code=0,
        high_watermark=leader.high_watermark,
        log_start_offset=0,
        last_stable_offset=lso,
        records=info.read_bytes(),
        aborted_transactions=leader.aborted_transactions(info),
        preferred_read_replica=-1,
    )
    fetched = CompletedFetch(TopicPartition("t", 0), 0, data, read_committed=True)
    return {r.offset for r in fetched.take(1 << 30)}, lso


def decisions(history: list) -> list[S | None]:
    """Per transaction of one id, in order: PREPARE_COMMIT, PREPARE_ABORT or None (open),
    from its `__transaction_state` records. A transaction starts with an Ongoing record
    that follows a record of another state."""
    out: list[S | None] = []
    previous = None
    for meta in history:
        if meta.state == S.ONGOING and previous != S.ONGOING:
            out.append(None)
        elif meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT) and out and out[-1] is None:
            out[-1] = meta.state
        previous = meta.state
    return out


class VisibilityMachine(CoordinatorWorld):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="txn-visibility-")
        self.h = Harness(num_partitions=2)
        self.h.logs = {
            tp: open_broker_log(os.path.join(self.dir, f"t-{tp[1]}"), self.h.clock) for tp in PARTS
        }
        self.instances: list[Instance] = []
        self.written: dict = {tp: {} for tp in PARTS}  # offset -> (tid, ordinal)
        self.values = itertools.count()

    def ready(self) -> list[Instance]:
        return [i for i in self.instances if i.pid >= 0]

    # -- producers ---------------------------------------------------------------------
    @initialize()
    def first_producers(self):
        """Every id starts with a producer that has its epoch (the search starts there)."""
        for tid in TIDS:
            self.init(tid)
            self.h.complete_append()

    @rule(tid=st.sampled_from(TIDS))
    def init(self, tid):
        """A producer (re)starts with InitProducerId; an older instance becomes a zombie."""
        instance = Instance(tid)
        self.instances.append(instance)

        def got(error, pid, epoch):
            if error == OK:
                instance.pid, instance.epoch = pid, epoch

        self.h.coordinator.handle_init_producer_id(tid, TIMEOUT_MS, got)

    @precondition(lambda self: self.ready())
    @rule(data=st.data(), parts=st.sets(st.sampled_from(PARTS), min_size=1))
    def add(self, data, parts):
        instance = data.draw(st.sampled_from(self.ready()))

        def done(error):
            if error == OK:
                instance.ordinal = len(decisions(self.h.history(instance.tid))) - 1
                instance.added |= parts

        self.h.coordinator.handle_add_partitions(
            instance.tid, instance.pid, instance.epoch, parts, done
        )

    @precondition(lambda self: any(i.added for i in self.instances))
    @rule(data=st.data())
    def produce(self, data):
        """A transactional batch to a partition of the instance's transaction; a zombie's
        may be refused (fenced), and then nothing is written."""
        instance = data.draw(st.sampled_from([i for i in self.instances if i.added]))
        tp = data.draw(st.sampled_from(sorted(instance.added)))
        seq = instance.seq.get(tp, 0)
        records = [Record(None, b"%d" % next(self.values), 0)]
        batch = build_batch(
            records,
            producer_id=instance.pid,
            producer_epoch=instance.epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        try:
            info = self.h.logs[tp].append(batch)
        except KafkaError:
            return
        instance.seq[tp] = seq + 1
        self.written[tp][info.first_offset] = (instance.tid, instance.ordinal, instance.pid)

    @precondition(lambda self: self.ready())
    @rule(data=st.data(), commit=st.booleans())
    def end(self, data, commit):
        instance = data.draw(st.sampled_from(self.ready()))
        # A client has every batch answered before it sends EndTxn, and writes no more in
        # that transaction. (A produce arriving after the marker would open a transaction
        # the coordinator does not know: the hanging transaction KIP-890 prevents.)
        instance.added = set()
        self.h.coordinator.handle_end_txn(
            instance.tid, instance.pid, instance.epoch, commit, lambda _: None
        )

    # -- the coordinator's world ---------------------------------------------------------
    @rule(ms=st.integers(0, 12_000))
    def time_passes(self, ms):
        self.h.clock.advance(ms)
        self.h.scheduler.advance(0)
        self.h.coordinator.abort_timed_out_transactions()

    @rule(data=st.data())
    def crash(self, data):
        landed = data.draw(
            st.lists(st.booleans(), min_size=len(self.h.appends), max_size=len(self.h.appends))
        )
        self.h.crash(landed)

    # -- what read_committed sees ---------------------------------------------------------
    @invariant()
    def read_committed_sees_whole_committed_transactions_only(self):
        for tp, log in self.h.logs.items():
            visible, lso = visible_offsets(log)
            markers = self.marker_offsets(log)
            for offset, (tid, ordinal, pid) in self.written[tp].items():
                if not any(m > offset for m in markers.get(pid, ())):
                    assert offset >= lso, f"{tp}: the LSO {lso} passed open offset {offset}"
                if offset >= lso:
                    continue
                decided = decisions(self.h.history(tid))[ordinal]
                assert decided is not None, f"{tp}@{offset}: visible below the LSO, undecided"
                committed = decided == S.PREPARE_COMMIT
                assert (offset in visible) == committed, (tp, offset, decided.name, lso)

    @staticmethod
    def marker_offsets(log: Log) -> dict[int, list[int]]:
        data = log.read(0, 1 << 30).read_bytes()
        out: dict[int, list[int]] = {}
        pos = 0
        while pos < len(data):
            batch = RecordBatch(data, pos)
            if batch.header.is_control:
                out.setdefault(batch.header.producer_id, []).append(batch.header.base_offset)
            pos += batch.header.size
        return out

    def teardown(self):
        """Every transaction gets decided and marked in the end: then all is below the LSO."""
        try:
            for _ in range(200):
                if self.h.appends:
                    self.h.complete_append()
                elif self.h.markers:
                    self.h.complete_markers()
                else:
                    self.h.clock.advance(TIMEOUT_MS)
                    self.h.scheduler.advance(0)
                    if not self.h.coordinator.abort_timed_out_transactions() and not (
                        self.h.appends or self.h.markers
                    ):
                        break
            for log in self.h.logs.values():
                assert visible_offsets(log)[1] == log.log_end_offset
            self.read_committed_sees_whole_committed_transactions_only()
        finally:
            for log in self.h.logs.values():
                log.close()
            shutil.rmtree(self.dir, ignore_errors=True)


TestVisibility = pytest.mark.spec("TXN-64")(VisibilityMachine.TestCase)
TestVisibility.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
