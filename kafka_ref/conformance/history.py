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

"Right after" is measured in the *dense index* of the partition: its offsets with a known
value, in order, so that gaps in offsets (compaction, transaction markers) are not skips.
Keys here are partitions: any hashable name such as ("topic", 0).

    h = History()
    h.send("p1", k, b"v1", offset=0)          # acknowledged at offset 0
    h.send("p1", k, b"v2", offset=None)       # outcome unknown (a timeout)
    h.poll("c1", {k: [(0, b"v1")]})
    assert check(h).valid
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

ACKED, UNKNOWN, FAILED = "ok", "info", "fail"


@dataclass(frozen=True)
class Send:
    process: Hashable
    key: Hashable
    value: Any
    offset: int | None  # the acknowledged offset, None when unknown
    status: str  # ok (acknowledged), info (unknown outcome) or fail (definitely not written)


@dataclass(frozen=True)
class Poll:
    process: Hashable
    reads: dict[Hashable, list[tuple[int, Any]]]


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
        self.ops: list[Send | Poll | Assign] = []

    def send(self, process, key, value, offset: int | None = None, status: str | None = None):
        status = status or (ACKED if offset is not None else UNKNOWN)
        self.ops.append(Send(process, key, value, offset, status))

    def poll(self, process, reads: dict[Hashable, Iterable[tuple[int, Any]]]) -> None:
        self.ops.append(Poll(process, {k: list(v) for k, v in reads.items()}))

    def assign(self, process, keys: Iterable[Hashable]) -> None:
        """The consumer's assignment changed or it seeked: its poll order starts afresh."""
        self.ops.append(Assign(process, frozenset(keys)))


def _must_have_happened(op: Send, read_values: set) -> bool:
    """Acknowledged, or of unknown outcome but read by someone (Jepsen's must_have_committed)."""
    return op.status == ACKED or (op.status == UNKNOWN and (op.key, op.value) in read_values)


def _version_order(history: History, result: Result):
    """Per key: offset -> values seen there, and the dense index of each value."""
    log: dict[Hashable, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    read_values = {(k, v) for op in history.ops if isinstance(op, Poll)
                   for k, pairs in op.reads.items() for _, v in pairs}  # fmt: skip
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
                result.anomalies["duplicate"].append({"key": key, "value": value,
                                                      "offsets": offs})  # fmt: skip
        index[key] = by_value
    return log, index


def _lost_writes(history: History, index, result: Result) -> None:
    read: dict[Hashable, set] = defaultdict(set)
    for op in history.ops:
        if isinstance(op, Poll):
            for key, pairs in op.reads.items():
                read[key].update(v for _, v in pairs)
    acked = [op for op in history.ops if isinstance(op, Send) and op.status == ACKED]
    for key in {op.key for op in acked}:
        by_value = index.get(key, {})
        bound = max((by_value[v] for v in read[key] if v in by_value), default=-1)
        for op in acked:
            if op.key != key or op.value in read[key]:
                continue
            result.unseen.setdefault(key, set()).add(op.value)
            if by_value.get(op.value, bound + 1) <= bound:  # HIST-3
                result.anomalies["lost-write"].append({"key": key, "value": op.value,
                                                       "offset": op.offset})  # fmt: skip


def _poll_order(history: History, index, result: Result) -> None:
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
            by_value = index.get(key, {})
            for _, value in pairs:
                prev = last[op.process].get(key, _NONE)
                if prev is not _NONE and prev in by_value and value in by_value:
                    delta = by_value[value] - by_value[prev]
                    if delta != 1:  # HIST-4
                        kind = "poll-skip" if delta > 1 else "nonmonotonic-poll"
                        result.anomalies[kind].append({"process": op.process, "key": key,
                                                       "after": prev, "got": value})  # fmt: skip
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


def _aborted_reads(history: History, aborted: set, result: Result) -> None:
    failed = {(op.key, op.value) for op in history.ops
              if isinstance(op, Send) and op.status == FAILED}  # fmt: skip
    for op in history.ops:
        if isinstance(op, Poll):
            for key, pairs in op.reads.items():
                for offset, value in pairs:
                    if value in aborted or (key, value) in failed:  # HIST-6
                        result.anomalies["aborted-read"].append(
                            {"process": op.process, "key": key, "offset": offset,
                             "value": value})  # fmt: skip


_NONE = object()


def check(history: History, aborted: Iterable[Any] = ()) -> Result:
    """Every anomaly of the history; `aborted`: values of aborted transactions."""
    result = Result()
    _log, index = _version_order(history, result)
    _lost_writes(history, index, result)
    _poll_order(history, index, result)
    _send_order(history, result)
    _aborted_reads(history, set(aborted), result)
    return result
