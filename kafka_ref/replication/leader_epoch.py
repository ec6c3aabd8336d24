"""The leader epoch cache: which leader epoch wrote which offsets of a replica's log.

Every time the controller elects a leader for a partition it gives it a new, larger
**leader epoch**. The leader stamps its epoch into every batch it appends (the batch
header's `partitionLeaderEpoch`, outside the CRC), and every replica keeps a small table of
where each epoch starts in its own log (Kafka: `LeaderEpochFileCache`, KIP-101):

    epoch  start offset
    0      0
    2      120          epoch 1 wrote nothing on this replica
    5      130

Epochs and start offsets both strictly increase (REPL-9). The table grows two ways: a
leader adds (its epoch, its log end offset) when it takes over, and a follower adds an
entry when it appends a batch whose epoch is newer than its latest (the batch's base offset
is where that epoch starts on this replica).

The table answers the question at the core of KIP-101: **where does epoch e end?**
(`end_offset_for`, which is what OffsetsForLeaderEpoch returns, TRUNC-4):

* for the latest epoch: the log end offset;
* for an older epoch e: the start offset of the first epoch larger than e, together with the
  largest epoch <= e that the replica knows (KIP-279). A follower that does not know that
  epoch learns it must step back further;
* for an epoch below every known epoch: the start of the first known epoch;
* for an epoch above every known epoch, or when the table is empty: undefined (-1, -1).

Truncating the log truncates the table with it: `truncate_from_end(offset)` drops every
epoch that starts at or after the new log end, `truncate_from_start(offset)` (the log start
moved up) keeps the epoch holding `offset`, now starting there.

On disk it is `<partition dir>/leader-epoch-checkpoint`, Kafka's format:

    0            version
    2            number of entries
    0 0          "epoch start-offset", one line per entry
    2 120

written atomically (write to .tmp, fsync, rename, fsync the directory) after every change,
so it survives any crash. It may then describe offsets the log lost; whoever opens a replica
truncates the cache to the recovered log end (Kafka's `LogLoader` does the same).

Rules: REPL-9, TRUNC-4.
"""

from __future__ import annotations

import bisect
import os
from typing import NamedTuple

from kafka_ref.errors import KafkaStorageError
from kafka_ref.files import write_atomically

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0


class EpochEntry(NamedTuple):
    """One row: `epoch` wrote the offsets from `start_offset` (Kafka: `EpochEntry`)."""

    epoch: int
    start_offset: int


class EpochEndOffset(NamedTuple):
    """The answer to "where does `epoch` end?": (-1, -1) when undefined."""

    epoch: int
    end_offset: int


UNDEFINED = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


class LeaderEpochFileCache:
    """(epoch, start offset) entries of one replica's log, optionally persisted to `path`."""

    def __init__(self, path: str | os.PathLike | None, entries: tuple[EpochEntry, ...] = ()):
        self.path = None if path is None else os.fspath(path)
        self._entries: list[EpochEntry] = list(entries)
        for previous, entry in zip(self._entries, self._entries[1:], strict=False):
            if not (entry.epoch > previous.epoch and entry.start_offset >= previous.start_offset):
                raise ValueError(f"epoch entries must increase: {previous} then {entry}")

    # ------------------------------------------------------------------ files
    @classmethod
    def load(cls, directory: str | os.PathLike) -> LeaderEpochFileCache:
        """Read `<directory>/leader-epoch-checkpoint` (missing: an empty cache)."""
        path = os.path.join(os.fspath(directory), LEADER_EPOCH_CHECKPOINT)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return cls(path)
        try:
            if not lines:
                return cls(path)
            if int(lines[0]) != _VERSION:
                raise ValueError(f"unknown version {lines[0]!r}")
            count = int(lines[1])
            if count != len(lines) - 2:
                raise ValueError(f"declares {count} entries but holds {len(lines) - 2}")
            entries = []
            for line in lines[2:]:
                epoch, offset = line.split(" ")
                entries.append(EpochEntry(int(epoch), int(offset)))
            return cls(path, tuple(entries))
        except (ValueError, IndexError) as err:
            raise KafkaStorageError(f"malformed leader epoch checkpoint {path}: {err}") from None

    def _flush(self) -> None:
        # TRUNC-9: every change keeps epochs increasing and their start offsets in order.
        for previous, entry in zip(self._entries, self._entries[1:], strict=False):
            assert entry.epoch > previous.epoch and entry.start_offset >= previous.start_offset, (
                f"leader epoch cache out of order: {previous} then {entry}"
            )
        if self.path is None:
            return
        lines = [str(_VERSION), str(len(self._entries))]
        lines += [f"{e.epoch} {e.start_offset}" for e in self._entries]
        write_atomically(self.path, ("\n".join(lines) + "\n").encode("utf-8"))

    # ------------------------------------------------------------------ reading
    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch known, or -1 (UNDEFINED_EPOCH) for an empty cache."""
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def start_offset_of(self, epoch: int) -> int | None:
        """Where `epoch` starts on this replica, if it wrote anything here."""
        for entry in self._entries:
            if entry.epoch == epoch:
                return entry.start_offset
        return None

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that wrote `offset` (the last entry starting at or before it), or -1."""
        i = bisect.bisect_right([e.start_offset for e in self._entries], offset) - 1
        return self._entries[i].epoch if i >= 0 else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochEndOffset:
        """OffsetsForLeaderEpoch's answer (Kafka `LeaderEpochFileCache.endOffsetFor`, TRUNC-4).

        Returns (the largest epoch <= requested that this replica knows, the offset where
        the next larger epoch starts), or the log end offset for the latest epoch.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED
        latest = self._entries[-1]
        if requested_epoch == latest.epoch:
            return EpochEndOffset(latest.epoch, log_end_offset)
        epochs = [e.epoch for e in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)  # first epoch > requested
        if higher == len(self._entries):  # newer than anything known
            return UNDEFINED
        end = self._entries[higher].start_offset
        if higher == 0:  # older than anything known: it ended where the first one starts
            return EpochEndOffset(requested_epoch, end)
        return EpochEndOffset(self._entries[higher - 1].epoch, end)

    # ------------------------------------------------------------------ changes
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset` (Kafka `assign`). Returns if changed.

        Nothing changes when the latest entry is the same epoch starting at or before
        `start_offset`. Otherwise entries that would no longer increase (epoch >= `epoch`
        or start >= `start_offset`) are removed first, as Kafka does.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"cannot assign epoch {epoch} at offset {start_offset}")
        if self._entries:
            latest = self._entries[-1]
            if latest.epoch == epoch and latest.start_offset <= start_offset:
                return False
        self._entries = [
            e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset
        ]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to `end_offset`: forget epochs starting at or after it."""
        kept = [e for e in self._entries if e.start_offset < end_offset]
        if len(kept) != len(self._entries):
            self._entries = kept
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: drop older epochs, but the epoch that
        holds `start_offset` stays, starting there."""
        below = [e for e in self._entries if e.start_offset <= start_offset]
        if not below or (len(below) == 1 and below[0].start_offset == start_offset):
            return
        holder = EpochEntry(below[-1].epoch, start_offset)
        self._entries = [holder] + [e for e in self._entries if e.start_offset > start_offset]
        self._flush()

    def clear(self) -> None:
        if self._entries:
            self._entries = []
            self._flush()

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({[tuple(e) for e in self._entries]})"
