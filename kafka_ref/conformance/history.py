"""A Jepsen-style history checker for Kafka queues: record sends and polls, find anomalies.

A test that only asserts "I read back what I wrote" misses most ways a log can go wrong.
Jepsen's queue workload (jepsen-io/jepsen, `jepsen/src/jepsen/tests/kafka.clj`) instead
records a
*history*: every send with the offset the broker acknowledged (or "unknown" when the answer
never came), and every poll with the (offset, value) pairs it returned, per consumer
process. Afterwards it rebuilds each partition's log from everything anyone saw and looks
for these anomalies (the names are Jepsen's; HIST-n are the rules in spec/conformance.md):

* **inconsistent-offsets** (HIST-1): one offset of one partition holds two different values.
* **duplicate** (HIST-2): one value sits at two offsets (values are unique per key, so a
  second copy is a retry the broker appended twice).
* **lost-write** (HIST-3): an acknowledged value that no poll returned, although polls did
  return a value at a *higher* offset of the same partition: the consumer read past it.
* **poll-skip** / **nonmonotonic-poll** (HIST-4): within one consumer, the next value read
  from a partition is not the one right after the last value it read (a skip), or is at or
  before it (going backwards, or reading a value twice). An `assign` or `seek` resets this.
* **nonmonotonic-send** (HIST-5): within one producer, a later acknowledged send to a
  partition got an offset at or below an earlier one.
* **aborted-read** (HIST-6): a poll returned a value whose send failed or whose transaction
  was aborted.

Transactions (KIP-98) add an outcome to sends and an isolation level to polls. A
transactional send names its transaction; `end_txn` records how the transaction ended
(committed, aborted, or unknown when the answer to EndTxn never came); a poll says whether
it was `read_committed`, and, in a consume-transform-produce loop, in which transaction it
read. A transaction of unknown outcome that a read_committed poll read from must have
committed (Jepsen's `must-have-committed?`). Then (HIST-16..HIST-19):

* **aborted-read** (HIST-16): a read_committed poll returned a value of an aborted
  transaction (Jepsen's G1a);
* **torn-transaction** (HIST-17): a read_committed reader read past every record of a
  committed transaction (a value at a higher offset of each of its partitions) and saw some
  of its records but not all: the transaction was not all or nothing;
* **lost-committed-write** (HIST-18): a read_committed reader read past a record of a
  committed transaction without reading it;
* **G1c** (HIST-19): transactions that read each other's writes in a cycle: T1 read what T2
  wrote and T2 read what T1 wrote (through any number of steps). Under read_committed a
  transaction reads only what committed before it read, so this cannot happen. This is the
  write-read graph of Jepsen's `jepsen.tests.kafka` checker (`wr-graph`, `G1c`); its
  write-write edges (`ww-graph`) are left out, because Kafka orders two transactions
  differently in two partitions when they interleave (Jepsen's `--no-ww-deps`).

Readers of these rules read each partition from its start: "read past" an offset means
that the reader polled a value at a higher offset of that partition.

"Right after" is measured in the *dense index* of the partition: its offsets with a known
value, in order, so that gaps in offsets (compaction, transaction markers) are not skips.
Keys here are partitions: any hashable name such as ("topic", 0).

    h = History()
    h.send("p1", k, b"v1", offset=0)          # acknowledged at offset 0
    h.send("p1", k, b"v2", offset=None)       # outcome unknown (a timeout)
    h.poll("c1", {k: [(0, b"v1")]})
    assert check(h).valid

    h.send("p1", k, b"t1", offset=2, txn="T1")     # a transactional send
    h.end_txn("p1", "T1", COMMITTED)
    h.poll("c2", {k: [(2, b"t1")]}, read_committed=True)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

ACKED, UNKNOWN, FAILED = "ok", "info", "fail"
COMMITTED, ABORTED = "committed", "aborted"  # a transaction's outcome (or UNKNOWN)


@dataclass(frozen=True)
class Send:
    process: Hashable
    key: Hashable
    value: Any
    offset: int | None  # the acknowledged offset, None when unknown
    status: str  # ok (acknowledged), info (unknown outcome) or fail (definitely not written)
    txn: Hashable | None = None  # the transaction it belongs to, if any


@dataclass(frozen=True)
class Poll:
    process: Hashable
    reads: dict[Hashable, list[tuple[int, Any]]]
    read_committed: bool = False
    txn: Hashable | None = None  # the transaction the poll read in (consume-transform-produce)


@dataclass(frozen=True)
class EndTxn:
    process: Hashable
    txn: Hashable
    outcome: str  # committed, aborted, or info (unknown: EndTxn got no answer)


@dataclass(frozen=True)
class Assign:
    process: Hashable
    keys: frozenset


@dataclass
class Result:
    anomalies: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    unseen: dict[Hashable, set] = field(default_factory=dict)  # informational (C10)

    @property
    def valid(self) -> bool:
        return not any(self.anomalies.values())

    def kinds(self) -> set[str]:
        return {kind for kind, found in self.anomalies.items() if found}

    def __str__(self) -> str:
        if self.valid:
            return "valid history"
        return "; ".join(f"{k}: {v[:3]}" for k, v in self.anomalies.items() if v)


class History:
    """The operations of a run, in the order they completed."""

    def __init__(self) -> None:
        self.ops: list[Send | Poll | Assign | EndTxn] = []

    def send(
        self,
        process,
        key,
        value,
        offset: int | None = None,
        status: str | None = None,
        txn: Hashable | None = None,
    ):
        status = status or (ACKED if offset is not None else UNKNOWN)
        self.ops.append(Send(process, key, value, offset, status, txn))

    def poll(
        self,
        process,
        reads: dict[Hashable, Iterable[tuple[int, Any]]],
        *,
        read_committed: bool = False,
        txn: Hashable | None = None,
    ) -> None:
        self.ops.append(Poll(process, {k: list(v) for k, v in reads.items()}, read_committed, txn))

    def end_txn(self, process, txn: Hashable, outcome: str) -> None:
        """How transaction `txn` ended: COMMITTED, ABORTED or UNKNOWN."""
        if outcome not in (COMMITTED, ABORTED, UNKNOWN):
            raise ValueError(f"outcome {outcome!r}: expected {COMMITTED}, {ABORTED} or {UNKNOWN}")
        self.ops.append(EndTxn(process, txn, outcome))

    def assign(self, process, keys: Iterable[Hashable]) -> None:
        """The consumer's assignment changed or it seeked: its poll order starts afresh."""
        self.ops.append(Assign(process, frozenset(keys)))


def _must_have_happened(op: Send, read_values: set) -> bool:
    """Acknowledged, or of unknown outcome but read by someone (Jepsen's must_have_committed)."""
    return op.status == ACKED or (op.status == UNKNOWN and (op.key, op.value) in read_values)


class _Transactions:
    """Each transaction's writes and outcome, as far as the history tells (HIST-16)."""

    def __init__(self, history: History) -> None:
        self.writer: dict[tuple, Hashable] = {}  # (key, value) -> its transaction
        self.writes: dict[Hashable, list[tuple]] = defaultdict(list)  # txn -> [(key, value)]
        self.outcome: dict[Hashable, str] = {}
        for op in history.ops:
            if isinstance(op, Send) and op.txn is not None:
                self.writer[(op.key, op.value)] = op.txn
                self.writes[op.txn].append((op.key, op.value))
                self.outcome.setdefault(op.txn, UNKNOWN)
            elif isinstance(op, EndTxn):
                self.outcome[op.txn] = op.outcome
        for op in history.ops:  # unknown, but a read_committed poll read it: it committed
            if isinstance(op, Poll) and op.read_committed:
                for key, pairs in op.reads.items():
                    for _, value in pairs:
                        txn = self.writer.get((key, value))
                        if txn is not None and self.outcome[txn] == UNKNOWN:
                            self.outcome[txn] = COMMITTED

    def committed_view(self, key: Hashable, value: Any) -> bool:
        """May a read_committed poll return this value (not written in a transaction that
        did not commit)?"""
        txn = self.writer.get((key, value))
        return txn is None or self.outcome[txn] == COMMITTED


def _version_order(history: History, result: Result, txns: _Transactions):
    """Per key: offset -> values seen there, and the dense index of each value, both over
    every value and over the values a read_committed poll may return."""
    log: dict[Hashable, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    read_values = {
        (k, v)
        for op in history.ops
        if isinstance(op, Poll)
        for k, pairs in op.reads.items()
        for _, v in pairs
    }
    for op in history.ops:
        if isinstance(op, Poll):
            for key, pairs in op.reads.items():
                for offset, value in pairs:
                    log[key][offset].add(value)
        elif (
            isinstance(op, Send) and op.offset is not None and _must_have_happened(op, read_values)
        ):
            log[op.key][op.offset].add(op.value)
    index: dict[Hashable, dict[Any, int]] = {}
    committed_index: dict[Hashable, dict[Any, int]] = {}
    for key, offsets in log.items():
        by_value: dict[Any, int] = {}
        where: dict[Any, list[int]] = defaultdict(list)
        for i, offset in enumerate(sorted(offsets)):
            values = offsets[offset]
            if len(values) > 1:  # HIST-1
                result.anomalies["inconsistent-offsets"].append(
                    {"key": key, "offset": offset, "values": sorted(values, key=repr)}
                )
            for value in values:
                where[value].append(offset)
                by_value.setdefault(value, i)
        for value, offs in where.items():
            if len(offs) > 1:  # HIST-2
                result.anomalies["duplicate"].append({"key": key, "value": value, "offsets": offs})
        index[key] = by_value
        visible = [
            o for o in sorted(offsets) if all(txns.committed_view(key, v) for v in offsets[o])
        ]
        committed_index[key] = {v: i for i, o in enumerate(visible) for v in offsets[o]}
    return log, index, committed_index


def _lost_writes(history: History, index, result: Result) -> None:
    read: dict[Hashable, set] = defaultdict(set)
    for op in history.ops:
        if isinstance(op, Poll):
            for key, pairs in op.reads.items():
                read[key].update(v for _, v in pairs)
    # transactional writes are judged by their transaction's outcome (HIST-17, HIST-18)
    acked = [
        op for op in history.ops if isinstance(op, Send) and op.status == ACKED and op.txn is None
    ]
    for key in {op.key for op in acked}:
        by_value = index.get(key, {})
        bound = max((by_value[v] for v in read[key] if v in by_value), default=-1)
        for op in acked:
            if op.key != key or op.value in read[key]:
                continue
            result.unseen.setdefault(key, set()).add(op.value)
            if by_value.get(op.value, bound + 1) <= bound:  # HIST-3
                result.anomalies["lost-write"].append(
                    {"key": key, "value": op.value, "offset": op.offset}
                )


def _poll_order(history: History, index, committed_index, result: Result) -> None:
    last: dict[Hashable, dict[Hashable, Any]] = defaultdict(dict)  # process -> key -> value
    for op in history.ops:
        if isinstance(op, Assign):
            last[op.process] = {k: v for k, v in last[op.process].items() if k in op.keys}
            for key in op.keys:
                last[op.process].pop(key, None)  # a new assignment starts where it seeks
            continue
        if not isinstance(op, Poll):
            continue
        for key, pairs in op.reads.items():
            # a read_committed poll steps over the values of transactions that did not commit
            by_value = (committed_index if op.read_committed else index).get(key, {})
            for _, value in pairs:
                prev = last[op.process].get(key, _NONE)
                if prev is not _NONE and prev in by_value and value in by_value:
                    delta = by_value[value] - by_value[prev]
                    if delta != 1:  # HIST-4
                        kind = "poll-skip" if delta > 1 else "nonmonotonic-poll"
                        result.anomalies[kind].append(
                            {"process": op.process, "key": key, "after": prev, "got": value}
                        )
                last[op.process][key] = value


def _send_order(history: History, result: Result) -> None:
    last: dict[tuple, int] = {}
    for op in history.ops:
        if isinstance(op, Send) and op.status == ACKED and op.offset is not None:
            prev = last.get((op.process, op.key))
            if prev is not None and op.offset <= prev:  # HIST-5
                result.anomalies["nonmonotonic-send"].append(
                    {"process": op.process, "key": op.key, "offset": op.offset, "after": prev}
                )
            last[(op.process, op.key)] = op.offset


def _aborted_reads(history: History, aborted: set, txns: _Transactions, result: Result) -> None:
    failed = {
        (op.key, op.value) for op in history.ops if isinstance(op, Send) and op.status == FAILED
    }
    for op in history.ops:
        if isinstance(op, Poll):
            for key, pairs in op.reads.items():
                for offset, value in pairs:
                    txn = txns.writer.get((key, value))
                    of_aborted_txn = op.read_committed and txns.outcome.get(txn) == ABORTED
                    if value in aborted or (key, value) in failed or of_aborted_txn:  # HIST-6, 16
                        result.anomalies["aborted-read"].append(
                            {
                                "process": op.process,
                                "key": key,
                                "offset": offset,
                                "value": value,
                                "txn": txn,
                            }
                        )


def _committed_reads(history: History, log, txns: _Transactions, result: Result) -> None:
    """HIST-17 and HIST-18: what each read_committed reader missed of committed transactions."""
    offset_of = {
        (key, v): o
        for key, offsets in log.items()
        for o in sorted(offsets, reverse=True)
        for v in offsets[o]
    }
    reach: dict[Hashable, dict[Hashable, int]] = defaultdict(dict)  # reader -> key -> max offset
    seen: dict[Hashable, set] = defaultdict(set)  # reader -> (key, value) read
    for op in history.ops:
        if isinstance(op, Poll) and op.read_committed:
            for key, pairs in op.reads.items():
                for offset, value in pairs:
                    reach[op.process][key] = max(reach[op.process].get(key, -1), offset)
                    seen[op.process].add((key, value))
    for txn, writes in txns.writes.items():
        if txns.outcome[txn] != COMMITTED:
            continue
        placed = [(k, v, offset_of[(k, v)]) for k, v in writes if (k, v) in offset_of]
        for reader, reached in reach.items():
            past = [(k, v, o) for k, v, o in placed if reached.get(k, -1) > o]
            missing = [(k, v, o) for k, v, o in past if (k, v) not in seen[reader]]
            for k, v, o in missing:  # HIST-18
                result.anomalies["lost-committed-write"].append(
                    {"process": reader, "key": k, "value": v, "offset": o, "txn": txn}
                )
            if len(past) == len(writes) and 0 < len(missing) < len(writes):  # HIST-17
                result.anomalies["torn-transaction"].append(
                    {
                        "process": reader,
                        "txn": txn,
                        "missing": [(k, v) for k, v, _ in missing],
                        "read": [(k, v) for k, v, _ in past if (k, v) in seen[reader]],
                    }
                )


def _g1c(history: History, txns: _Transactions, result: Result) -> None:
    """HIST-19: a cycle in the write-read graph, where T1 -> T2 when T2 read what T1 wrote."""
    readers_of: dict[Hashable, set] = defaultdict(set)
    for op in history.ops:
        if isinstance(op, Poll) and op.txn is not None:
            for key, pairs in op.reads.items():
                for _, value in pairs:
                    writer = txns.writer.get((key, value))
                    if writer is not None and writer != op.txn:
                        readers_of[writer].add(op.txn)
    left = _peel(set(readers_of) | {t for ts in readers_of.values() for t in ts}, readers_of)
    while left:  # each transaction left has a predecessor left: walking back meets a cycle
        path, node = [], min(left, key=repr)
        while node not in path:
            path.append(node)
            node = min((w for w in left if node in readers_of.get(w, ())), key=repr)
        cycle = [*path[path.index(node) :], node][::-1]  # in write -> read order
        result.anomalies["G1c"].append({"cycle": cycle})
        left = _peel(left - set(cycle), readers_of)


def _peel(nodes: set, edges: dict[Hashable, set]) -> set:
    """The nodes left once those no cycle leads into are peeled off (Kahn's algorithm)."""
    indegree = dict.fromkeys(nodes, 0)
    for source in nodes:
        for t in edges.get(source, ()):
            if t in indegree:
                indegree[t] += 1
    ready = [t for t in nodes if indegree[t] == 0]
    while ready:
        for t in edges.get(ready.pop(), ()):
            if t in indegree:
                indegree[t] -= 1
                if indegree[t] == 0:
                    ready.append(t)
    return {t for t in nodes if indegree[t] > 0}


_NONE = object()


def check(history: History, aborted: Iterable[Any] = ()) -> Result:
    """Every anomaly of the history; `aborted`: values of aborted transactions."""
    result = Result()
    txns = _Transactions(history)
    log, index, committed_index = _version_order(history, result, txns)
    _lost_writes(history, index, result)
    _poll_order(history, index, committed_index, result)
    _send_order(history, result)
    _aborted_reads(history, set(aborted), txns, result)
    _committed_reads(history, log, txns, result)
    _g1c(history, txns, result)
    return result
