"""Finds the right slot by a scan from lo, one read per slot: correct answers, but a
lookup in a large index reads thousands of slots where a binary search reads about 17."""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    return bytes_since_last_entry > index_interval_bytes


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    found = lo - 1
    for slot in range(lo, hi + 1):
        if key_at(slot) > target:
            break
        found = slot
    return found
