"""Transaction verification (KIP-890 part 1, TXN-23): the coordinator's answer to
AddPartitionsToTxn `verify_only`, and the partition leader's guard against a marker that
arrives between the coordinator's yes and the append."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.record.batch import BatchHeader, build_batch
from kafka_ref.record.record import Record
from kafka_ref.server.add_partitions_manager import AddPartitionsToTxnManager, producer_error
from kafka_ref.txn.transaction_metadata import TransactionState
from tests.unit.txn.harness import OK, Harness
from tests.unit.txn.test_coordinator import init_ok

TP, OTHER = ("t", 0), ("t", 1)
PID = 7


@pytest.mark.spec("TXN-23")
def test_the_coordinator_verifies_only_the_partitions_of_the_open_transaction():
    h = Harness()
    pid, epoch = init_ok(h)
    verify = h.coordinator.handle_verify_partitions
    assert verify("app-1", pid, epoch, {TP}) == {TP: ErrorCode.INVALID_TXN_STATE}  # none open
    h.add("app-1", pid, epoch, TP)
    assert verify("app-1", pid, epoch, {TP}) == {TP: ErrorCode.INVALID_TXN_STATE}, "not durable"
    h.settle()
    assert verify("app-1", pid, epoch, {TP, OTHER}) == {TP: OK, OTHER: ErrorCode.INVALID_TXN_STATE}
    assert h.appends == [], "a verification writes nothing"
    assert verify("app-1", pid, epoch + 1, {TP}) == {TP: ErrorCode.PRODUCER_FENCED}
    assert verify("app-1", pid + 1, epoch, {TP}) == {TP: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert verify("", pid, epoch, {TP}) == {TP: ErrorCode.INVALID_REQUEST}
    h.end("app-1", pid, epoch, commit=True)
    h.complete_append()  # PrepareCommit is logged; markers in flight
    assert h.coordinator.describe("app-1")[1].state == TransactionState.PREPARE_COMMIT
    assert verify("app-1", pid, epoch, {TP}) == {TP: ErrorCode.CONCURRENT_TRANSACTIONS}
    h.settle()
    assert verify("app-1", pid, epoch, {TP}) == {TP: ErrorCode.INVALID_TXN_STATE}  # it ended


def header(transactional: bool = True) -> BatchHeader:
    batch = build_batch(
        [Record(None, b"v", 0)],
        producer_id=PID,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=transactional,
    )
    return BatchHeader.parse(batch)


class NoCluster:
    """Metadata without `__transaction_state`: no coordinator to ask."""

    def partition_state(self, topic: str, partition: int):
        return None

    def brokers(self):
        return []


@pytest.mark.spec("TXN-23")
def test_a_marker_between_the_answer_and_the_append_wins():
    manager = AddPartitionsToTxnManager(NoCluster(), num_txn_partitions=3)
    assert manager.needs_verification(TP, header(), ongoing={})
    assert not manager.needs_verification(TP, header(), ongoing={PID: 0}), "already open here"
    assert not manager.needs_verification(TP, header(transactional=False), ongoing={})
    guard = manager.start(TP, PID)
    assert manager.start(TP, PID) is guard, "a second request waits on the same guard"
    assert manager.needs_verification(TP, header(), ongoing={PID: 0}), "behind a verification"
    assert manager.may_append(TP, PID, guard, ongoing={})
    manager.clear(TP, PID)  # the abort's marker is written while the coordinator's yes travels
    assert not manager.may_append(TP, PID, guard, ongoing={}), "would open a hanging transaction"
    assert manager.may_append(TP, PID, guard, ongoing={PID: 5}), "an earlier batch opened it"
    assert not AddPartitionsToTxnManager(NoCluster(), 3, enabled=False).needs_verification(
        TP, header(), ongoing={}
    )


@pytest.mark.spec("TXN-23")
def test_a_coordinator_that_cannot_answer_is_a_retriable_error_for_the_producer():
    manager = AddPartitionsToTxnManager(NoCluster(), num_txn_partitions=3)
    answers: list = []
    manager.verify("app-1", PID, 0, [TP], answers.append)
    retriable = (
        ErrorCode.NOT_ENOUGH_REPLICAS,
        "Unable to verify the partition has been added "
        "to the transaction. Underlying error: COORDINATOR_NOT_AVAILABLE",
    )
    assert answers == [{TP: retriable}]
    for error in (
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NETWORK_EXCEPTION,
    ):
        assert producer_error(error)[0] == ErrorCode.NOT_ENOUGH_REPLICAS
    assert producer_error(ErrorCode.PRODUCER_FENCED)[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert producer_error(ErrorCode.INVALID_TXN_STATE)[0] == ErrorCode.INVALID_TXN_STATE
