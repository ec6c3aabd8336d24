"""The idempotent producer: InitProducerId, sequences, in-flight limit, retries, epoch bumps.

Most tests drive the Sender by hand against a fake network client (every request is kept
and answered by the test, so interleavings are exact); the last ones run a whole `Producer`
against the fake broker of conftest.py, and a randomized run meets lost responses, leader
errors and lost producer state against a simulated partition leader.
"""

from __future__ import annotations

import random
import threading

import pytest

from kafka_ref.client.accumulator import RecordAccumulator
from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.connection import ClientRequest, NetworkError
from kafka_ref.client.idempotence import (
    EPOCH_MAX,
    INT32_MAX,
    ProducerIdAndEpoch,
    increment_sequence,
)
from kafka_ref.client.producer import Producer, ProducerConfigError, idempotence_enabled
from kafka_ref.client.sender import Sender
from kafka_ref.client.transaction_manager import TransactionManager
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey, encode_response
from kafka_ref.protocol.messages import InitProducerIdResponse, ProduceResponse
from kafka_ref.record.batch import BatchHeader, RecordBatch
from kafka_ref.record.record import Record
from tests.unit.client.conftest import metadata_response

pytestmark = pytest.mark.timeout(30)

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
PID = 4242


class FakeClient:
    reconnect_backoff_ms = 50

    def __init__(self) -> None:
        self.sent: list[ClientRequest] = []

    def ready(self, node: int) -> bool:
        return True

    def least_loaded_node(self) -> int:
        return 1

    def send(self, node, api_key, body, *, callback=None, expect_response=True):
        request = ClientRequest(node, api_key, 0, len(self.sent), body, callback)
        self.sent.append(request)
        return request

    def poll(self, timeout_ms):
        return []

    def in_flight_count(self, node=None):
        return 0

    def wakeup(self):
        pass

    def close(self):
        pass

    def produces(self) -> list[ClientRequest]:
        return [r for r in self.sent if r.api_key == ApiKey.PRODUCE]


def setup(retries=10, batch_size=16_384, delivery_timeout_ms=120_000):
    metadata = Metadata([("h", 1)], retry_backoff_ms=0)
    metadata.update(metadata_response({"t": [1, 1]}, brokers=[(1, "h", 1)]), now_ms=0)
    tm = TransactionManager(retry_backoff_ms=100)
    accumulator = RecordAccumulator(
        linger_ms=0,
        retry_backoff_ms=0,
        batch_size=batch_size,
        delivery_timeout_ms=delivery_timeout_ms,
        transaction_manager=tm,
    )
    client = FakeClient()
    sender = Sender(
        client,
        metadata,
        accumulator,
        acks=-1,
        retries=retries,
        request_timeout_ms=1000,
        max_request_size=10**6,
        guarantee_message_order=False,
        clock=lambda: 0,
        transaction_manager=tm,
    )
    return sender, client, accumulator, tm


def init(sender, client, pid=PID, epoch=0, error=0):
    sender.send_producer_data(now=0)
    request = client.sent[-1]
    assert request.api_key == ApiKey.INIT_PRODUCER_ID
    request.complete(
        InitProducerIdResponse(
            throttle_time_ms=0, error_code=error, producer_id=pid, producer_epoch=epoch
        )
    )


def append(accumulator, tp, n=1):
    return [
        accumulator.append(tp, Record(b"k", b"v%d" % i, 1000 + i), None, 0).future for i in range(n)
    ]


def batches(request: ClientRequest) -> dict[TopicPartition, BatchHeader]:
    return {
        TopicPartition(t.name, p.index): BatchHeader.parse(p.records)
        for t in request.body.topic_data
        for p in t.partition_data
    }


def answer(request: ClientRequest, errors=None, base=0):
    errors = errors or {}
    request.complete(
        ProduceResponse(
            responses=[
                ProduceResponse.TopicProduceResponse(
                    name=t.name,
                    partition_responses=[
                        ProduceResponse.PartitionProduceResponse(
                            index=p.index,
                            error_code=errors.get(TopicPartition(t.name, p.index), 0),
                            base_offset=base,
                            log_append_time_ms=-1,
                            log_start_offset=-1,
                        )
                        for p in t.partition_data
                    ],
                )
                for t in request.body.topic_data
            ],
            throttle_time_ms=0,
        )
    )


def send_round(sender, client) -> ClientRequest | None:
    """One sender loop; the Produce request it sent, if any."""
    before = len(client.sent)
    sender.send_producer_data(now=0)
    new = [r for r in client.sent[before:] if r.api_key == ApiKey.PRODUCE]
    return new[0] if new else None


@pytest.mark.spec("IPROD-1")
def test_init_producer_id_comes_before_the_first_batch():
    sender, client, accumulator, _tm = setup()
    future = append(accumulator, TP0)[0]
    sender.send_producer_data(now=0)
    sender.send_producer_data(now=0)  # still waiting: no second InitProducerId, no Produce
    assert [r.api_key for r in client.sent] == [ApiKey.INIT_PRODUCER_ID]
    assert client.sent[0].body.transactional_id is None
    client.sent[0].complete(InitProducerIdResponse(error_code=0, producer_id=PID, producer_epoch=0))
    request = send_round(sender, client)
    header = batches(request)[TP0]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (PID, 0, 0)
    answer(request, base=10)
    assert future.result().offset == 10


@pytest.mark.spec("IPROD-1")
def test_init_producer_id_retries_retriable_errors_and_fails_records_on_fatal_ones():
    sender, client, accumulator, tm = setup()
    init(sender, client, pid=-1, epoch=-1, error=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert not tm.has_producer_id and sender.send_producer_data(now=0) == 100  # backoff
    assert sender.send_producer_data(now=100) == 1000  # the retry is in flight
    client.sent[-1].complete(error=NetworkError("gone"))
    assert sender.send_producer_data(now=200) and len(client.sent) == 3
    future = append(accumulator, TP0)[0]
    client.sent[-1].complete(
        InitProducerIdResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1)
    )
    sender.send_producer_data(now=300)
    assert future.exception().code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert not client.produces()


@pytest.mark.spec("IPROD-2")
def test_sequences_are_assigned_per_partition_in_drain_order():
    sender, client, accumulator, tm = setup()
    init(sender, client)
    append(accumulator, TP0, 3)
    append(accumulator, TP1, 2)
    first = send_round(sender, client)
    assert {tp: h.base_sequence for tp, h in batches(first).items()} == {TP0: 0, TP1: 0}
    append(accumulator, TP0, 4)
    second = send_round(sender, client)  # pipelined: the first is not answered yet
    assert batches(second)[TP0].base_sequence == 3
    append(accumulator, TP0, 1)
    answer(first)
    answer(second)
    assert batches(send_round(sender, client))[TP0].base_sequence == 7
    assert tm.entry(TP0).next_sequence == 8 and tm.entry(TP0).last_acked_sequence == 6


@pytest.mark.spec("IPROD-2")
def test_sequences_wrap_at_int32_max():
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    sender, client, accumulator, tm = setup()
    init(sender, client)
    tm.entry(TP0).next_sequence = INT32_MAX - 1
    append(accumulator, TP0, 3)
    request = send_round(sender, client)
    assert batches(request)[TP0].base_sequence == INT32_MAX - 1
    assert tm.entry(TP0).next_sequence == 1
    answer(request)
    assert tm.entry(TP0).last_acked_sequence == 0


@pytest.mark.spec("IPROD-3")
def test_a_retried_batch_keeps_its_producer_id_epoch_and_sequence():
    sender, client, accumulator, tm = setup()
    init(sender, client)
    append(accumulator, TP0, 2)
    send_round(sender, client)
    append(accumulator, TP0, 2)
    first = send_round(sender, client)
    assert batches(first)[TP0].base_sequence == 2
    answer(client.produces()[0])
    answer(first, {TP0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    retry = send_round(sender, client)
    assert retry.body.topic_data[0].partition_data[0].records == (
        first.body.topic_data[0].partition_data[0].records
    )
    assert tm.producer_id_and_epoch == ProducerIdAndEpoch(PID, 0)


@pytest.mark.spec("IPROD-4")
def test_at_most_five_batches_per_partition_are_in_flight():
    sender, client, accumulator, _tm = setup(batch_size=1)  # one record per batch
    init(sender, client)
    append(accumulator, TP0, 7)
    for _ in range(7):
        send_round(sender, client)
    assert [batches(r)[TP0].base_sequence for r in client.produces()] == [0, 1, 2, 3, 4]
    answer(client.produces()[0])
    assert batches(send_round(sender, client))[TP0].base_sequence == 5
    assert send_round(sender, client) is None


@pytest.mark.spec("IPROD-4")
def test_retries_go_one_at_a_time_in_sequence_order_before_new_batches():
    sender, client, accumulator, tm = setup(batch_size=1)
    init(sender, client)
    futures = append(accumulator, TP0, 3)
    sent = [send_round(sender, client) for _ in range(3)]
    late = append(accumulator, TP0, 1)[0]  # queued behind the retries
    answer(sent[0], {TP0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    # the broker saw a gap for the two behind it; answers may even come in any order
    answer(sent[2], {TP0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    answer(sent[1], {TP0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    assert not tm.epoch_bump_required  # not the next expected sequence: no real gap
    order = []
    for base in (100, 101):
        request = send_round(sender, client)
        assert send_round(sender, client) is None  # one retry at a time
        order.append(batches(request)[TP0].base_sequence)
        answer(request, base=base)
    last_retry, new = send_round(sender, client), send_round(sender, client)
    order += [batches(last_retry)[TP0].base_sequence, batches(new)[TP0].base_sequence]
    assert order == [0, 1, 2, 3]  # the new batch may follow the last retry at once
    answer(last_retry, base=102)
    answer(new, base=103)
    assert [f.result().offset for f in [*futures, late]] == [100, 101, 102, 103]
    assert tm.producer_id_and_epoch.epoch == 0


@pytest.mark.spec("IPROD-5")
@pytest.mark.parametrize(
    "error", [ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID]
)
def test_a_real_gap_or_an_unknown_producer_bumps_the_epoch_and_renumbers(error):
    sender, client, accumulator, tm = setup(batch_size=1)
    init(sender, client)
    append(accumulator, TP0, 3)
    append(accumulator, TP1, 1)
    sent = [send_round(sender, client) for _ in range(3)]
    answer(sent[0])  # TP0 seq 0 and TP1 seq 0 acked
    append(accumulator, TP1, 1)
    answer(sent[1], {TP0: error})  # seq 1 is the next expected one: a real gap
    assert tm.epoch_bump_required
    retry = send_round(sender, client)  # the bump happens at the top of the loop
    assert tm.producer_id_and_epoch == ProducerIdAndEpoch(PID, 1)
    header = batches(retry)[TP0]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (PID, 1, 0)
    # TP1 has nothing in flight: its next batch starts over at 0 in the new epoch
    assert (batches(retry)[TP1].producer_epoch, batches(retry)[TP1].base_sequence) == (1, 0)
    # the old attempt of seq 2, renumbered to 1, fails too; it is retried after the first
    answer(sent[2], {TP0: error})
    assert not tm.epoch_bump_required
    answer(retry)
    last = send_round(sender, client)
    assert (batches(last)[TP0].producer_epoch, batches(last)[TP0].base_sequence) == (1, 1)


@pytest.mark.spec("IPROD-5")
def test_unknown_producer_id_behind_a_rejected_batch_is_retried_without_a_bump():
    sender, client, accumulator, tm = setup(batch_size=1)
    init(sender, client)
    append(accumulator, TP0, 2)
    first, second = send_round(sender, client), send_round(sender, client)
    answer(first, {TP0: ErrorCode.NOT_LEADER_OR_FOLLOWER})  # not written
    answer(second, {TP0: ErrorCode.UNKNOWN_PRODUCER_ID})  # so the broker knows nothing
    assert not tm.epoch_bump_required
    retried = [send_round(sender, client) for _ in range(2)]
    assert [batches(r)[TP0].base_sequence for r in retried if r] == [0]


@pytest.mark.spec("IPROD-5")
def test_an_attempt_from_before_a_bump_that_succeeds_renumbers_the_rest_again():
    sender, client, accumulator, tm = setup(batch_size=1)
    init(sender, client)
    append(accumulator, TP0, 2)
    first, second = send_round(sender, client), send_round(sender, client)
    answer(first, {TP0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})  # a real gap: bump
    sender.send_producer_data(now=0)  # epoch 1: both renumbered, the first is resent
    resent = batches(client.produces()[-1])[TP0]
    assert (resent.producer_epoch, resent.base_sequence) == (1, 0)
    assert (tm.producer_id_and_epoch.epoch, tm.entry(TP0).next_sequence) == (1, 2)
    answer(second)  # but the second's epoch-0 attempt was written
    assert tm.epoch_bump_required
    answer(client.produces()[-1], {TP0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    header = batches(send_round(sender, client))[TP0]
    assert (header.producer_epoch, header.base_sequence) == (2, 0)


@pytest.mark.spec("IPROD-4")
def test_answers_out_of_order_never_move_the_last_acked_sequence_back():
    sender, client, accumulator, tm = setup(batch_size=1)
    init(sender, client)
    append(accumulator, TP0, 2)
    first, second = send_round(sender, client), send_round(sender, client)
    answer(first, {TP0: ErrorCode.NOT_LEADER_OR_FOLLOWER})  # written, as it turns out
    answer(second, base=1)
    assert tm.entry(TP0).last_acked_sequence == 1
    answer(send_round(sender, client), base=0)  # the broker's duplicate answer
    assert tm.entry(TP0).last_acked_sequence == 1 and not tm.epoch_bump_required


@pytest.mark.spec("IPROD-5")
def test_other_partitions_finish_their_old_epoch_batches_first():
    sender, client, accumulator, tm = setup(batch_size=1)
    init(sender, client)
    append(accumulator, TP0, 1)
    append(accumulator, TP1, 1)
    first = send_round(sender, client)
    append(accumulator, TP1, 1)
    answer(first, {TP0: ErrorCode.UNKNOWN_PRODUCER_ID, TP1: ErrorCode.NOT_ENOUGH_REPLICAS})
    retry = send_round(sender, client)
    # TP1's retry keeps epoch 0 / seq 0; its new batch waits until that is done
    assert {tp: (h.producer_epoch, h.base_sequence) for tp, h in batches(retry).items()} == {
        TP0: (1, 0),
        TP1: (0, 0),
    }
    assert send_round(sender, client) is None
    answer(retry)
    assert {tp: h.producer_epoch for tp, h in batches(send_round(sender, client)).items()} == {
        TP1: 1
    }
    assert tm.entry(TP1).next_sequence == 1


@pytest.mark.spec("IPROD-5")
def test_a_sequenced_batch_that_fails_for_good_bumps_the_epoch():
    sender, client, accumulator, _tm = setup()
    init(sender, client)
    future = append(accumulator, TP0)[0]
    answer(send_round(sender, client), {TP0: ErrorCode.MESSAGE_TOO_LARGE})
    assert future.exception().code == ErrorCode.MESSAGE_TOO_LARGE
    append(accumulator, TP0)
    header = batches(send_round(sender, client))[TP0]
    assert (header.producer_epoch, header.base_sequence) == (1, 0)


@pytest.mark.spec("IPROD-5")
def test_an_epoch_at_its_maximum_gets_a_new_producer_id():
    sender, client, accumulator, _tm = setup()
    init(sender, client, epoch=EPOCH_MAX)
    append(accumulator, TP0)
    answer(send_round(sender, client), {TP0: ErrorCode.UNKNOWN_PRODUCER_ID})
    assert send_round(sender, client) is None
    init(sender, client, pid=PID + 1, epoch=0)
    header = batches(send_round(sender, client))[TP0]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (PID + 1, 0, 0)


@pytest.mark.spec("IPROD-6")
def test_duplicate_sequence_number_is_a_success():
    sender, client, accumulator, tm = setup()
    init(sender, client)
    future = append(accumulator, TP0)[0]
    answer(send_round(sender, client), {TP0: ErrorCode.DUPLICATE_SEQUENCE_NUMBER}, base=-1)
    assert future.result().offset == -1
    assert not accumulator.has_incomplete() and not tm.epoch_bump_required


@pytest.mark.spec("IPROD-7")
@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"acks": 1}, "acks to all"),
        ({"acks": 0}, "acks to all"),
        ({"retries": 0}, "retries to non-zero"),
        ({"max_in_flight": 6}, "at most 5"),
    ],
)
def test_explicit_idempotence_rejects_conflicting_settings(settings, message):
    with pytest.raises(ProducerConfigError, match=message):
        Producer("127.0.0.1:1", enable_idempotence=True, **settings)


@pytest.mark.spec("IPROD-7")
def test_idempotence_is_on_by_default_unless_a_setting_conflicts():
    assert idempotence_enabled(None, -1, 2**31 - 1, 5)
    assert not idempotence_enabled(None, 1, 2**31 - 1, 5)
    assert not idempotence_enabled(None, -1, 0, 5)
    assert not idempotence_enabled(False, -1, 5, 5)
    assert issubclass(ProducerConfigError, KafkaError)
    assert issubclass(ProducerConfigError, ValueError)


# -- a whole Producer against the fake broker ---------------------------------------------


class IdempotentBroker:
    """Answers Metadata, InitProducerId and Produce; the first Produce gets `first_error`."""

    def __init__(self, fake_broker, first_error: int = 0) -> None:
        self.first_error = first_error
        self.produced: list[BatchHeader] = []
        self.lock = threading.Lock()
        self.broker = fake_broker(self.handle)

    def handle(self, header, body):
        key, version = header.request_api_key, header.request_api_version
        cid = header.correlation_id
        if key == ApiKey.METADATA:
            response = metadata_response({"t": [1]}, brokers=[(1, "127.0.0.1", self.broker.port)])
        elif key == ApiKey.INIT_PRODUCER_ID:
            response = InitProducerIdResponse(error_code=0, producer_id=PID, producer_epoch=0)
        elif key == ApiKey.PRODUCE:
            part = body.topic_data[0].partition_data[0]
            with self.lock:
                self.produced.append(BatchHeader.parse(part.records))
                error = self.first_error if len(self.produced) == 1 else 0
            response = ProduceResponse(
                responses=[
                    ProduceResponse.TopicProduceResponse(
                        name="t",
                        partition_responses=[
                            ProduceResponse.PartitionProduceResponse(
                                index=0, error_code=error, base_offset=0, log_start_offset=-1
                            )
                        ],
                    )
                ],
            )
        else:
            return None
        return [encode_response(key, version, cid, response)]


@pytest.mark.spec("IPROD-1", "IPROD-2")
def test_a_producer_asks_for_its_id_and_numbers_its_batches(fake_broker):
    broker = IdempotentBroker(fake_broker)
    with Producer(f"127.0.0.1:{broker.broker.port}", linger_ms=0, retry_backoff_ms=10) as p:
        assert p.enable_idempotence
        for i in range(3):
            p.send("t", b"v%d" % i).result(timeout=10)
    keys = [h.request_api_key for h, _ in broker.broker.requests]
    assert ApiKey.INIT_PRODUCER_ID in keys
    assert keys.index(ApiKey.INIT_PRODUCER_ID) < keys.index(ApiKey.PRODUCE)
    assert [(h.producer_id, h.base_sequence) for h in broker.produced] == [
        (PID, 0),
        (PID, 1),
        (PID, 2),
    ]


@pytest.mark.spec("IPROD-5")
def test_a_producer_bumps_its_epoch_after_unknown_producer_id(fake_broker):
    broker = IdempotentBroker(fake_broker, first_error=ErrorCode.UNKNOWN_PRODUCER_ID)
    with Producer(f"127.0.0.1:{broker.broker.port}", linger_ms=0, retry_backoff_ms=10) as p:
        assert p.send("t", b"v").result(timeout=10).offset == 0
    assert [(h.producer_epoch, h.base_sequence) for h in broker.produced] == [(0, 0), (1, 0)]


# -- a randomized run against a simulated partition leader ----------------------------------


class SimulatedLeader:
    """Kafka's per-partition producer state, in miniature: last five batches, epochs, gaps."""

    def __init__(self) -> None:
        self.log: dict[TopicPartition, list[bytes]] = {}
        self.state: dict[TopicPartition, tuple[int, int, list[tuple[int, int]]]] = {}
        self.seen: dict[str, int] = {}  # what happened, to check the run exercised it

    def append(self, tp: TopicPartition, records: bytes) -> tuple[int, int]:
        code, offset, what = self._append(tp, records)
        self.seen[what] = self.seen.get(what, 0) + 1
        return code, offset

    def _append(self, tp: TopicPartition, records: bytes) -> tuple[int, int, str]:
        header = BatchHeader.parse(records)
        epoch, seq, count = header.producer_epoch, header.base_sequence, header.records_count
        log = self.log.setdefault(tp, [])
        known = self.state.get(tp)
        if known is None or epoch > known[0]:
            if seq != 0 and known is None:
                return ErrorCode.UNKNOWN_PRODUCER_ID, -1, "unknown producer"
            if seq != 0:
                return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, "out of order"
            known = (epoch, -1, [])
        elif epoch < known[0]:
            return ErrorCode.INVALID_PRODUCER_EPOCH, -1, "old epoch"
        for first, offset in known[2]:
            if first == seq:  # a duplicate: the original offset
                return ErrorCode.NO_ERROR, offset, "duplicate"
        if seq != known[1] + 1:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, "out of order"
        offset = len(log)
        log.extend(r.value for r in RecordBatch(records).records())
        self.state[tp] = (epoch, seq + count - 1, [*known[2][-4:], (seq, offset)])
        return ErrorCode.NO_ERROR, offset, "appended"


def respond(request: ClientRequest, results: dict[TopicPartition, tuple[int, int]]) -> None:
    partitions = [
        ProduceResponse.PartitionProduceResponse(
            index=tp.partition, error_code=code, base_offset=offset, log_start_offset=-1
        )
        for tp, (code, offset) in results.items()
    ]
    request.complete(
        ProduceResponse(
            responses=[
                ProduceResponse.TopicProduceResponse(name="t", partition_responses=partitions)
            ]
        )
    )


@pytest.mark.spec("IPROD-8", "IPROD-4", "IPROD-5")
@pytest.mark.parametrize("seed", range(8))
def test_lost_responses_leader_errors_and_lost_state_never_duplicate_or_reorder(seed):
    """Random sends to two partitions; each round the sender drains, then the leader answers a
    random prefix of the outstanding requests (in order, others stay in flight). Faults: a
    lost connection fails the rest of the round's requests, the first of them possibly after
    the leader appended it (a lost response); NOT_LEADER_OR_FOLLOWER per partition; and, when
    everything is acknowledged, the leader forgetting the producer (UNKNOWN_PRODUCER_ID)."""
    rng = random.Random(seed)
    sender, client, accumulator, tm = setup(retries=10**6, batch_size=60)
    leader = SimulatedLeader()
    sent_values: dict[TopicPartition, list[bytes]] = {TP0: [], TP1: []}
    futures = []
    answered = 0
    for step in range(400):
        if step < 300:
            for _ in range(rng.randrange(3)):
                tp = rng.choice([TP0, TP1])
                value = b"%d-%d" % (tp.partition, len(sent_values[tp]))
                sent_values[tp].append(value)
                future = accumulator.append(tp, Record(None, value, 0), None, 0).future
                futures.append((future, value))
        sender.send_producer_data(now=0)
        if client.sent and client.sent[0].api_key == ApiKey.INIT_PRODUCER_ID and not answered:
            init_request = client.sent[0]
            init_request.complete(InitProducerIdResponse(error_code=0, producer_id=PID))
            answered = 1
        pending = [r for r in client.sent[answered:] if not r.done]
        if pending and rng.random() < 0.05:  # the connection breaks: every request fails,
            for request in pending[: rng.randrange(len(pending) + 1)]:  # some were written
                for t in request.body.topic_data:
                    for p in t.partition_data:
                        leader.append(TopicPartition(t.name, p.index), p.records)
            for request in pending:
                request.complete(error=NetworkError("connection lost"))
            pending = []
        for request in pending[: rng.randrange(len(pending) + 1)]:  # in order, some stay
            results = {}
            for t in request.body.topic_data:
                for p in t.partition_data:
                    tp = TopicPartition(t.name, p.index)
                    if rng.random() < 0.05:
                        results[tp] = (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
                    else:
                        results[tp] = leader.append(tp, p.records)
            respond(request, results)
        idle = all(r.done for r in client.sent) and not accumulator.has_incomplete()
        if idle and rng.random() < 0.2:  # the leader forgets an idle producer (expiry)
            leader.state.pop(rng.choice([TP0, TP1]), None)
    for _ in range(200):  # drain what is left without faults
        if not accumulator.has_incomplete():
            break
        sender.send_producer_data(now=0)
        for request in [r for r in client.sent if not r.done]:
            answer_with = {}
            for t in request.body.topic_data:
                for p in t.partition_data:
                    tp = TopicPartition(t.name, p.index)
                    answer_with[tp] = leader.append(tp, p.records)
            respond(request, answer_with)
    for tp in (TP0, TP1):
        assert leader.log.get(tp, []) == sent_values[tp]  # once each, in send order
    for future, value in futures:  # each future reports where its record is
        metadata = future.result(timeout=0)
        assert (
            leader.log[TopicPartition(metadata.topic, metadata.partition)][metadata.offset] == value
        )
    # the run did meet duplicates, gaps behind failed batches and lost producer state
    assert {"duplicate", "out of order", "unknown producer"} <= set(leader.seen)
    assert tm.producer_id_and_epoch.epoch > 0
