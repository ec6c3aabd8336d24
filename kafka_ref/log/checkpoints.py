"""Checkpoint files: small text files that remember one offset per partition, atomically.

A broker must remember a few offsets per partition across restarts, and Kafka keeps each
kind in one text file at the root of the data directory (Kafka's `OffsetCheckpointFile`):

    recovery-point-offset-checkpoint   below this offset, the log is known to be on disk
    log-start-offset-checkpoint        the first offset that still exists (DeleteRecords)
    replication-offset-checkpoint      each partition's high watermark (replication)

The format (DUR-7) is a version line, an entry count, and one line per partition:

    0
    2
    orders 0 1500
    orders 1 1488

Writing must never leave a half-written file, because a reader would then trust garbage or
lose every offset. So a checkpoint is written to `<name>.tmp`, fsynced, renamed over the
old file (rename is atomic within a file system), and then the *directory* is fsynced so
that the rename itself survives a crash. A reader sees the old file or the new one, never a
mix. A file that does not parse raises `CheckpointError` (DUR-8); a missing or empty file
means "no entries", as in Kafka.

Rules: DUR-7, DUR-8.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from kafka_ref.common import TopicPartition
from kafka_ref.errors import KafkaStorageError
from kafka_ref.files import write_atomically

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CURRENT_VERSION = 0

_INTEGER = re.compile(r"-?[0-9]+")


class CheckpointError(KafkaStorageError):
    """A checkpoint file is malformed (Kafka: IOException "Malformed line in checkpoint")."""


class OffsetCheckpointFile:
    """One checkpoint file of (topic, partition) -> offset."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        lines = [str(CURRENT_VERSION), str(len(offsets))]
        for (topic, partition), offset in sorted(offsets.items()):
            if not topic or any(c.isspace() for c in topic):
                raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint")
            lines.append(f"{topic} {partition} {offset}")
        write_atomically(self.path, ("\n".join(lines) + "\n").encode("utf-8"))

    def read(self) -> dict[TopicPartition, int]:
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return {}
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self._malformed("is not UTF-8 text") from None
        lines = text.splitlines()
        if not lines:
            return {}
        version = self._int(lines[0], "version")
        if version != CURRENT_VERSION:
            raise self._malformed(f"has unrecognized version {version}")
        if len(lines) < 2:
            raise self._malformed("has no entry count")
        expected = self._int(lines[1], "entry count")
        entries = lines[2:]
        if expected < 0 or len(entries) != expected:
            raise self._malformed(f"declares {expected} entries but holds {len(entries)}")
        offsets: dict[TopicPartition, int] = {}
        for line in entries:
            fields = line.split(" ")
            if len(fields) != 3 or not fields[0]:
                raise self._malformed(f"has a malformed line {line!r}")
            partition = self._int(fields[1], "partition")
            if partition < 0:
                raise self._malformed(f"has a negative partition in {line!r}")
            offsets[(fields[0], partition)] = self._int(fields[2], "offset")
        return offsets

    def _int(self, text: str, what: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise self._malformed(f"has a malformed {what} {text!r}")
        return int(text)

    def _malformed(self, why: str) -> CheckpointError:
        return CheckpointError(f"checkpoint file {self.path} {why}")
