"""Searches from slot 0 whatever lo is: it reads slots outside lo..hi and can answer a slot
below lo, where the contract keeps the search, and the answer, within lo..hi (or lo - 1)."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    low, found = 0, -1
    while low <= hi:
        mid = (low + hi) // 2
        if key_at(mid) <= target:
            found, low = mid, mid + 1
        else:
            hi = mid - 1
    return max(found, lo - 1)
