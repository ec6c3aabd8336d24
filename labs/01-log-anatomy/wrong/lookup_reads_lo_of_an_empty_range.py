"""Checks the first slot before the range is known not to be empty: on an empty range
(hi = lo - 1) it reads slot lo, outside lo..hi, and may answer lo (INDEX-3)."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    if key_at(lo) > target:
        return lo - 1
    found = lo
    lo += 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) <= target:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found
