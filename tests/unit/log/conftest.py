"""Shared helpers for the storage-engine tests (spec/log.md, spec/indexes.md, spec/durability.md).

Tests import the plain functions with `from tests.unit.log.conftest import ...`; hypothesis
tests make their own temporary directories (function-scoped fixtures do not mix with
@given).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable

import pytest

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log, NoProducerState, ProducerStateHooks
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.record.batch import BatchHeader, build_batch, iter_batch_headers
from kafka_ref.record.record import Record

T0 = 1_700_000_000_000


def make_batch(
    count: int = 1, *, ts: int = T0, value_size: int = 10, base_offset: int = 0, step: int = 1
) -> bytes:
    """A producer batch of `count` records with timestamps ts, ts+step, ..."""
    records = [Record(b"k%d" % i, b"v" * value_size, timestamp=ts + i * step) for i in range(count)]
    return build_batch(records, base_offset=base_offset)


def headers(data: bytes) -> list[BatchHeader]:
    return [h for _, h in iter_batch_headers(data)]


def open_log(
    path,
    clock: ManualClock | None = None,
    *,
    producer_state: Callable[[str], ProducerStateHooks] = NoProducerState,
    **config,
) -> Log:
    return Log.open(
        path, LogConfig(**config), clock or ManualClock(T0), producer_state=producer_state
    )


def open_broker_log(path, clock: ManualClock | None = None, **config) -> Log:
    """A log as a broker opens it: with its producer state, for idempotence and
    transactions (LOG-19)."""
    return open_log(path, clock, producer_state=ProducerStateManager, **config)


def read_everything(log: Log, max_bytes: int = 1 << 20) -> list[tuple[BatchHeader, bytes]]:
    """Every batch from the log start to the end, by chained reads (LOG-4's consumer)."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, max_bytes)
        assert info.slices, f"no progress at {offset}"
        data = info.read_bytes()
        for pos, header in iter_batch_headers(data):
            out.append((header, data[pos : pos + header.size]))
        assert info.next_offset > offset
        offset = info.next_offset
    return out


def segment_files(path) -> list[str]:
    return sorted(n for n in os.listdir(path) if n[:20].isdigit())


@contextlib.contextmanager
def temp_dir():
    with tempfile.TemporaryDirectory(prefix="kafka-ref-log-") as d:
        yield d


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)
