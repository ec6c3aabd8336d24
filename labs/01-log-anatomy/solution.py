"""Lab 01, the log's anatomy: your sparse offset index.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 01

Each function takes the place of kafka-ref's own of the same name in
kafka_ref/log/offset_index.py whenever KAFKA_REF_SOLUTION names this file (the grader sets
it): every segment that kafka-ref appends to, recovers or reads then uses your rule and your
search, and so does a broker started with that setting.
"""

from __future__ import annotations

from collections.abc import Callable


def needs_index_entry(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    """The index-entry rule (INDEX-4): should the batch being appended get an index entry?

    `bytes_since_last_entry` counts the bytes appended to the segment since the batch that
    got the last entry, that batch included (or since the segment's start, when it has no
    entry yet); it does not count the batch being appended now. An entry is due when more
    than `index_interval_bytes` (the topic's `index.interval.bytes`) were appended.
    """
    raise NotImplementedError


def largest_lower_bound(key_at: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    """The index lookup (INDEX-3): the greatest slot in lo..hi whose key is <= `target`.

    `key_at(slot)` reads the key of one slot of the index file: the entry's offset relative
    to the segment's base offset. Keys strictly increase with slots (INDEX-2). Return lo - 1
    when every key in lo..hi is above `target`, or when the range is empty (hi = lo - 1).

    Read as few slots as you can: the index is a file, and every `key_at` may touch a page.
    A binary search reads about log2(n) of them; the grader counts your calls of `key_at`
    and allows 20 for 65,536 entries. Read no slot outside lo..hi.
    """
    raise NotImplementedError
