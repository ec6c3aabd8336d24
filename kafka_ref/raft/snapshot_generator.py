"""When the application writes a snapshot (Kafka: `SnapshotGenerator`, a publisher of the
metadata image).

A snapshot is the application's state, so the application writes it, not the quorum: the
quorum keeps the file and cuts its log behind it (replicated_log.py). The application
counts the bytes of the committed batches it has been told since its last snapshot; once
they reach `max_bytes_between_snapshots`, or once `max_snapshot_interval_ms` has passed and
something was committed meanwhile, it is time (`should_snapshot`). The snapshot is then
taken of the state it has applied, at the offset it has been told up to: an offset below
the high watermark, as every record the listener hears is committed (RAFT-21).

Rules: RAFT-21.
"""

from __future__ import annotations


class SnapshotGenerator:
    """Counts what was committed since the last snapshot, and says when to write one."""

    def __init__(self, max_bytes_between_snapshots: int, max_interval_ms: int, now_ms: int) -> None:
        self.max_bytes = max_bytes_between_snapshots
        self.max_interval_ms = max_interval_ms
        self.bytes_since_snapshot = 0
        self.last_snapshot_ms = now_ms

    def record_batch(self, size_bytes: int) -> None:
        """The application was told a committed batch of `size_bytes` bytes."""
        self.bytes_since_snapshot += size_bytes

    def should_snapshot(self, now_ms: int) -> bool:
        if self.bytes_since_snapshot >= self.max_bytes:
            return True
        waited = now_ms - self.last_snapshot_ms >= self.max_interval_ms
        return waited and self.bytes_since_snapshot > 0

    def snapshot_written(self, now_ms: int) -> None:
        self.bytes_since_snapshot = 0
        self.last_snapshot_ms = now_ms
