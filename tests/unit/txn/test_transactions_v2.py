"""The transaction coordinator under transactions v2 (KIP-890 part 2, spec/transactions.md):
EndTxn's epoch bump and how its retries are told apart, the client's transaction version
kept in `__transaction_state`, and the move to a new producer id at the last epoch."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.txn import transaction_log as tlog
from kafka_ref.txn.transaction_metadata import MAX_PRODUCER_EPOCH
from kafka_ref.txn.transaction_metadata import TransactionState as S
from tests.unit.txn.harness import OK, Harness
from tests.unit.txn.test_coordinator import init_ok

TID = "app-1"
CONCURRENT = ErrorCode.CONCURRENT_TRANSACTIONS
NO = (-1, -1)


def open_v2(h: Harness, *parts: tuple[str, int]) -> tuple[int, int]:
    """A producer whose transaction has `parts`, added by their leaders (TXN-95)."""
    pid, epoch = init_ok(h, TID)
    assert h.add_v2(TID, pid, epoch, *parts) == []
    h.complete_append()
    meta = h.coordinator.describe(TID)[1]
    assert (meta.state, meta.client_transaction_version) == (S.ONGOING, 2)
    return pid, epoch


@pytest.mark.spec("TXN-92")
def test_end_txn_v5_bumps_the_epoch_and_the_markers_carry_it():
    h = Harness()
    pid, epoch = open_v2(h, ("t", 0), ("u", 1))
    answers = h.end_v2(TID, pid, epoch, commit=True)
    assert answers == [] and h.sent == []  # nothing before the decision is durable
    h.complete_append()
    assert answers == [(OK, pid, epoch + 1)]
    decided = h.durable(TID)
    assert (decided.state, decided.producer_epoch) == (S.PREPARE_COMMIT, epoch + 1)
    (request,) = h.sent
    assert (request.producer_epoch, request.transaction_version) == (epoch + 1, 2)
    # while the markers are written, a retry (the epoch before the bump) waits
    assert h.end_v2(TID, pid, epoch, True) == [(CONCURRENT, *NO)]
    assert h.end_v2(TID, pid, epoch, False) == [(ErrorCode.INVALID_TXN_STATE, *NO)]
    h.settle()
    assert h.durable(TID).state == S.COMPLETE_COMMIT
    # once complete, the retry is answered with the current id and epoch
    assert h.end_v2(TID, pid, epoch, True) == [(OK, pid, epoch + 1)]
    assert h.end_v2(TID, pid, epoch, False) == [(ErrorCode.INVALID_TXN_STATE, *NO)]
    assert h.end_v2(TID, pid, epoch - 1, True) == [(ErrorCode.PRODUCER_FENCED, *NO)]
    # the next transaction, at the new epoch
    assert h.add_v2(TID, pid, epoch, ("t", 0)) == [ErrorCode.PRODUCER_FENCED]
    assert h.add_v2(TID, pid, epoch + 1, ("t", 0)) == []
    h.settle()
    assert h.end_v2(TID, pid, epoch + 1, False) == []
    h.settle()
    assert h.durable(TID).producer_epoch == epoch + 2


@pytest.mark.spec("TXN-92")
def test_a_v2_producer_may_abort_with_nothing_open_and_the_epoch_still_goes_up():
    h = Harness()
    pid, epoch = init_ok(h, TID)
    assert h.end_v2(TID, pid, epoch, True) == [(ErrorCode.INVALID_TXN_STATE, *NO)]
    out = h.end_v2(TID, pid, epoch, False)  # Empty: an abort with no partition
    h.settle()
    assert out == [(OK, pid, epoch + 1)] and h.sent == []  # no partition, no marker
    assert h.durable(TID).state == S.COMPLETE_ABORT
    # Kafka's table: in CompleteAbort the current epoch may abort again (bump), the
    # previous one is a retry (no bump), and nobody may commit
    assert h.end_v2(TID, pid, epoch, False) == [(OK, pid, epoch + 1)]
    assert h.end_v2(TID, pid, epoch + 1, True) == [(ErrorCode.INVALID_TXN_STATE, *NO)]
    out = h.end_v2(TID, pid, epoch + 1, False)
    h.settle()
    assert out == [(OK, pid, epoch + 2)]


@pytest.mark.spec("TXN-92")
def test_a_timed_out_v2_transaction_is_aborted_past_the_fence():
    h = Harness()
    pid, epoch = open_v2(h, ("t", 0))
    h.clock.advance(10_000)
    assert h.coordinator.abort_timed_out_transactions() == [TID]
    h.settle()
    # the fence takes one epoch and the v2 abort another: the producer's EndTxn retry
    # (its epoch + 1 would look like one) is told it was fenced
    assert h.durable(TID).producer_epoch == epoch + 2
    assert h.sent[-1].producer_epoch == epoch + 2
    assert h.end_v2(TID, pid, epoch, False) == [(ErrorCode.PRODUCER_FENCED, *NO)]


@pytest.mark.spec("TXN-93")
def test_the_client_transaction_version_survives_a_coordinator_failover():
    h = Harness()
    pid, epoch = open_v2(h, ("t", 0))
    partition = h.coordinator.partition_for(TID)
    (_, value) = h.log[partition][-1]
    assert int.from_bytes(value[:2], "big") == tlog.VALUE_VERSION_V2
    assert h.durable(TID).client_transaction_version == 2
    h.crash()  # a new coordinator loads the partition
    assert h.coordinator.describe(TID)[1].client_transaction_version == 2
    out = h.end_v2(TID, pid, epoch, commit=True)
    h.settle()
    assert out == [(OK, pid, epoch + 1)]
    # a transaction of a v1 client is still written as value version 0
    h2 = Harness()
    pid, epoch = init_ok(h2, TID)
    h2.add(TID, pid, epoch, ("t", 0))
    h2.settle()
    (_, value) = h2.log[partition][-1]
    assert int.from_bytes(value[:2], "big") == tlog.VALUE_VERSION
    assert h2.durable(TID).client_transaction_version == 0


@pytest.mark.spec("TXN-94")
def test_the_last_epoch_moves_the_producer_to_a_new_id_and_a_retry_finds_it():
    h = Harness()
    pid, _ = open_v2(h, ("t", 0))
    meta = h.coordinator.describe(TID)[1]
    meta.producer_epoch = last = MAX_PRODUCER_EPOCH - 1  # as if 32766 transactions ran
    out = h.end_v2(TID, pid, last, commit=True)
    h.complete_append()
    ((error, new_pid, new_epoch),) = out
    assert (error, new_epoch) == (OK, 0) and new_pid not in (pid, -1)
    (request,) = h.sent  # the markers still carry the old id, at Short.MaxValue
    assert (request.producer_id, request.producer_epoch) == (pid, MAX_PRODUCER_EPOCH)
    h.settle()
    done = h.durable(TID)
    assert (done.state, done.producer_id, done.producer_epoch) == (S.COMPLETE_COMMIT, new_pid, 0)
    assert done.previous_producer_id == pid
    assert h.end_v2(TID, pid, last, True) == [(OK, new_pid, 0)]  # the retry
    assert h.add_v2(TID, new_pid, 0, ("t", 0)) == []
