"""Transactions v2 (KIP-890 part 2) over the wire, with the project's own codecs: the
`transaction.version` feature in ApiVersions, a transaction whose partitions the leader adds
(Produce v12, TxnOffsetCommit v5), EndTxn v5's epoch bump and its retries, and KIP-1228's
check of a marker's epoch (spec/transactions.md, TXN-91..)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_ref.conformance import late_produce
from kafka_ref.conformance.history import check
from kafka_ref.errors import ErrorCode
from kafka_ref.metadata import records as r
from kafka_ref.metadata.image import load
from kafka_ref.metadata.serde import ApiMessageAndVersion
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from kafka_ref.record.batch import RecordBatch, iter_batch_headers
from kafka_ref.server.group_adapter import OFFSETS_TOPIC
from kafka_ref.server.handlers.features import finalized_features
from kafka_ref.txn.transaction_metadata import TransactionState
from tests.unit.server.conftest import Wire, wait_until
from tests.unit.server.test_txn import TXN, read_committed, started, txn_batch

pytestmark = pytest.mark.timeout(60)

PRODUCE_V2, END_TXN_V2, TXN_OFFSET_COMMIT_V2 = 12, 5, 5


def api_versions(wire: Wire, version: int):
    body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return wire.request(ApiKey.API_VERSIONS, version, body)


def features(answer) -> tuple[dict, int, dict]:
    supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
    finalized = {f.name: f.max_version_level for f in answer.finalized_features}
    return supported, answer.finalized_features_epoch, finalized


def end_v2(wire: Wire, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    body = EndTxnRequest(
        transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=commit
    )
    answer = wire.request(ApiKey.END_TXN, END_TXN_V2, body)
    return answer.error_code, answer.producer_id, answer.producer_epoch


def produce_v2(wire: Wire, topic: str, pid: int, epoch: int, seq: int, *values: bytes):
    records = txn_batch(pid, epoch, seq, *values)
    return wire.produce(topic, 0, records, transactional_id=TXN, version=PRODUCE_V2)


def find_coordinator(wire: Wire, key: str, key_type: int):
    body = FindCoordinatorRequest(key=key, key_type=key_type)
    return wire.request(ApiKey.FIND_COORDINATOR, 2, body)


def coordinator_state(broker):
    return broker.broker.txns.coordinator.describe(TXN)[1]


def last_marker_epoch(wire: Wire, topic: str) -> int:
    """The producer epoch of the partition's last batch (a marker, once settled)."""
    *_, (_, last) = iter_batch_headers(bytes(read_committed(wire, topic).records))
    assert last.is_control
    return last.producer_epoch


@pytest.mark.spec("TXN-91")
def test_api_versions_shows_transaction_version_supported_and_finalized(make_broker):
    wire = Wire(make_broker().port)
    supported, epoch, finalized = features(api_versions(wire, 4))
    assert supported["transaction.version"] == (0, 2)
    assert (epoch, finalized["transaction.version"]) == (0, 2)  # Kafka 4's default
    supported, _, _ = features(api_versions(wire, 3))
    assert supported == {}, "before v4 a supported range from 0 is left out (KAFKA-17011)"
    wire.close()
    wire = Wire(make_broker(props={"transaction.version": 1}).port)
    assert features(api_versions(wire, 4))[2]["transaction.version"] == 1
    wire.close()
    wire = Wire(make_broker(props={"transaction.version": 0}).port)
    finalized = features(api_versions(wire, 4))[2]
    assert "transaction.version" not in finalized, "level 0 is not finalized"
    wire.close()


@pytest.mark.spec("TXN-92", "TXN-95")
def test_a_v2_transaction_adds_its_partition_and_ends_with_the_epoch_bumped(broker, wire):
    pid, epoch = started(wire, "v2")
    # no AddPartitionsToTxn: Produce v12 has the leader add the partition
    assert produce_v2(wire, "v2", pid, epoch, 0, b"a", b"b").error_code == 0
    meta = coordinator_state(broker)
    assert (meta.state, meta.partitions) == (TransactionState.ONGOING, {("v2", 0)})
    assert meta.client_transaction_version == 2
    assert end_v2(wire, pid, epoch, commit=True) == (0, pid, epoch + 1)
    assert wait_until(lambda: read_committed(wire, "v2").last_stable_offset == 3)
    assert last_marker_epoch(wire, "v2") == epoch + 1, "the marker carries the bumped epoch"
    assert wait_until(lambda: coordinator_state(broker).state == TransactionState.COMPLETE_COMMIT)
    # a retry names the epoch before the bump and is answered with the current one
    assert end_v2(wire, pid, epoch, commit=True) == (0, pid, epoch + 1)
    assert end_v2(wire, pid, epoch, commit=False)[0] == ErrorCode.INVALID_TXN_STATE
    # the next transaction runs at the new epoch, from sequence 0
    assert produce_v2(wire, "v2", pid, epoch + 1, 0, b"c").error_code == 0
    assert end_v2(wire, pid, epoch + 1, commit=False) == (0, pid, epoch + 2)
    assert end_v2(wire, pid, epoch, commit=True)[0] == ErrorCode.PRODUCER_FENCED


@pytest.mark.spec("TXN-95")
def test_a_batch_one_epoch_up_is_not_taken_into_the_transaction_open_below_it(broker, wire):
    pid, epoch = started(wire, "up")
    assert produce_v2(wire, "up", pid, epoch, 0, b"t1").error_code == 0  # T1 open at epoch
    # a batch at epoch + 1 belongs to a next transaction: the leader asks the coordinator to
    # add the partition at that epoch, which T1's coordinator does not know
    ahead = produce_v2(wire, "up", pid, epoch + 1, 0, b"ahead")
    assert ahead.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert coordinator_state(broker).producer_epoch == epoch


@pytest.mark.spec("TXN-95")
def test_the_leader_adds_the_partition_even_with_verification_off(make_broker):
    broker = make_broker(props={"transaction.partition.verification.enable": "false"})
    wire = Wire(broker.port)
    pid, epoch = started(wire, "noverify")
    assert produce_v2(wire, "noverify", pid, epoch, 0, b"a").error_code == 0
    assert coordinator_state(broker).partitions == {("noverify", 0)}
    wire.close()


@pytest.mark.spec("TXN-97")
def test_a_late_produce_of_an_aborted_v2_transaction_is_fenced(wire):
    pid, epoch = started(wire, "late")
    assert produce_v2(wire, "late", pid, epoch, 0, b"kept-out").error_code == 0
    assert end_v2(wire, pid, epoch, commit=False) == (0, pid, epoch + 1)
    assert wait_until(lambda: read_committed(wire, "late").last_stable_offset == 2)
    # the next transaction has begun here when the aborted one's retry arrives
    assert produce_v2(wire, "late", pid, epoch + 1, 0, b"next").error_code == 0
    late = produce_v2(wire, "late", pid, epoch, 1, b"late")
    assert late.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end_v2(wire, pid, epoch + 1, commit=True)[0] == 0
    assert wait_until(lambda: read_committed(wire, "late").last_stable_offset == 4)
    values = [bytes(r.value) for r in _records(read_committed(wire, "late"))]
    assert b"late" not in values


def _records(partition):
    records = bytes(partition.records)
    for position, header in iter_batch_headers(records):
        if not header.is_control:
            yield from RecordBatch(records, position).records()


@pytest.mark.spec("TXN-96")
def test_a_v2_marker_must_carry_a_newer_epoch_than_the_partition_has(broker, wire):
    pid, epoch = started(wire, "m")
    assert produce_v2(wire, "m", pid, epoch, 0, b"x").error_code == 0

    def marker(producer_epoch: int, version: int) -> int:
        body = WriteTxnMarkersRequest(
            markers=[
                WriteTxnMarkersRequest.WritableTxnMarker(
                    producer_id=pid,
                    producer_epoch=producer_epoch,
                    transaction_result=False,
                    topics=[
                        WriteTxnMarkersRequest.WritableTxnMarkerTopic(
                            name="m", partition_indexes=[0]
                        )
                    ],
                    coordinator_epoch=0,
                    transaction_version=version,
                )
            ]
        )
        answer = wire.request(ApiKey.WRITE_TXN_MARKERS, 2, body)
        return answer.markers[0].topics[0].partitions[0].error_code

    assert marker(epoch, version=2) == ErrorCode.INVALID_PRODUCER_EPOCH  # same epoch: stale
    assert read_committed(wire, "m").last_stable_offset == 0, "nothing was written"
    assert marker(epoch + 1, version=2) == 0
    assert marker(epoch + 1, version=2) == ErrorCode.INVALID_PRODUCER_EPOCH  # written twice
    assert marker(epoch + 1, version=1) == 0, "a v1 marker may repeat the epoch"


@pytest.mark.spec("TXN-95")
def test_txn_offset_commit_v5_adds_the_group_to_the_transaction(broker, wire):
    pid, epoch = started(wire, "o")
    assert find_coordinator(wire, "g", key_type=0).error_code == 0  # the group's
    body = TxnOffsetCommitRequest(
        transactional_id=TXN,
        group_id="g",
        producer_id=pid,
        producer_epoch=epoch,
        topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                name="o",
                partitions=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                        partition_index=0, committed_offset=7, committed_metadata=""
                    )
                ],
            )
        ],
    )
    answer = wire.request(ApiKey.TXN_OFFSET_COMMIT, TXN_OFFSET_COMMIT_V2, body)
    assert answer.topics[0].partitions[0].error_code == 0
    home = broker.broker.apis.group_coordinator.partition_for("g")
    assert coordinator_state(broker).partitions == {(OFFSETS_TOPIC, home)}
    assert end_v2(wire, pid, epoch, commit=True) == (0, pid, epoch + 1)

    def committed() -> int:
        fetch = OffsetFetchRequest(
            group_id="g",
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="o", partition_indexes=[0])],
        )
        return wire.request(ApiKey.OFFSET_FETCH, 1, fetch).topics[0].partitions[0].committed_offset

    assert wait_until(lambda: committed() == 7)


@pytest.mark.spec("TXN-97")
@pytest.mark.parametrize("level", [1, 2])
def test_the_late_produce_lands_in_the_next_transaction_under_v1_only(make_broker, level):
    broker = make_broker(props={"transaction.version": level})
    wire = Wire(broker.port)
    assert wire.create_topic("late", 1) == 0
    wire.close()
    spoken, history = late_produce.run("127.0.0.1", broker.port, "late", "late-1")
    assert spoken == level  # the producer chose the protocol the broker finalized
    result = check(history)
    if level == 1:  # T1's aborted record is read inside the committed T2 (HIST-16)
        assert result.kinds() == {"aborted-read"}, result
        (found,) = result.anomalies["aborted-read"]
        assert (found["value"], found["txn"]) == (b"t1-late", "T1")
    else:  # the bumped epoch fenced it
        assert result.valid, result


def feature(name: str, level: int) -> ApiMessageAndVersion:
    return ApiMessageAndVersion.of(r.FeatureLevelRecord(name=name, feature_level=level))


@pytest.mark.spec("TXN-91")
def test_a_kraft_broker_shows_the_level_its_metadata_image_finalized():
    image = load([feature("metadata.version", 27), feature("transaction.version", 1)])
    kraft = SimpleNamespace(controller=SimpleNamespace(image=image, published_offset=41))
    assert finalized_features(kraft) == (41, {"transaction.version": 1})
    kraft.controller.image = load([feature("metadata.version", 27)])  # level 0: not finalized
    assert finalized_features(kraft) == (41, {})
