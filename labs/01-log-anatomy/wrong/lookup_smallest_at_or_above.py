"""Returns the smallest slot whose key is at or above the target (C++'s lower_bound, or
bisect_left), not the greatest at or below it (INDEX-3); lo - 1 if there is none."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    first, found = lo, None
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) >= target:
            found, hi = mid, mid - 1
        else:
            lo = mid + 1
    return first - 1 if found is None else found
