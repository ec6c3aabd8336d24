"""On a full map returns the offset of the last record mapped, forgetting that the last whole
batch read (its gaps, a marker after it) is covered too (COMPACT-5).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MappedBatch = tuple[int, Sequence[tuple[int, "bytes | None"]]]


def build_offset_map(
    batches: Iterable[MappedBatch], start: int, max_keys: int
) -> tuple[dict[bytes, int], int]:
    offsets: dict[bytes, int] = {}
    covered = -1
    last_mapped = -1
    for last_offset, records in batches:
        for offset, key in records:
            if key is None or offset < start:
                continue
            if len(offsets) >= max_keys:
                return offsets, last_mapped
            offsets[key] = offset
            last_mapped = offset
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
    if offset < latest:
        return False
    expired = delete_horizon is not None and now >= delete_horizon
    return not (is_tombstone and expired)
