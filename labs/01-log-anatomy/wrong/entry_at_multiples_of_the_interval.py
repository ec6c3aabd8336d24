"""Misreads the rule as "every index.interval.bytes": an entry when the bytes since the last
entry are a whole multiple of the interval, not whenever they exceed it (INDEX-4)."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    if index_interval_bytes == 0:
        return bytes_since_last_entry > 0
    return bytes_since_last_entry > 0 and bytes_since_last_entry % index_interval_bytes == 0


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    found = lo - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) <= target:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found
