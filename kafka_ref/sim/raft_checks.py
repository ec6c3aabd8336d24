"""Raft's safety properties, checked on a running simulation (Raft paper section 5, Figure 3).

The simulator (raft_cluster.py) calls `RaftChecker` after every event a node handles and
after every step of a schedule; the first property broken raises `SafetyViolation`, which
names it. The properties, as kafka-ref states them (spec/raft.md):

* **election safety** (RAFT-9): at most one leader per epoch, ever. Every node seen leading
  is remembered with its epoch; a second one in the same epoch is a violation. So is what
  it rests on broken: a voter seen voting for two candidates in one epoch, in one
  incarnation or across a restart (RAFT-2).
* **log matching** (RAFT-10): two logs holding an entry with the same offset and epoch hold
  the same entries up to it. Checked pairwise on the nodes that are up.
* **leader completeness** (RAFT-11): an entry committed (below a leader's high watermark) in
  an epoch is in the log of every leader of a later epoch. Checked when a node becomes
  leader, against every entry committed before.
* **state machine safety** (RAFT-12): every node applies the same entry at each offset: a
  node applies what is below its high watermark, in order, and the first entry applied at
  an offset anywhere is the only one any node may ever apply there. A restarted node
  applies again from the start, as a state machine replaying its log would, so a node's
  log keeps every entry it applied: one cut below them has removed a committed entry.

* **the listener** (RAFT-17): the application on each node applies what the quorum's
  listener tells it (`ApplyingListener`): committed batches in log order, each once, the
  same record at each offset on every node; and a node told that it leads has been told
  every data record its log holds before its epoch began.
* **observers** (RAFT-18): an observer is only ever unattached or a follower, and never
  votes. Log matching, state machine safety and the listener's checks hold for observers
  as for voters: an observer applies what the voters apply.
* **snapshots** (RAFT-21..RAFT-24): the application writes snapshots of what it applied
  (`ApplyingListener.maybe_snapshot`, its state as (offset, value) pairs). A snapshot holds
  exactly the committed data records below its end offset: none past what a leader has
  committed, each the record committed at its offset, none missing. A listener that loads
  a snapshot takes the same state machine from it; one told a batch past a gap in the log
  skipped only control records. Logs that were cut are compared where both hold entries.

An exception the core raises (one of its assertions) is a violation too: the core asserts
what it relies on, and a broken assumption is as much a bug as a broken property.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafka_ref.raft.control_records import batch_entries
from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.epoch_state import UnattachedState
from kafka_ref.raft.follower_state import FollowerState
from kafka_ref.raft.kafka_raft_client import KafkaRaftClient
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.raft.listener import CommittedBatch, LeaderAndEpoch, LoadedSnapshot
from kafka_ref.raft.snapshot_generator import SnapshotGenerator

Entry = tuple[int, int, bool, bytes | None]  # offset, epoch, is control, value


class SafetyViolation(AssertionError):
    """A property of Raft broke; `prop` names it (election safety, log matching, ...)."""

    def __init__(self, prop: str, detail: str) -> None:
        super().__init__(f"{prop}: {detail}")
        self.prop = prop


def log_entries(log: KafkaRaftLog, start: int = 0, end: int | None = None) -> list[Entry]:
    """The entries of `log` in [start, end)."""
    end = log.end_offset if end is None else min(end, log.end_offset)
    if start >= end:
        return []
    return [e for e in batch_entries(log.read_all(start)) if start <= e[0] < end]


@dataclass
class NodeView:
    """What the checker remembers of one node's current incarnation."""

    applied: int = 0  # the offset up to which this incarnation applied
    seen_leader_epoch: int = -1  # the last epoch in which it was seen leading
    committed: int = 0  # a leader's high watermark last seen


@dataclass
class RaftChecker:
    observers: frozenset[int] = frozenset()  # the nodes outside the voter set
    leaders: dict[int, int] = field(default_factory=dict)  # epoch -> the node that led it
    votes: dict[tuple[int, int], int] = field(default_factory=dict)  # (voter, epoch) -> vote
    committed: dict[int, tuple[Entry, int]] = field(
        default_factory=dict
    )  # offset -> (entry, epoch)
    applied: dict[int, Entry] = field(default_factory=dict)  # offset -> the entry applied
    told: dict[int, bytes | None] = field(default_factory=dict)  # offset -> a listener's record
    views: dict[int, NodeView] = field(default_factory=dict)

    def restarted(self, node_id: int) -> None:
        self.views[node_id] = NodeView()

    def observe(self, node_id: int, client: KafkaRaftClient, log: KafkaRaftLog) -> None:
        """After `node_id` handled an event: check what it may have changed."""
        view = self.views.setdefault(node_id, NodeView())
        state = client.state
        if node_id in self.observers and (
            state.voted_id != NOT_SET or not isinstance(state, (UnattachedState, FollowerState))
        ):
            raise SafetyViolation(
                "observer", f"observer {node_id} is {state!r}, voted for {state.voted_id}"
            )
        if state.voted_id != NOT_SET:
            first = self.votes.setdefault((node_id, state.epoch), state.voted_id)
            if first != state.voted_id:
                raise SafetyViolation(
                    "election safety",
                    f"node {node_id} voted for {first} and for {state.voted_id} "
                    f"in epoch {state.epoch}",
                )
        if isinstance(state, LeaderState) and view.seen_leader_epoch != state.epoch:
            self._check_new_leader(node_id, state.epoch, log)
            view.seen_leader_epoch = state.epoch
            view.committed = 0
        if isinstance(state, LeaderState) and client.high_watermark > view.committed:
            for entry in log_entries(log, view.committed, client.high_watermark):
                self.committed.setdefault(entry[0], (entry, state.epoch))
            view.committed = client.high_watermark
        # below the log start, the node's state is its snapshot's, which its listener checks
        view.applied = max(view.applied, log.start_offset)
        if log.end_offset < view.applied:
            raise SafetyViolation(
                "state machine safety",
                f"node {node_id}'s log ends at {log.end_offset}, but it applied the entries "
                f"below {view.applied}: a committed entry was removed",
            )
        hw = min(client.high_watermark, log.end_offset)
        if hw > view.applied:
            for entry in log_entries(log, view.applied, hw):
                first = self.applied.setdefault(entry[0], entry)
                if first != entry:
                    raise SafetyViolation(
                        "state machine safety",
                        f"node {node_id} applies {entry} at offset {entry[0]}, "
                        f"another node applied {first}",
                    )
            view.applied = hw

    def _check_new_leader(self, node_id: int, epoch: int, log: KafkaRaftLog) -> None:
        other = self.leaders.setdefault(epoch, node_id)
        if other != node_id:
            raise SafetyViolation(
                "election safety", f"nodes {other} and {node_id} both lead epoch {epoch}"
            )
        entries = {e[0]: e for e in log_entries(log)}
        for offset, (entry, commit_epoch) in sorted(self.committed.items()):
            if offset < log.start_offset:
                continue  # in the leader's snapshot (checked when it was written)
            if commit_epoch < epoch and entries.get(offset) != entry:
                raise SafetyViolation(
                    "leader completeness",
                    f"{entry} was committed in epoch {commit_epoch}, but the leader of epoch "
                    f"{epoch}, node {node_id}, holds {entries.get(offset)} at offset {offset}",
                )

    def check_logs(self, logs: Iterable[tuple[int, KafkaRaftLog]]) -> None:
        """Log matching (RAFT-10) between every two logs given."""
        all_entries = [(node_id, {e[0]: e for e in log_entries(log)}) for node_id, log in logs]
        for i, (a_id, a) in enumerate(all_entries):
            for b_id, b in all_entries[i + 1 :]:
                both = sorted(a.keys() & b.keys())  # a cut log holds no entry below its start
                # the last offset where both hold an entry of the same epoch
                last = max((o for o in both if a[o][1] == b[o][1]), default=-1)
                differ = [o for o in both if o <= last and a[o] != b[o]]
                if differ:
                    raise SafetyViolation(
                        "log matching",
                        f"nodes {a_id} and {b_id} hold epoch-equal entries at {last} but "
                        f"differ before it, at {differ[0]}: {a[differ[0]]} / {b[differ[0]]}",
                    )

    def check_snapshot(self, node_id: int, end_offset: int, records: list) -> None:
        """A snapshot ending at `end_offset` holds exactly the committed data records below
        it (RAFT-21): it reaches no further than a leader has committed, and agrees with
        what was committed at every offset."""
        frontier = max(self.committed, default=-1) + 1
        if end_offset > frontier:
            raise SafetyViolation(
                "snapshot",
                f"node {node_id} wrote a snapshot ending at {end_offset}, but only the "
                f"entries below {frontier} are committed",
            )
        held = dict(records)
        for offset in range(end_offset):
            committed = self.committed.get(offset)
            if committed is None or committed[0][2]:
                continue  # a control record, or below every leader's log start
            entry = committed[0]
            if held.get(offset, b"<missing>") != entry[3]:
                raise SafetyViolation(
                    "state machine safety",
                    f"node {node_id}'s snapshot ending at {end_offset} holds "
                    f"{held.get(offset, b'<missing>')!r} at {offset}, committed was {entry}",
                )


def encode_state(records: list[tuple[int, bytes | None]]) -> bytes:
    """The simulated application's state as a snapshot's bytes: (offset, value) pairs."""
    pairs = [[offset, None if value is None else value.hex()] for offset, value in records]
    return json.dumps(pairs).encode()


def decode_state(data: bytes) -> list[tuple[int, bytes | None]]:
    return [(o, None if v is None else bytes.fromhex(v)) for o, v in json.loads(data)]


class ApplyingListener:
    """The application on one node, applying what the quorum's listener tells it (RAFT-17),
    and writing snapshots of what it applied when its `SnapshotGenerator` says (RAFT-21)."""

    def __init__(
        self,
        node_id: int,
        checker: RaftChecker,
        client: Callable[[], KafkaRaftClient],
        log: KafkaRaftLog,
        generator: SnapshotGenerator | None = None,
    ) -> None:
        self.node_id, self.checker, self.client, self.log = node_id, checker, client, log
        self.next_offset = 0  # past the last record applied
        self.applied: list[tuple[int, bytes | None]] = []  # (offset, value), in order
        self.generator = generator

    def snapshot_point(self) -> tuple[int, list[tuple[int, bytes | None]]]:
        """Where a snapshot is taken, and of what: everything applied, which is committed."""
        return self.next_offset, self.applied

    def maybe_snapshot(self, now_ms: int) -> None:
        """Write a snapshot of the applied state when the generator says it is time."""
        if self.generator is None or not self.generator.should_snapshot(now_ms):
            return
        end_offset, records = self.snapshot_point()
        self.checker.check_snapshot(self.node_id, end_offset, records)
        self.client().create_snapshot(end_offset, encode_state(records), now_ms)
        self.generator.snapshot_written(now_ms)

    def handle_load_snapshot(self, snapshot: LoadedSnapshot) -> None:
        """Rebuild from a snapshot: it must hold what every node applied at its offsets."""
        records = decode_state(snapshot.data)
        end = snapshot.snapshot_id.offset
        self.checker.check_snapshot(self.node_id, end, records)
        for offset, value in records:
            first = self.checker.told.setdefault(offset, value)
            if first != value:
                raise SafetyViolation(
                    "state machine safety",
                    f"node {self.node_id} loads {value!r} at offset {offset} from a snapshot, "
                    f"another node was told {first!r}",
                )
        self.applied = records
        self.next_offset = end

    def handle_commit(self, batch: CommittedBatch) -> None:
        if batch.base_offset < self.next_offset:
            raise SafetyViolation(
                "listener",
                f"node {self.node_id} is told the batch at {batch.base_offset} after the "
                f"records below {self.next_offset}",
            )
        skipped = [
            o
            for o in range(self.next_offset, batch.base_offset)
            if o in self.checker.committed and not self.checker.committed[o][0][2]
        ]
        if skipped:
            raise SafetyViolation(
                "listener",
                f"node {self.node_id} is told the batch at {batch.base_offset}, past the "
                f"committed records at {skipped[:5]} it never heard",
            )
        if batch.last_offset >= self.client().high_watermark:
            raise SafetyViolation(
                "listener",
                f"node {self.node_id} is told the batch ending at {batch.last_offset}, "
                f"above its high watermark {self.client().high_watermark}",
            )
        for offset, value in batch.records:
            first = self.checker.told.setdefault(offset, value)
            if first != value:
                raise SafetyViolation(
                    "state machine safety",
                    f"node {self.node_id} is told {value!r} at offset {offset}, another "
                    f"node was told {first!r}",
                )
        self.applied.extend(batch.records)
        self.next_offset = batch.last_offset + 1
        if self.generator is not None:
            self.generator.record_batch(batch.size_in_bytes)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        state = self.client().state
        if leader.leader_id != self.node_id:
            return
        if not isinstance(state, LeaderState):
            raise SafetyViolation(
                "listener", f"node {self.node_id} is told it leads, but it is {state!r}"
            )
        start = state.epoch_start_offset
        missed = [
            e[0]
            for e in log_entries(self.log, self.next_offset, start)
            if not e[2]  # data, not control
        ]
        if missed:
            raise SafetyViolation(
                "listener",
                f"node {self.node_id} is told it leads epoch {leader.epoch} before it "
                f"applied the records at {missed} (the epoch starts at {start})",
            )
