"""Judges a tombstone by its horizon before asking whether a later record supersedes it: a
superseded tombstone stays until its horizon (COMPACT-1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MappedBatch = tuple[int, Sequence[tuple[int, "bytes | None"]]]


def build_offset_map(
    batches: Iterable[MappedBatch], start: int, max_keys: int
) -> tuple[dict[bytes, int], int]:
    offsets: dict[bytes, int] = {}
    covered = -1  # the last offset the map covers
    for last_offset, records in batches:
        for offset, key in records:
            if key is None or offset < start:
                continue
            if len(offsets) >= max_keys:
                return offsets, covered
            offsets[key] = offset
            covered = offset
        covered = last_offset
    return offsets, covered


def should_retain(
    offset: int,
    key: bytes | None,
    is_tombstone: bool,
    latest: int,
    map_end: int,
    delete_horizon: int | None,
    now: int,
) -> bool:
    if offset > map_end:
        return True
    if key is None:
        return False
    if is_tombstone:
        return not (delete_horizon is not None and now >= delete_horizon)
    return offset >= latest
