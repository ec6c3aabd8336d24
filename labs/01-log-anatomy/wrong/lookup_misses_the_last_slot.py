"""A `while lo < hi` search that never reads slot hi: right while the answer is below the
last slot, one slot short when the target is at or past the last key (INDEX-3)."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    while lo < hi:
        mid = (lo + hi) // 2
        if key_at(mid) <= target:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1
