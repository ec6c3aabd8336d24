"""A binary search that calls key_at twice per step (once for `==`, once for `<`): correct
answers, but twice the reads the contract allows, about 34 for 65,536 entries."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    found = lo - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) == target:
            return mid
        if key_at(mid) < target:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found
