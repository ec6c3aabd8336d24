"""Producer state plugs into the log (LOG-19): the log calls the `ProducerStateHooks` it was
opened with where its batches change, and a plain log keeps no producer state at all."""

from __future__ import annotations

import os

import pytest

from kafka_ref.clock import ManualClock
from kafka_ref.log.log import NoProducerState
from kafka_ref.log.txn_index import TXN_INDEX_SUFFIX
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.record.batch import build_batch
from kafka_ref.record.control import ControlRecordType, EndTransactionMarker, build_marker_batch
from kafka_ref.record.record import Record
from tests.unit.log.conftest import T0, make_batch, open_broker_log, open_log

pytestmark = pytest.mark.timeout(120)


def idempotent_batch(sequence: int = 0) -> bytes:
    return build_batch(
        [Record(None, b"v", T0)], producer_id=7, producer_epoch=0, base_sequence=sequence
    )


@pytest.mark.spec("LOG-19")
def test_a_plain_log_writes_a_retry_again_and_a_brokers_log_answers_it(tmp_path):
    plain, broker = open_log(tmp_path / "plain-0"), open_broker_log(tmp_path / "broker-0")
    for log in (plain, broker):
        assert log.append(idempotent_batch()).first_offset == 0
    assert plain.append(idempotent_batch()).first_offset == 1  # written twice
    retry = broker.append(idempotent_batch())
    assert (retry.first_offset, retry.record_count) == (0, 0)  # the original offset, nothing
    assert (plain.log_end_offset, broker.log_end_offset) == (2, 1)


@pytest.mark.spec("LOG-19")
def test_only_a_log_with_producer_state_keeps_snapshots_and_txnindex_files(tmp_path):
    abort = EndTransactionMarker(ControlRecordType.ABORT, 0)
    data = build_batch(
        [Record(None, b"v", T0)],
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    kinds = {}
    for name, log in (
        ("plain", open_log(tmp_path / "plain-0")),
        ("broker", open_broker_log(tmp_path / "broker-0")),
    ):
        log.append(data)
        log.append(build_marker_batch(7, 0, abort, T0), origin=AppendOrigin.COORDINATOR)
        log.roll()
        log.close()
        kinds[name] = {os.path.splitext(n)[1] for n in os.listdir(log.dir)}
    assert kinds["plain"] == {".log", ".index", ".timeindex"}
    assert kinds["broker"] == {".log", ".index", ".timeindex", ".snapshot", TXN_INDEX_SUFFIX}


class Recording(NoProducerState):
    """A producer state that keeps nothing and notes each call, with the log end then."""

    def __init__(self, directory: str) -> None:
        super().__init__(directory)
        self.calls: list[tuple] = []

    def load(self, log, now, rebuilt_from):
        self.log = log
        self.calls.append(("load", log.log_end_offset))

    def prepare_append(self, records, info, now, origin):
        self.calls.append(("prepare", self.log.log_end_offset, info.first_offset, origin))
        return super().prepare_append(records, info, now, origin)

    def complete_append(self, prepared, segment, log_end_offset):
        self.calls.append(("complete", log_end_offset, segment.base_offset))

    def on_roll(self, log):
        self.calls.append(("roll", log.active_segment.base_offset))

    def truncate_and_reload(self, log, now):
        self.calls.append(("truncate", log.log_end_offset))

    def delete_snapshots_before(self, offset):
        self.calls.append(("delete", offset))

    def take_snapshot(self, offset):
        self.calls.append(("snapshot", offset))


@pytest.mark.spec("LOG-19")
def test_the_log_calls_its_producer_state_where_its_batches_change(tmp_path):
    log = open_log(tmp_path / "t-0", ManualClock(T0), producer_state=Recording)
    state = log.producer_state
    log.append(make_batch(2))  # 0, 1: checked before the write, taken in after it
    log.roll()
    log.append(make_batch(1))  # 2
    log.truncate_to(2)
    log.delete_segments(log.segments[:1])
    log.close()
    client = AppendOrigin.CLIENT
    assert state.calls == [
        ("load", 0),
        ("prepare", 0, 0, client),
        ("complete", 2, 0),
        ("roll", 2),
        ("prepare", 2, 2, client),
        ("complete", 3, 2),
        ("truncate", 2),
        ("delete", 2),
        ("snapshot", 2),
    ]
