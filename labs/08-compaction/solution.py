"""Lab 08, compaction: your cleaner's offset map and its rule for keeping a record.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 08

Every function here takes the place of kafka-ref's own, of the same name, whenever
KAFKA_REF_SOLUTION names this file (the grader sets it for you): `build_offset_map` in
kafka_ref/log/offset_map.py and `should_retain` in kafka_ref/log/cleaner.py. The log cleaner
calls both in every round, in a test's log and in a real broker's background loop alike.
From kafka_ref you may import anything but the modules that hold these functions (beyond the
names this file imports from them): `kafka-ref lab check` refuses a solution that reaches
kafka-ref's own code of them (LAB-5).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MappedBatch = tuple[int, Sequence[tuple[int, "bytes | None"]]]
"""One batch as the map sees it: (last offset, [(offset, key), ...])."""


def build_offset_map(
    batches: Iterable[MappedBatch], start: int, max_keys: int
) -> tuple[dict[bytes, int], int]:
    """The cleaner's offset map over the dirty section (Kafka `Cleaner.buildOffsetMap`;
    COMPACT-1, COMPACT-5).

    `batches`: the dirty section's batches in offset order, from the one holding `start`,
    each `(last_offset, records)` with `records` the batch's `(offset, key)` pairs in order
    (a transaction marker's batch has no records). Returns `(offsets, latest)`:

    - `offsets[key]` is the offset of the key's last record at or after `start` (a record
      before `start` is already clean; a record with no key (None) is not mapped);
    - `latest` is the last offset the map covers, -1 if it covers nothing: after each whole
      batch, that batch's last offset (so the gaps a batch may have, and markers, are covered).

    The map holds at most `max_keys` keys. Before mapping each keyed record, if the map
    already holds `max_keys` keys, stop at once (even if that key is mapped already, as
    Kafka does) and return what was mapped, with `latest` the offset of the last record
    mapped: the round cleans only up to there, the rest waits for the next round. Read
    `batches` lazily, one at a time: a full map must not read the rest of the log.
    """
    raise NotImplementedError


def should_retain(
    offset: int,
    key: bytes | None,
    is_tombstone: bool,
    latest: int,
    map_end: int,
    delete_horizon: int | None,
    now: int,
) -> bool:
    """Does the cleaner keep this record? (Kafka `Cleaner.shouldRetainRecord`; COMPACT-1,
    COMPACT-5, COMPACT-6, COMPACT-9.)

    `offset`, `key`, `is_tombstone` (its value is null): the record. `latest`: the offset
    map's entry for `key`, the offset of the key's latest record, -1 if the key is not in
    the map. `map_end`: the last offset the map covers (`latest` of `build_offset_map`).
    `delete_horizon`: the delete horizon (KIP-534) stamped on the record's batch by an
    earlier round, None if none has been. `now`: the cleaner's clock, in ms.

    1. A record past `map_end` is kept: this round did not look at it.
    2. Otherwise a record without a key is dropped: it cannot be compacted.
    3. A record that a later record of its key supersedes (its offset is below `latest`)
       is dropped.
    4. The key's latest record is kept, unless it is a tombstone whose delete horizon has
       come (`now >= delete_horizon`): then the key is gone for good.
    """
    raise NotImplementedError
