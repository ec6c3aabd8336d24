"""Looks for the greatest key strictly below the target (`<`), where INDEX-3 takes a key
equal to the target: a lookup of an entry's own offset lands one entry early."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    found = lo - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) < target:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found
