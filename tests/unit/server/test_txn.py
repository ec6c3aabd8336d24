"""The transaction APIs over the wire, with the project's own codecs (spec/transactions.md):
one transaction step by step, the errors of each API, the LSO and aborted transactions in
Fetch and ListOffsets, and a coordinator that restarts after logging its decision."""

from __future__ import annotations

import os

import pytest

from kafka_ref.clock import SystemClock
from kafka_ref.config import LogConfig
from kafka_ref.conformance.wire import produce_body
from kafka_ref.errors import ErrorCode
from kafka_ref.log.log import Log
from kafka_ref.protocol.messages import (
    AddPartitionsToTxnRequest,
    ApiKey,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)
from kafka_ref.record.batch import RecordBatch, build_batch
from kafka_ref.record.control import read_marker
from kafka_ref.record.record import Record
from kafka_ref.txn import transaction_log as tlog
from kafka_ref.txn.transaction_metadata import TransactionMetadata, TransactionState
from tests.unit.server.conftest import T0, Wire, fetch_body, wait_until

pytestmark = pytest.mark.timeout(60)

TXN = "app-1"


def find_txn_coordinator(wire: Wire, tid: str = TXN):
    return wire.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key=tid, key_type=1))


def init(wire: Wire, tid: str = TXN):
    body = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000)
    return wire.request(ApiKey.INIT_PRODUCER_ID, 1, body)


def add_partitions(wire: Wire, pid: int, epoch: int, topic: str, *parts: int, version: int = 2):
    body = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TXN,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=list(parts))
        ],
    )
    answer = wire.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, body)
    return {
        r.partition_error_code
        for t in answer.results_by_topic_v3_and_below
        for r in t.results_by_partition
    }


def end(wire: Wire, pid: int, epoch: int, commit: bool, version: int = 2) -> int:
    body = EndTxnRequest(
        transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=commit
    )
    return wire.request(ApiKey.END_TXN, version, body).error_code


def txn_batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    records = [Record(None, v, T0) for v in values]
    return build_batch(
        records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True
    )


def read_committed(wire: Wire, topic: str, offset: int = 0):
    answer = wire.request(ApiKey.FETCH, 10, fetch_body([(topic, 0, offset)], isolation_level=1))
    return answer.responses[0].partitions[0]


def latest_committed(wire: Wire, topic: str) -> int:
    """ListOffsets LATEST with isolation_level 1 (v2+)."""
    latest = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
    topics = [ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[latest])]
    body = ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=topics)
    return wire.request(ApiKey.LIST_OFFSETS, 2, body).topics[0].partitions[0].offset


def started(wire: Wire, topic: str) -> tuple[int, int]:
    wire.create_topic(topic, partitions=1)
    assert find_txn_coordinator(wire).error_code == 0
    answer = init(wire)
    assert answer.error_code == 0
    return answer.producer_id, answer.producer_epoch


@pytest.mark.spec("TXN-4", "TXN-8", "TXN-12")
def test_a_transaction_step_by_step_over_the_wire(wire):
    pid, epoch = started(wire, "t")
    assert add_partitions(wire, pid, epoch, "t", 0) == {0}
    produced = wire.produce("t", 0, txn_batch(pid, epoch, 0, b"a", b"b"), transactional_id=TXN)
    assert produced.error_code == 0
    part = read_committed(wire, "t")
    assert (part.high_watermark, part.last_stable_offset) == (2, 0)
    assert wire.list_offset("t", 0, -1).offset == 2  # read_uncommitted: the HW
    assert latest_committed(wire, "t") == 0  # read_committed: the LSO
    assert end(wire, pid, epoch, commit=False) == 0
    assert wait_until(lambda: read_committed(wire, "t").last_stable_offset == 3)
    assert latest_committed(wire, "t") == 3
    part = read_committed(wire, "t")
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(pid, 0)]
    first = len(txn_batch(pid, epoch, 0, b"a", b"b"))  # the data batch; then the marker
    assert read_marker(bytes(RecordBatch(bytes(part.records), first))).control_type == 0
    # the next transaction commits; its records are read, the aborted ones never
    assert add_partitions(wire, pid, epoch, "t", 0) == {0}
    produced = wire.produce("t", 0, txn_batch(pid, epoch, 2, b"c"), transactional_id=TXN)
    assert produced.error_code == 0
    assert end(wire, pid, epoch, commit=True) == 0
    assert wait_until(lambda: read_committed(wire, "t").last_stable_offset == 5)
    assert read_committed(wire, "t", 3).aborted_transactions == []  # none overlaps 3..


@pytest.mark.spec("TXN-13")
def test_errors_of_the_transaction_apis(wire):
    pid, epoch = started(wire, "e")
    assert end(wire, pid, epoch, commit=True) == ErrorCode.INVALID_TXN_STATE  # nothing open
    assert add_partitions(wire, pid + 1, epoch, "e", 0) == {ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert init(wire).producer_epoch == epoch + 1  # a new instance
    assert add_partitions(wire, pid, epoch, "e", 0) == {ErrorCode.PRODUCER_FENCED}
    assert add_partitions(wire, pid, epoch, "e", 0, version=1) == {ErrorCode.INVALID_PRODUCER_EPOCH}
    assert end(wire, pid, epoch, True, version=0) == ErrorCode.INVALID_PRODUCER_EPOCH


@pytest.mark.spec("TXN-14", "TXN-5")
def test_a_restarted_coordinator_writes_the_markers_of_a_logged_decision(make_broker, tmp_path):
    data = tmp_path / "data"
    broker = make_broker(data)
    wire = Wire(broker.port)
    pid, epoch = started(wire, "r")
    assert add_partitions(wire, pid, epoch, "r", 0) == {0}
    produced = wire.produce("r", 0, txn_batch(pid, epoch, 0, b"x", b"y"), transactional_id=TXN)
    assert produced.error_code == 0
    assert read_committed(wire, "r").last_stable_offset == 0
    home = broker.broker.txns.coordinator.partition_for(TXN)
    wire.close()
    broker.stop()
    # As if the coordinator crashed right after logging its decision, before any marker:
    log_dir = os.path.join(data, f"{tlog.TRANSACTION_STATE_TOPIC}-{home}")
    log = Log.open(log_dir, LogConfig(), SystemClock(), clean_shutdown=True)
    decided = TransactionMetadata(
        TXN, pid, epoch, 60_000, TransactionState.PREPARE_COMMIT, {("r", 0)}, T0, T0
    )
    log.append(build_batch([Record(tlog.key_bytes(TXN), tlog.value_bytes(decided), T0)]))
    log.close()
    broker = make_broker(data)
    wire = Wire(broker.port)
    assert wait_until(lambda: read_committed(wire, "r").last_stable_offset == 3, timeout=10)
    assert read_committed(wire, "r").aborted_transactions == []
    assert wait_until(
        lambda: (
            broker.broker.txns.coordinator.describe(TXN)[1].state
            == TransactionState.COMPLETE_COMMIT
        )
    )
    wire.close()


@pytest.mark.spec("TXN-18")
def test_init_producer_id_v4_over_the_wire_bumps_the_named_epoch(wire):
    pid, epoch = started(wire, "k")

    def init_v(version: int, producer_id: int, producer_epoch: int):
        body = InitProducerIdRequest(
            transactional_id=TXN,
            transaction_timeout_ms=60_000,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        answer = wire.request(ApiKey.INIT_PRODUCER_ID, version, body)
        return answer.error_code, answer.producer_id, answer.producer_epoch

    assert init_v(4, pid, epoch) == (0, pid, epoch + 1)  # flexible v4
    assert init_v(4, pid, epoch) == (0, pid, epoch + 1)  # the same bump, retried
    assert init_v(4, pid, epoch - 1)[0] == ErrorCode.PRODUCER_FENCED
    assert init_v(3, pid, epoch - 1)[0] == ErrorCode.INVALID_PRODUCER_EPOCH  # before v4
    assert init_v(2, -1, -1) == (0, pid, epoch + 2)  # v2 names no epoch: a plain bump


@pytest.mark.spec("TXN-19")
def test_describe_and_list_transactions_and_producers_find_an_open_transaction(wire):
    pid, epoch = started(wire, "h")
    assert add_partitions(wire, pid, epoch, "h", 0) == {0}
    records = txn_batch(pid, epoch, 0, b"a", b"b", b"c")
    produced = wire.produce("h", 0, records, transactional_id=TXN)
    assert produced.error_code == 0
    body = DescribeProducersRequest(
        topics=[DescribeProducersRequest.TopicRequest(name="h", partition_indexes=[0, 7])]
    )
    answer = wire.request(ApiKey.DESCRIBE_PRODUCERS, 0, body).topics[0]
    (found,) = answer.partitions[0].active_producers
    assert (found.producer_id, found.producer_epoch, found.last_sequence) == (pid, epoch, 2)
    assert found.current_txn_start_offset == 0  # the open transaction holding the LSO
    assert answer.partitions[1].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    body = DescribeTransactionsRequest(transactional_ids=[TXN, "nobody"])
    (state, missing) = wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, body).transaction_states
    assert (state.error_code, state.transaction_state, state.producer_id) == (0, "Ongoing", pid)
    assert [(t.topic, t.partitions) for t in state.topics] == [("h", [0])]
    assert state.transaction_start_time_ms > 0 and state.transaction_timeout_ms == 60_000
    assert missing.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

    def listed(version: int = 0, **filters):
        answer = wire.request(
            ApiKey.LIST_TRANSACTIONS,
            version,
            ListTransactionsRequest(
                state_filters=filters.get("states", []),
                producer_id_filters=filters.get("pids", []),
                duration_filter=filters.get("duration", -1),
            ),
        )
        return answer.unknown_state_filters, [
            (t.transactional_id, t.transaction_state) for t in answer.transaction_states
        ]

    assert listed() == ([], [(TXN, "Ongoing")])
    assert listed(states=["Ongoing", "Bogus"]) == (["Bogus"], [(TXN, "Ongoing")])
    assert listed(states=["Empty"]) == ([], [])
    assert listed(pids=[pid + 1]) == ([], [])
    assert listed(1, duration=3_600_000) == ([], [])  # not running for an hour
    assert end(wire, pid, epoch, commit=True) == 0
    assert wait_until(lambda: listed() == ([], [(TXN, "CompleteCommit")]))


def txn_produce(wire: Wire, topic: str, partition: int, records: bytes, tid: str = TXN):
    """A Produce v8 (error messages, KIP-467) with the producer's transactional id."""
    body = produce_body(topic, partition, records)
    body.transactional_id = tid
    return wire.request(ApiKey.PRODUCE, 8, body).responses[0].partition_responses[0]


def verify(wire: Wire, pid: int, epoch: int, topic: str, *parts: int, tid: str = TXN) -> list:
    """AddPartitionsToTxn v4 `verify_only`, as a partition leader asks it: the errors."""
    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        verify_only=True,
        topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=list(parts))
        ],
    )
    answer = wire.request(
        ApiKey.ADD_PARTITIONS_TO_TXN, 4, AddPartitionsToTxnRequest(transactions=[txn])
    )
    assert answer.error_code == 0
    (result,) = answer.results_by_transaction
    assert result.transactional_id == tid
    return [r.partition_error_code for t in result.topic_results for r in t.results_by_partition]


@pytest.mark.spec("TXN-23")
def test_a_produce_to_a_partition_not_in_the_transaction_is_refused(wire):
    wire.create_topic("v", partitions=2)
    pid, epoch = started(wire, "v0")
    assert add_partitions(wire, pid, epoch, "v", 0) == {0}
    assert verify(wire, pid, epoch, "v", 0, 1) == [0, ErrorCode.INVALID_TXN_STATE]
    assert verify(wire, pid, epoch + 1, "v", 0) == [ErrorCode.PRODUCER_FENCED]
    assert verify(wire, pid + 1, epoch, "v", 0) == [ErrorCode.INVALID_PRODUCER_ID_MAPPING]
    refused = txn_produce(wire, "v", 1, txn_batch(pid, epoch, 0, b"stray"))
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.INVALID_TXN_STATE,
        "Partition was not added to the transaction",
    )
    assert wire.list_offset("v", 1, -1).offset == 0, "nothing written: no hanging transaction"
    assert txn_produce(wire, "v", 0, txn_batch(pid, epoch, 0, b"a")).error_code == 0
    assert txn_produce(wire, "v", 0, txn_batch(pid, epoch, 1, b"b")).error_code == 0
    assert end(wire, pid, epoch, commit=False) == 0
    assert wait_until(lambda: read_committed(wire, "v").last_stable_offset == 3)
    # A late retry of the aborted transaction's batch cannot open a new one
    late = txn_produce(wire, "v", 0, txn_batch(pid, epoch, 2, b"late"))
    assert late.error_code == ErrorCode.INVALID_TXN_STATE
    assert read_committed(wire, "v").last_stable_offset == 3 == wire.list_offset("v", 0, -1).offset


@pytest.mark.spec("TXN-23")
def test_without_verification_a_stray_batch_hangs_the_partition(make_broker):
    broker = make_broker(props={"transaction.partition.verification.enable": "false"})
    wire = Wire(broker.port)
    wire.create_topic("h", partitions=2)
    pid, epoch = started(wire, "h0")
    assert txn_produce(wire, "h", 1, txn_batch(pid, epoch, 0, b"stray")).error_code == 0
    assert read_committed(wire, "h").last_stable_offset == 0  # partition 0: nothing there
    part = wire.request(ApiKey.FETCH, 10, fetch_body([("h", 1, 0)], isolation_level=1))
    assert part.responses[0].partitions[0].last_stable_offset == 0  # held at the stray batch
    wire.close()


@pytest.mark.spec("TXN-89")
def test_pipelined_batches_behind_a_verification_keep_their_order(broker, wire):
    pid, epoch = started(wire, "p")
    assert add_partitions(wire, pid, epoch, "p", 0) == {0}
    manager = broker.broker.apis.add_partitions
    channel = manager.channel
    ask = channel.send  # the coordinator is this broker: it answers at once...
    held: list[tuple] = []
    broker.call(lambda: setattr(channel, "send", lambda *question: held.append(question)))

    def answer(n: int) -> None:  # ...so hold its answers, as a remote coordinator's travel
        broker.call(lambda: ask(*held[n]))

    def send(seq: int) -> None:
        body = produce_body("p", 0, txn_batch(pid, epoch, seq, b"v%d" % seq), acks=1)
        body.transactional_id = TXN
        wire.send(ApiKey.PRODUCE, 8, body)

    send(0)
    send(1)  # pipelined: no transaction is open yet, both wait for the coordinator
    assert wait_until(lambda: len(held) == 2)
    answer(0)  # batch 0 is appended: the transaction is open in the partition now
    send(2)  # must not overtake batch 1, still waiting for its answer
    assert wait_until(lambda: len(held) == 3), "batch 2 was not queued behind batch 1"
    answer(1)
    answer(2)
    results = [wire.receive().responses[0].partition_responses[0] for _ in range(3)]
    assert [(r.error_code, r.base_offset) for r in results] == [(0, 0), (0, 1), (0, 2)]
    broker.call(lambda: delattr(channel, "send"))
    assert not broker.call(lambda: manager._in_flight), "no verification left in flight"


@pytest.mark.spec("TXN-23")
def test_a_marker_voids_a_verification_in_flight(broker, wire):
    wire.create_topic("g")
    manager, tp, pid = broker.broker.apis.add_partitions, ("g", 0), 4242
    guard = broker.call(lambda: manager.start(tp, pid))  # a produce is being verified
    marker = WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=pid,
        producer_epoch=0,
        transaction_result=False,
        coordinator_epoch=0,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="g", partition_indexes=[0])],
    )
    answer = wire.request(ApiKey.WRITE_TXN_MARKERS, 1, WriteTxnMarkersRequest(markers=[marker]))
    assert answer.markers[0].topics[0].partitions[0].error_code == 0
    assert not broker.call(lambda: manager.may_append(tp, pid, guard, {})), "the batch would hang"
