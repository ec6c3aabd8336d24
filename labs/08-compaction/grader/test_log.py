"""Lab 08 grader, compaction of a whole log: your two rules inside kafka-ref's cleaner.

Random keyed logs with tombstones are written to a real log (kafka_ref/log/log.py) cut into
small segments, and kafka-ref's cleaner (cleaner_manager.py, cleaner.py) compacts them,
calling your `build_offset_map` and `should_retain`. The checks are the guarantees of
Kafka's "Log Compaction" documentation: every key's latest value survives (COMPACT-11), at
its own offset, in order (COMPACT-2); superseded records go (COMPACT-1); tombstones stay
until their delete horizon, then go (COMPACT-6).
"""

from __future__ import annotations

import os
import tempfile
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.log.cleaner_manager import LogCleaner
from kafka_ref.log.log import Log
from kafka_ref.record.batch import RecordBatch, build_batch
from kafka_ref.record.record import Record

T0 = 1_700_000_000_000
HORIZON_MS = 1000
KEYS = [b"k%d" % i for i in range(6)]
records = st.tuples(st.sampled_from(KEYS), st.none() | st.binary(min_size=1, max_size=8))
keyed_logs = st.lists(st.lists(records, min_size=1, max_size=6), min_size=1, max_size=12)


@pytest.fixture(scope="module", autouse=True)
def no_fsync():
    """Each log lives for one example and no test here crashes the machine: fsync would
    only cost time (each example rolls many small segments), never change an outcome."""
    with mock.patch.object(os, "fsync", lambda fd: None):
        yield


def new_log(directory: str, clock: ManualClock) -> Log:
    config = LogConfig(
        cleanup_policy=("compact",), segment_bytes=400, delete_retention_ms=HORIZON_MS
    )
    return Log.open(os.path.join(directory, "compacted-0"), config, clock)


def append(log: Log, clock: ManualClock, batch) -> None:
    now = clock.milliseconds()
    log.append(build_batch([Record(k, v, timestamp=now) for k, v in batch]))


def contents(log: Log) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record, by chained reads from the log start."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20)
        data = info.read_bytes()
        position = 0
        while position < len(data):
            batch = RecordBatch(data[position:])
            out += [(r.offset, r.key, r.value) for r in batch.records()]
            position += batch.header.size
        offset = info.next_offset
    return out


def fold(rows) -> dict:
    """What a consumer that applies the log in order ends with (a tombstone deletes)."""
    state = {}
    for _, key, value in rows:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


def round_at(log: Log, clock: ManualClock, now: int, filler: bytes = b"filler") -> None:
    """New dirty data (a key of its own), the active segment rolled, and a cleaning round."""
    clock.set(now)
    append(log, clock, [(filler, b"x")])
    log.roll()
    LogCleaner().clean(log, now, force=True)


@pytest.mark.spec("COMPACT-11", "COMPACT-2", "COMPACT-1")
@settings(max_examples=100)
@given(batches=keyed_logs)
def test_every_keys_latest_record_survives_at_its_offset(batches):
    with tempfile.TemporaryDirectory() as directory:
        clock = ManualClock(T0)
        log = new_log(directory, clock)
        for batch in batches:
            append(log, clock, batch)
        before = contents(log)
        round_at(log, clock, T0)
        after = contents(log)
        written = {offset: (key, value) for offset, key, value in before}
        offsets = [offset for offset, _, _ in after]
        assert offsets == sorted(offsets), "records stay in offset order (COMPACT-2)"
        kept = {o: (k, v) for o, k, v in after if o in written}
        assert all(written[o] == kv for o, kv in kept.items()), "a record changed its offset"
        assert fold(after) == fold([*before, (None, b"filler", b"x")]), "COMPACT-11"
        latest = {key: offset for offset, key, _ in before}
        for offset, key, _ in after:
            if offset in written:  # cleaned part: only each key's latest record is left
                assert offset == latest[key], f"offset {offset} of {key!r} is superseded"
        for key, offset in latest.items():
            assert offset in kept, f"the latest record of {key!r} (offset {offset}) is gone"


@pytest.mark.spec("COMPACT-6")
@settings(max_examples=100)
@given(batches=keyed_logs)
def test_tombstones_stay_until_their_delete_horizon_then_go(batches):
    with tempfile.TemporaryDirectory() as directory:
        clock = ManualClock(T0)
        log = new_log(directory, clock)
        for batch in batches:
            append(log, clock, batch)
        latest = {key: (offset, value) for offset, key, value in contents(log)}
        deleted = {key for key, (_, value) in latest.items() if value is None}
        round_at(log, clock, T0)  # stamps the horizon: T0 + delete.retention.ms
        round_at(log, clock, T0 + HORIZON_MS - 1)
        present = {key: value for _, key, value in contents(log)}
        for key in deleted:
            assert key in present and present[key] is None, (
                f"the tombstone of {key!r} went before its delete horizon"
            )
        round_at(log, clock, T0 + HORIZON_MS)
        keys = {key for _, key, _ in contents(log)}
        assert not deleted & keys, f"tombstones past their horizon remain: {deleted & keys}"
        assert set(latest) - deleted <= keys, "a live key went with the tombstones"
