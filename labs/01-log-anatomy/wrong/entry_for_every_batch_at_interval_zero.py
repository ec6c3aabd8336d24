"""Reads the hint "with index.interval.bytes 0 every batch gets an entry" too literally:
a segment's first batch gets an entry too, where INDEX-4 gives it none."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    if index_interval_bytes == 0:
        return True
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    found = lo - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) <= target:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found
