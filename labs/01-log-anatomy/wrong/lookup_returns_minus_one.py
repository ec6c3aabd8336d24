"""Returns -1 when no key in lo..hi is at or below the target, where the contract asks for
lo - 1 (INDEX-3): right for a search of the whole index, wrong for a part of it."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    found = -1
    while lo <= hi:
        mid = (lo + hi) // 2
        if key_at(mid) <= target:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found
