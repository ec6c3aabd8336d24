"""The idempotent producer over the wire, with the project's own protocol codecs
(IDEM-3..IDEM-9, IDEM-14, IDEM-15, IDEM-17): InitProducerId, resent batches, sequence gaps,
fenced epochs, and producer state and ids across restarts and kill -9."""

from __future__ import annotations

import json
import signal

import pytest

from kafka_ref.clock import ManualClock
from kafka_ref.cluster.embedded import METADATA_FILE, EmbeddedController
from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
)
from kafka_ref.record.batch import RecordBatch, build_batch, iter_batch_headers
from kafka_ref.record.record import Record
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.txn.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager
from tests.unit.server.conftest import T0, Wire
from tests.unit.server.test_lifecycle import free_port, start_process

pytestmark = pytest.mark.timeout(90)


def init_producer_id(wire: Wire, transactional_id: str | None = None, version: int = 1):
    body = InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60000)
    return wire.request(ApiKey.INIT_PRODUCER_ID, version, body)


def idem_batch(pid: int, seq: int, count: int = 1, epoch: int = 0, tag: bytes = b"v") -> bytes:
    records = [Record(None, b"%s-%d-%d" % (tag, pid, seq + i), T0 + i) for i in range(count)]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def stored_values(wire: Wire, topic: str) -> list[bytes]:
    data = wire.fetch_many([(topic, 0, 0)]).responses[0].partitions[0].records or b""
    out = []
    for pos, _ in iter_batch_headers(data):
        out += [r.value for r in RecordBatch(data, pos).records()]
    return out


def hw(wire: Wire, topic: str) -> int:
    return wire.fetch_many([(topic, 0, 0)]).responses[0].partitions[0].high_watermark


# ---------------------------------------------------------------------- producer ids
@pytest.mark.spec("IDEM-15")
def test_init_producer_id_hands_out_fresh_ids_with_epoch_zero(wire):
    answers = [init_producer_id(wire, version=v) for v in (0, 1, 1, 0)]
    assert all(a.error_code == 0 and a.producer_epoch == 0 for a in answers)
    ids = [a.producer_id for a in answers]
    assert len(set(ids)) == 4 and all(i >= 0 for i in ids)


@pytest.mark.spec("IDEM-15")
def test_producer_ids_are_never_reused_after_a_restart_or_kill_9(make_broker, tmp_path):
    data = tmp_path / "d"
    first = make_broker(data)
    wire = Wire(first.port)
    before = {init_producer_id(wire).producer_id for _ in range(3)}
    # The block was persisted before its first id went out.
    stored = json.loads((data / METADATA_FILE).read_text())["producer_ids"]
    assert stored["next_producer_id"] >= max(before) + 1
    first.stop()
    second = make_broker(data)
    after_restart = init_producer_id(Wire(second.port)).producer_id
    second.stop()
    port = free_port()
    proc = start_process(data, port)
    try:
        crashed_before = init_producer_id(Wire(port)).producer_id
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc = start_process(data, port)
        after_crash = init_producer_id(Wire(port)).producer_id
    finally:
        proc.kill()
        proc.wait(10)
    ids = [*sorted(before), after_restart, crashed_before, after_crash]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert after_restart >= PRODUCER_ID_BLOCK_SIZE  # the rest of the first block is skipped


@pytest.mark.spec("IDEM-15")
def test_ids_come_in_blocks_from_a_storage_that_can_be_replaced(tmp_path):
    class Store:  # what a ZooKeeper-backed storage would implement
        def __init__(self):
            self.next, self.calls = 5000, []

        def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
            self.calls.append((broker_id, size))
            first, self.next = self.next, self.next + size
            return first

    store = Store()
    manager = ProducerIdManager(3, store, block_size=10)
    ids = [manager.generate_producer_id() for _ in range(25)]
    assert ids == list(range(5000, 5025)) and store.calls == [(3, 10)] * 3

    controller = EmbeddedController(tmp_path, BrokerEndpoint(0, "127.0.0.1", 9092))
    assert controller.allocate_producer_id_block(0, 1000) == 0
    assert controller.allocate_producer_id_block(0, 1000) == 1000
    reloaded = EmbeddedController(tmp_path, BrokerEndpoint(0, "127.0.0.1", 9092))
    assert reloaded.allocate_producer_id_block(0, 1000) == 2000
    with pytest.raises(OverflowError):
        reloaded.allocate_producer_id_block(0, 2**63)


@pytest.mark.spec("IDEM-17", "TXN-9", "TXN-13")
def test_a_transactional_init_producer_id_goes_to_the_ids_coordinator(wire):
    # before anyone looked for a transaction coordinator, __transaction_state does not exist
    for transactional_id, error in (("txn-1", ErrorCode.NOT_COORDINATOR), ("", 42)):
        answer = init_producer_id(wire, transactional_id)
        assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (error, -1, -1)
    body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    keys = {
        k.api_key: (k.min_version, k.max_version)
        for k in wire.request(ApiKey.API_VERSIONS, 3, body).api_keys
    }
    assert keys[ApiKey.INIT_PRODUCER_ID] == (0, 5)
    assert {24: (0, 5), 25: (0, 4), 26: (0, 5), 28: (0, 5)}.items() <= keys.items()  # TXN-85
    find = FindCoordinatorRequest(key="txn-1", key_type=1)
    answer = wire.request(ApiKey.FIND_COORDINATOR, 2, find)
    assert (answer.error_code, answer.node_id) == (ErrorCode.NO_ERROR, 0)
    first = init_producer_id(wire, "txn-1")
    assert (first.error_code, first.producer_epoch) == (0, 0) and first.producer_id >= 0
    again = init_producer_id(wire, "txn-1")
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, first.producer_id, 1)
    assert init_producer_id(wire).producer_id not in (-1, first.producer_id)  # idempotent


# ---------------------------------------------------------------------- produce
@pytest.mark.spec("IDEM-3")
def test_a_resent_batch_is_stored_once_and_answered_with_its_original_offset(wire):
    wire.create_topic("once")
    pid = init_producer_id(wire).producer_id
    first = wire.produce("once", 0, idem_batch(pid, 0, 3))
    second = wire.produce("once", 0, idem_batch(pid, 3, 2))
    assert (first.error_code, first.base_offset, second.base_offset) == (0, 0, 3)
    for _ in range(2):  # the responses were lost: the producer sends both again
        again = wire.produce("once", 0, idem_batch(pid, 0, 3))
        assert (again.error_code, again.base_offset) == (ErrorCode.NO_ERROR, 0)
        assert wire.produce("once", 0, idem_batch(pid, 3, 2)).base_offset == 3
    assert stored_values(wire, "once") == [b"v-%d-%d" % (pid, s) for s in range(5)]
    assert hw(wire, "once") == 5


@pytest.mark.spec("IDEM-4")
def test_a_skipped_sequence_is_out_of_order_and_stores_nothing(wire):
    wire.create_topic("gap")
    pid = init_producer_id(wire).producer_id
    wire.produce("gap", 0, idem_batch(pid, 0, 2))
    skipped = wire.produce("gap", 0, idem_batch(pid, 5))
    assert (skipped.error_code, skipped.base_offset) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    assert hw(wire, "gap") == 2
    assert wire.produce("gap", 0, idem_batch(pid, 2)).base_offset == 2


@pytest.mark.spec("IDEM-5", "IDEM-6")
def test_an_older_epoch_is_fenced(wire):
    wire.create_topic("fence")
    pid = init_producer_id(wire).producer_id
    wire.produce("fence", 0, idem_batch(pid, 0, 2, epoch=0))
    bumped = wire.produce("fence", 0, idem_batch(pid, 3, epoch=1))
    assert bumped.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # must start at 0
    assert wire.produce("fence", 0, idem_batch(pid, 0, epoch=1)).base_offset == 2
    zombie = wire.produce("fence", 0, idem_batch(pid, 2, epoch=0))
    assert zombie.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert hw(wire, "fence") == 3


@pytest.mark.spec("IDEM-7")
def test_a_producer_without_state_must_start_at_zero(wire):
    wire.create_topic("unknown")
    pid = init_producer_id(wire).producer_id
    late = wire.produce("unknown", 0, idem_batch(pid, 7))
    assert late.error_code == ErrorCode.UNKNOWN_PRODUCER_ID
    assert wire.produce("unknown", 0, idem_batch(pid, 0)).error_code == 0


@pytest.mark.spec("IDEM-9")
def test_a_retry_after_a_restart_is_still_recognised(make_broker, tmp_path):
    data = tmp_path / "d"
    first = make_broker(data, {"log.segment.bytes": 500})
    wire = Wire(first.port)
    wire.create_topic("durable")
    pid = init_producer_id(wire).producer_id
    offsets = [
        wire.produce("durable", 0, idem_batch(pid, seq, 2)).base_offset for seq in range(0, 20, 2)
    ]
    first.stop()
    second = make_broker(data, {"log.segment.bytes": 500})
    wire = Wire(second.port)
    for seq, offset in zip(range(10, 20, 2), offsets[5:], strict=True):
        assert wire.produce("durable", 0, idem_batch(pid, seq, 2)).base_offset == offset
    assert hw(wire, "durable") == 20
    assert wire.produce("durable", 0, idem_batch(pid, 20)).base_offset == 20


@pytest.mark.spec("IDEM-9")
def test_a_retry_after_kill_9_is_still_recognised(tmp_path):
    data, port = tmp_path / "d", free_port()
    proc = start_process(data, port)
    try:
        wire = Wire(port)
        wire.create_topic("crash")
        pid = init_producer_id(wire).producer_id
        for seq in range(0, 10, 2):
            assert wire.produce("crash", 0, idem_batch(pid, seq, 2)).error_code == 0
        proc.send_signal(signal.SIGKILL)  # the last response might have been lost
        proc.wait(10)
        proc = start_process(data, port)
        wire = Wire(port)
        assert wire.produce("crash", 0, idem_batch(pid, 8, 2)).base_offset == 8
        assert hw(wire, "crash") == 10
        assert len(set(stored_values(wire, "crash"))) == 10
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.spec("IDEM-14")
def test_the_broker_forgets_idle_producers(tmp_path):
    clock = ManualClock()
    config = KafkaConfig.from_props(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "d"),
            "producer.id.expiration.ms": "60000",
        }
    )
    with BrokerThread(config, clock) as broker:
        wire = Wire(broker.port)
        wire.create_topic("idle")
        pid = init_producer_id(wire).producer_id
        wire.produce("idle", 0, idem_batch(pid, 0))
        clock.advance(59_999)
        assert broker.call(broker.broker.tasks.expire_producer_ids) == 0
        clock.advance(1)
        assert broker.call(broker.broker.tasks.expire_producer_ids) == 1
        assert wire.produce("idle", 0, idem_batch(pid, 1)).error_code == (
            ErrorCode.UNKNOWN_PRODUCER_ID
        )
