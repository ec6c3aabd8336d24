"""Transactional id expiration (TXN-81), on the coordinator harness and its manual clock."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.txn import transaction_log as tlog
from kafka_ref.txn.expiration import DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS as EXPIRY
from kafka_ref.txn.transaction_metadata import TransactionState as S
from tests.unit.txn.harness import OK, Harness
from tests.unit.txn.test_coordinator import init_ok


def commit_one(h: Harness, tid: str, pid: int, epoch: int) -> None:
    h.add(tid, pid, epoch, ("t", 0))
    h.settle()
    answers = h.end(tid, pid, epoch, True)
    h.settle()
    assert answers == [OK]
    assert h.durable(tid).state == S.COMPLETE_COMMIT


@pytest.mark.spec("TXN-81")
def test_an_idle_id_is_removed_with_a_tombstone_and_stays_removed():
    h = Harness()
    pid, epoch = init_ok(h, "idle")
    commit_one(h, "idle", pid, epoch)
    h.clock.advance(EXPIRY - 1)
    assert h.coordinator.remove_expired_transactional_ids() == []
    h.clock.advance(1)
    assert h.coordinator.remove_expired_transactional_ids() == ["idle"]
    # The tombstone is not durable yet: the id is still there, busy.
    assert h.coordinator.describe("idle")[1].pending_state == S.DEAD
    assert h.init("idle") == [(ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)]
    h.complete_append()
    assert h.coordinator.describe("idle") == (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)
    partition = h.coordinator.partition_for("idle")
    assert h.log[partition][-1] == (tlog.key_bytes("idle"), None)
    h.elect(partition)  # a reload replays the tombstone: the id does not come back
    assert h.coordinator.describe("idle") == (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)
    new_pid, new_epoch = init_ok(h, "idle")  # used again: a fresh start
    assert new_pid != pid and new_epoch == 0


@pytest.mark.spec("TXN-81")
def test_open_transactions_and_recently_used_ids_do_not_expire():
    h = Harness()
    pid, epoch = init_ok(h, "open")
    h.add("open", pid, epoch, ("t", 0))
    h.settle()
    recent_pid, _ = init_ok(h, "recent")
    h.clock.advance(EXPIRY)
    init_ok(h, "recent")  # updated now
    assert h.coordinator.remove_expired_transactional_ids() == []
    assert h.coordinator.describe("open")[1].state == S.ONGOING
    assert h.coordinator.describe("recent")[1].producer_id == recent_pid


@pytest.mark.spec("TXN-81")
def test_a_failed_tombstone_write_keeps_the_id():
    h = Harness()
    pid, epoch = init_ok(h, "kept")
    h.clock.advance(EXPIRY)
    assert h.coordinator.remove_expired_transactional_ids() == ["kept"]
    h.complete_append(error=ErrorCode.NOT_ENOUGH_REPLICAS)
    meta = h.coordinator.describe("kept")[1]
    assert meta.pending_state is None and meta.state == S.EMPTY
    answers = h.init("kept")  # usable again: InitProducerId bumps the same producer id
    h.settle()
    assert answers == [(OK, pid, epoch + 1)]
