"""Faults on disk: what a crash leaves of a broker's logs.

Appends go to the operating system's page cache; only `fsync` (the log's `flush`, which
advances its **recovery point**) puts them on disk. So two crashes differ:

* **kill -9** (`lose_unflushed=False`): the process dies, the machine does not. Everything
  written survives, but nothing was closed cleanly: no clean-shutdown marker, stale
  checkpoints, indexes not trimmed. The next start runs recovery.
* **power loss** (`lose_unflushed=True`): what was not fsynced is gone. `crash_log` cuts
  each log back to its recovery point: the segment holding it is truncated there and the
  later segments vanish. With `torn_bytes` some bytes of the lost tail survive, as a partial
  page write would leave them; recovery then finds a torn batch and truncates it (DUR-2).

Checkpoint files (leader epochs, high watermarks, recovery points) are written atomically
with fsync, so they survive either crash, possibly describing more than the log now holds.

`crash_log` leaves the files as the crash would; reopening them (`Log.open` with
`clean_shutdown=False`) is the restart.
"""

from __future__ import annotations

import os

from kafka_ref.log.log import Log


def crash_log(log: Log, *, lose_unflushed: bool, torn_bytes: int = 0) -> int:
    """Drop `log` as a crash would; returns how many bytes were lost."""
    cut_segment, cut_position, later = None, 0, []
    if lose_unflushed and log.recovery_point < log.log_end_offset:
        cut_segment = log.segment_for(log.recovery_point) or log.segments[0]
        found = cut_segment.translate_offset(log.recovery_point)
        cut_position = found.position if found is not None else cut_segment.size
        later = [s for s in log.segments if s.base_offset > cut_segment.base_offset]
    for segment in log.segments:  # the process dies: no trim, no flush, no snapshot
        segment.offset_index.close_handler()
        segment.time_index.close_handler()
        segment.log.close()
    if cut_segment is None:
        return 0
    lost = 0
    keep = min(cut_position + max(torn_bytes, 0), cut_segment.size)
    lost += cut_segment.size - keep
    os.truncate(cut_segment.log.path, keep)
    for segment in later:  # never fsynced: neither the data nor the directory entry
        lost += segment.size
        os.unlink(segment.log.path)
    return lost
