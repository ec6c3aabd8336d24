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

An exception the core raises (one of its assertions) is a violation too: the core asserts
what it relies on, and a broken assumption is as much a bug as a broken property.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_ref.raft.control_records import batch_entries
from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.kafka_raft_client import KafkaRaftClient
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.leader_state import LeaderState

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
    leaders: dict[int, int] = field(default_factory=dict)  # epoch -> the node that led it
    votes: dict[tuple[int, int], int] = field(default_factory=dict)  # (voter, epoch) -> vote
    committed: dict[int, tuple[Entry, int]] = field(
        default_factory=dict
    )  # offset -> (entry, epoch)
    applied: dict[int, Entry] = field(default_factory=dict)  # offset -> the entry applied
    views: dict[int, NodeView] = field(default_factory=dict)

    def restarted(self, node_id: int) -> None:
        self.views[node_id] = NodeView()

    def observe(self, node_id: int, client: KafkaRaftClient, log: KafkaRaftLog) -> None:
        """After `node_id` handled an event: check what it may have changed."""
        view = self.views.setdefault(node_id, NodeView())
        state = client.state
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
            if commit_epoch < epoch and entries.get(offset) != entry:
                raise SafetyViolation(
                    "leader completeness",
                    f"{entry} was committed in epoch {commit_epoch}, but the leader of epoch "
                    f"{epoch}, node {node_id}, holds {entries.get(offset)} at offset {offset}",
                )

    def check_logs(self, logs: Iterable[tuple[int, KafkaRaftLog]]) -> None:
        """Log matching (RAFT-10) between every two logs given."""
        all_entries = [(node_id, log_entries(log)) for node_id, log in logs]
        for i, (a_id, a) in enumerate(all_entries):
            for b_id, b in all_entries[i + 1 :]:
                last = -1  # the last offset where both hold an entry of the same epoch
                for x, y in zip(a, b, strict=False):
                    if x[1] == y[1]:
                        last = x[0]
                if last >= 0 and a[: last + 1] != b[: last + 1]:
                    raise SafetyViolation(
                        "log matching",
                        f"nodes {a_id} and {b_id} hold epoch-equal entries at {last} but "
                        f"differ before it: {a[: last + 1]} / {b[: last + 1]}",
                    )
