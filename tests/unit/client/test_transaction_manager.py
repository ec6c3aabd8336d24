"""The transactional producer's TransactionManager, driven through the Sender by hand.

A fake network client keeps every request; `Coordinator.pump` runs the Sender's loop and
answers each request as a coordinator and a partition leader would (or with the error a
test asks for), so the order of requests and the states in between are exact. The
stateful test compares the manager with a model of Kafka's state machine over random
sequences of calls.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafka_ref.client.accumulator import RecordAccumulator
from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.sender import Sender
from kafka_ref.client.transaction_manager import TransactionManager
from kafka_ref.client.transaction_state import (
    VALID_PREVIOUS,
    ProducerFencedError,
    State,
    TransactionAbortedError,
    TransactionStateError,
    is_transition_valid,
)
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    FindCoordinatorResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from kafka_ref.record.batch import BatchHeader
from kafka_ref.record.record import Record
from tests.unit.client.conftest import metadata_response
from tests.unit.client.test_idempotence import FakeClient, answer

pytestmark = pytest.mark.timeout(60)

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
PID = 77


def ok_response(request, error: int = 0):
    """The answer of a coordinator to a transactional request, with `error` everywhere."""
    body = request.body
    if request.api_key == ApiKey.FIND_COORDINATOR:
        return FindCoordinatorResponse(error_code=error, node_id=1, host="h", port=1)
    if request.api_key == ApiKey.INIT_PRODUCER_ID:
        return InitProducerIdResponse(error_code=error, producer_id=PID, producer_epoch=3)
    if request.api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        R = AddPartitionsToTxnResponse
        return R(
            results_by_topic_v3_and_below=[
                R.AddPartitionsToTxnTopicResult(
                    name=t.name,
                    results_by_partition=[
                        R.AddPartitionsToTxnPartitionResult(
                            partition_index=p, partition_error_code=error
                        )
                        for p in t.partitions
                    ],
                )
                for t in body.v3_and_below_topics
            ]
        )
    if request.api_key == ApiKey.ADD_OFFSETS_TO_TXN:
        return AddOffsetsToTxnResponse(error_code=error)
    if request.api_key == ApiKey.TXN_OFFSET_COMMIT:
        R = TxnOffsetCommitResponse
        return R(
            topics=[
                R.TxnOffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        R.TxnOffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=error
                        )
                        for p in t.partitions
                    ],
                )
                for t in body.topics
            ]
        )
    assert request.api_key == ApiKey.END_TXN
    return EndTxnResponse(error_code=error)


class Coordinator:
    """A Sender with a transactional manager, and the broker side that answers it."""

    def __init__(self, transactional_id: str | None = "app") -> None:
        metadata = Metadata([("h", 1)], retry_backoff_ms=0)
        metadata.update(metadata_response({"t": [1, 1]}, brokers=[(1, "h", 1)]), now_ms=0)
        self.tm = TransactionManager(transactional_id=transactional_id, retry_backoff_ms=100)
        self.accumulator = RecordAccumulator(
            linger_ms=0, retry_backoff_ms=0, transaction_manager=self.tm
        )
        self.client = FakeClient()
        self.client.add_node = lambda node: None
        self.now = 0
        self.sender = Sender(
            self.client,
            metadata,
            self.accumulator,
            acks=-1,
            retries=10,
            request_timeout_ms=1000,
            max_request_size=10**6,
            guarantee_message_order=False,
            clock=lambda: self.now,
            transaction_manager=self.tm,
        )
        self.errors: dict[ApiKey, list[int]] = {}  # the next answers' errors, per API
        self.produce_error = 0

    def send(self, tp: TopicPartition = TP0):
        """What Producer.send does around the accumulator."""
        self.tm.fail_if_not_ready_for_send()
        future = self.accumulator.append(tp, Record(b"k", b"v", 1), None, self.now).future
        self.tm.maybe_add_partition(tp)
        return future

    def pump(self, rounds: int = 30) -> list[ApiKey]:
        """Run the Sender, answering every request; the API keys sent, in order."""
        sent: list[ApiKey] = []
        for _ in range(rounds):
            before = len(self.client.sent)
            self.sender.send_producer_data(self.now)
            new = self.client.sent[before:]
            idle = self.tm.in_flight is None and not self.tm._queue
            if not new and idle and not self.accumulator.has_incomplete():
                break
            for request in new:
                sent.append(ApiKey(request.api_key))
                if request.api_key == ApiKey.PRODUCE:
                    answer(request, {TP0: self.produce_error, TP1: self.produce_error})
                else:
                    queued = self.errors.get(ApiKey(request.api_key))
                    request.complete(ok_response(request, queued.pop(0) if queued else 0))
            self.now += 150  # past any retry backoff
        return sent

    def call(self, method, *args):
        result = method(*args)
        self.pump()
        return result


@pytest.mark.spec("TXN-40")
def test_every_transition_outside_kafkas_table_is_refused_and_changes_nothing():
    for source in State:
        for target in State:
            tm = TransactionManager(transactional_id="x")
            tm.state = source
            if is_transition_valid(source, target):
                tm.transition_to(target)
                assert tm.state is target
            else:
                with pytest.raises(TransactionStateError, match="Invalid transition"):
                    tm.transition_to(target)
                assert tm.state is source
    assert VALID_PREVIOUS[State.IN_TRANSACTION] == {State.READY}
    assert VALID_PREVIOUS[State.FATAL_ERROR] == set(State)


@pytest.mark.spec("TXN-40")
def test_transactional_calls_need_a_transactional_id_and_the_right_state():
    with pytest.raises(TransactionStateError, match="non-transactional"):
        Coordinator(transactional_id=None).tm.begin_transaction()
    c = Coordinator()
    with pytest.raises(TransactionStateError, match="UNINITIALIZED to state IN_TRANSACTION"):
        c.tm.begin_transaction()
    with pytest.raises(TransactionStateError, match="Cannot call send in state UNINITIALIZED"):
        c.send()
    c.call(c.tm.initialize_transactions).wait(0)
    with pytest.raises(TransactionStateError, match="not in progress"):
        c.tm.send_offsets_to_transaction({TP0: 1}, "g")
    with pytest.raises(TransactionStateError):
        c.tm.begin_commit()
    assert c.tm.state is State.READY


@pytest.mark.spec("TXN-41")
def test_a_partition_is_added_before_its_first_batch_and_batches_are_transactional():
    c = Coordinator()
    assert c.call(c.tm.initialize_transactions) is not None
    assert [r.api_key for r in c.client.sent] == [ApiKey.FIND_COORDINATOR, ApiKey.INIT_PRODUCER_ID]
    assert c.client.sent[0].body.key_type == 1 and c.client.sent[0].body.key == "app"
    assert c.client.sent[1].body.transactional_id == "app"
    c.tm.begin_transaction()
    futures = [c.send(TP0), c.send(TP1)]
    cluster = c.sender.metadata.fetch()
    assert c.accumulator.drain(cluster, {1}, 10**6, c.now) == {}  # not in the transaction yet
    sent = c.pump()
    assert sent[:2] == [ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.PRODUCE]
    add = next(r for r in c.client.sent if r.api_key == ApiKey.ADD_PARTITIONS_TO_TXN)
    assert (add.body.v3_and_below_producer_id, add.body.v3_and_below_producer_epoch) == (PID, 3)
    produce = next(r for r in c.client.sent if r.api_key == ApiKey.PRODUCE)
    assert produce.body.transactional_id == "app"
    header = BatchHeader.parse(produce.body.topic_data[0].partition_data[0].records)
    assert header.is_transactional and header.producer_id == PID
    assert all(f.done() and f.exception() is None for f in futures)
    c.send(TP0)  # already in the transaction: no second AddPartitionsToTxn
    assert c.pump() == [ApiKey.PRODUCE]


@pytest.mark.spec("TXN-42")
def test_end_txn_waits_for_every_batch_and_an_empty_transaction_sends_none():
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    assert c.call(c.tm.begin_commit).is_done  # nothing added: ended locally
    assert ApiKey.END_TXN not in [r.api_key for r in c.client.sent]
    c.tm.begin_transaction()
    c.send(TP0)
    c.sender.send_producer_data(c.now)  # AddPartitionsToTxn in flight: no Produce with it
    assert c.client.sent[-1].api_key == ApiKey.ADD_PARTITIONS_TO_TXN
    c.sender.send_producer_data(c.now)
    assert c.client.sent[-1].api_key == ApiKey.ADD_PARTITIONS_TO_TXN
    c.client.sent[-1].complete(ok_response(c.client.sent[-1]))
    result = c.tm.begin_commit()
    c.sender.send_producer_data(c.now)
    produce = c.client.sent[-1]
    assert produce.api_key == ApiKey.PRODUCE
    c.sender.send_producer_data(c.now)  # the batch is unanswered: EndTxn must wait
    assert c.client.sent[-1] is produce and not result.is_done
    answer(produce)
    assert c.pump() == [ApiKey.END_TXN]
    assert result.is_done and c.tm.state is State.READY


@pytest.mark.spec("TXN-42")
def test_abort_fails_the_batches_never_drained():
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    c.send(TP0)
    c.pump()
    late = c.send(TP1)  # never drained: AddPartitionsToTxn for it is not even sent
    result = c.tm.begin_abort()
    assert c.pump() == [ApiKey.END_TXN]
    assert isinstance(late.exception(), TransactionAbortedError)
    assert result.is_done and result.error is None
    assert c.client.sent[-1].body.committed is False


@pytest.mark.spec("TXN-43")
def test_a_coordinator_that_moved_is_found_again_and_a_busy_one_asked_again():
    c = Coordinator()
    c.errors[ApiKey.INIT_PRODUCER_ID] = [ErrorCode.NOT_COORDINATOR]
    c.errors[ApiKey.END_TXN] = [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
    c.call(c.tm.initialize_transactions).wait(0)
    assert [r.api_key for r in c.client.sent] == [
        ApiKey.FIND_COORDINATOR,
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.FIND_COORDINATOR,
        ApiKey.INIT_PRODUCER_ID,
    ]
    c.tm.begin_transaction()
    c.send(TP0)
    c.pump()
    result = c.tm.begin_commit()
    c.sender.send_producer_data(c.now)
    c.client.sent[-1].complete(ok_response(c.client.sent[-1], ErrorCode.CONCURRENT_TRANSACTIONS))
    assert c.sender.send_producer_data(c.now) == 100  # retry.backoff.ms before the retry
    assert c.tm.state is State.COMMITTING_TRANSACTION and not result.is_done
    c.now += 100
    c.pump()
    assert [r.api_key for r in c.client.sent].count(ApiKey.END_TXN) == 3
    assert result.is_done and result.error is None and c.tm.state is State.READY


@pytest.mark.spec("TXN-44")
@pytest.mark.parametrize("code", [ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH])
def test_fencing_is_fatal(code):
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    c.send(TP0)
    c.errors[ApiKey.END_TXN] = [code]
    result = c.call(c.tm.begin_commit)
    with pytest.raises(ProducerFencedError):
        result.wait(0)
    assert c.tm.state is State.FATAL_ERROR
    for call in (c.tm.begin_transaction, c.tm.begin_abort, c.tm.initialize_transactions):
        with pytest.raises(ProducerFencedError):
            call()
    with pytest.raises(TransactionStateError) as err:
        c.send(TP0)
    assert isinstance(err.value.__cause__, ProducerFencedError)


@pytest.mark.spec("TXN-44")
def test_a_produce_answer_of_a_fenced_epoch_is_fatal():
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    future = c.send(TP0)
    c.produce_error = ErrorCode.INVALID_PRODUCER_EPOCH
    c.pump()
    assert future.exception().code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert c.tm.state is State.FATAL_ERROR
    assert isinstance(c.tm.last_error, ProducerFencedError)


@pytest.mark.spec("TXN-45")
def test_a_failed_batch_makes_the_transaction_abortable_and_a_gap_aborts_with_an_epoch_bump():
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    c.send(TP0)
    c.produce_error = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # the first batch: a real gap
    assert c.pump().count(ApiKey.PRODUCE) == 1  # not retried under a local epoch bump
    c.produce_error = 0
    assert c.tm.state is State.ABORTABLE_ERROR and c.tm.epoch_bump_required
    with pytest.raises(KafkaError) as err:
        c.tm.begin_commit()
    assert err.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    before = len(c.client.sent)
    c.call(c.tm.begin_abort).wait(0)
    bump = [r for r in c.client.sent[before:]]
    assert [r.api_key for r in bump] == [ApiKey.INIT_PRODUCER_ID]  # instead of EndTxn
    assert (bump[0].body.producer_id, bump[0].body.producer_epoch) == (PID, 3)
    assert c.tm.state is State.READY and not c.tm.epoch_bump_required
    c.tm.begin_transaction()
    c.send(TP0)
    c.pump()
    produce = [r for r in c.client.sent if r.api_key == ApiKey.PRODUCE][-1]
    assert (
        BatchHeader.parse(produce.body.topic_data[0].partition_data[0].records).base_sequence == 0
    )


@pytest.mark.spec("TXN-46")
def test_offsets_go_to_the_transaction_then_to_the_group_coordinator():
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    before = len(c.client.sent)
    result = c.call(c.tm.send_offsets_to_transaction, {TP0: 42}, "copier")
    requests = c.client.sent[before:]
    assert [r.api_key for r in requests] == [
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.FIND_COORDINATOR,
        ApiKey.TXN_OFFSET_COMMIT,
    ]
    assert requests[0].body.group_id == "copier"
    assert (requests[1].body.key, requests[1].body.key_type) == ("copier", 0)
    commit = requests[2].body
    assert (commit.group_id, commit.producer_id) == ("copier", PID)
    assert commit.topics[0].partitions[0].committed_offset == 42
    assert result.is_done and result.error is None
    c.call(c.tm.begin_commit).wait(0)  # offsets alone make a transaction: EndTxn is sent
    assert c.client.sent[-1].api_key == ApiKey.END_TXN


class TransactionalProducerMachine(RuleBasedStateMachine):
    """Random calls against a model of which call each state allows (TXN-40)."""

    ALLOWED = {
        "init": {State.UNINITIALIZED},
        "begin": {State.READY},
        "commit": {State.IN_TRANSACTION},
        "abort": {State.IN_TRANSACTION, State.ABORTABLE_ERROR},
        "offsets": {State.IN_TRANSACTION},
        "send": {State.IN_TRANSACTION},
    }
    AFTER = {
        "init": State.READY,
        "begin": State.IN_TRANSACTION,
        "commit": State.READY,
        "abort": State.READY,
        "offsets": State.IN_TRANSACTION,
        "send": State.IN_TRANSACTION,
    }

    def __init__(self) -> None:
        super().__init__()
        self.c = Coordinator()
        self.model = State.UNINITIALIZED

    def _do(self, name: str, call) -> None:
        if self.model in self.ALLOWED[name]:
            call()
            self.c.pump()
            self.model = self.AFTER[name]
        else:
            with pytest.raises(KafkaError):
                call()
            self.c.pump()

    @rule()
    def init(self) -> None:
        self._do("init", self.c.tm.initialize_transactions)

    @rule()
    def begin(self) -> None:
        self._do("begin", self.c.tm.begin_transaction)

    @rule()
    def commit(self) -> None:
        self._do("commit", self.c.tm.begin_commit)

    @rule()
    def abort(self) -> None:
        self._do("abort", self.c.tm.begin_abort)

    @rule(offset=st.integers(0, 100))
    def offsets(self, offset: int) -> None:
        self._do("offsets", lambda: self.c.tm.send_offsets_to_transaction({TP0: offset}, "g"))

    @rule(tp=st.sampled_from([TP0, TP1]))
    def send(self, tp: TopicPartition) -> None:
        self._do("send", lambda: self.c.send(tp))

    @precondition(lambda self: self.model is State.IN_TRANSACTION)
    @rule()
    def send_fails(self) -> None:
        self.c.produce_error = ErrorCode.INVALID_RECORD
        self.c.send(TP0)
        self.c.pump()
        self.c.produce_error = 0
        self.model = State.ABORTABLE_ERROR

    @invariant()
    def state_is_the_models(self) -> None:
        assert self.c.tm.state is self.model


TransactionalProducerMachine.TestCase.settings = settings(max_examples=40, deadline=None)
test_random_calls_follow_the_state_machine = pytest.mark.spec("TXN-40")(
    TransactionalProducerMachine.TestCase
)


@pytest.mark.spec("TXN-44")
def test_a_call_waiting_when_a_produce_answer_fences_the_producer_gets_the_fencing():
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    c.send(TP0)
    c.sender.send_producer_data(c.now)  # AddPartitionsToTxn
    c.client.sent[-1].complete(ok_response(c.client.sent[-1]))
    c.sender.send_producer_data(c.now)  # the Produce, not answered yet
    produce = c.client.sent[-1]
    result = c.tm.send_offsets_to_transaction({TP1: 5}, "g")
    c.sender.send_producer_data(c.now)  # AddOffsetsToTxn goes while the Produce is out
    add_offsets = c.client.sent[-1]
    assert add_offsets.api_key == ApiKey.ADD_OFFSETS_TO_TXN
    answer(produce, {TP0: ErrorCode.INVALID_PRODUCER_EPOCH})
    add_offsets.complete(ok_response(add_offsets))
    with pytest.raises(ProducerFencedError):
        result.wait(0)


@pytest.mark.spec("TXN-41")
def test_the_producer_raises_on_misuse_instead_of_failing_a_future():
    from kafka_ref.client import Producer
    from kafka_ref.client.producer import ProducerConfigError

    with pytest.raises(ProducerConfigError, match="without also enabling idempotence"):
        Producer("127.0.0.1:1", transactional_id="x", enable_idempotence=False)
    with Producer("127.0.0.1:1", transactional_id="x", max_block_ms=100) as p:
        assert p.enable_idempotence and p.transaction_manager.is_transactional
        with pytest.raises(TransactionStateError, match="Cannot call send in state UNINITIALIZED"):
            p.send("t", b"v")
    with Producer("127.0.0.1:1", max_block_ms=100) as p, pytest.raises(TransactionStateError):
        p.begin_transaction()


@pytest.mark.spec("TXN-43")
def test_a_lost_connection_finds_the_coordinator_again_and_retries():
    from kafka_ref.client.connection import NetworkError

    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    c.send(TP0)
    c.pump()
    result = c.tm.begin_commit()
    c.sender.send_producer_data(c.now)
    c.client.sent[-1].complete(error=NetworkError("connection reset"))
    before = len(c.client.sent)
    c.now += 100
    c.pump()
    assert [r.api_key for r in c.client.sent[before:]] == [ApiKey.FIND_COORDINATOR, ApiKey.END_TXN]
    assert result.is_done and result.error is None


@pytest.mark.spec("TXN-43")
def test_the_first_add_of_a_transaction_retries_concurrent_transactions_sooner():
    c = Coordinator()
    c.call(c.tm.initialize_transactions)
    c.tm.begin_transaction()
    c.send(TP0)
    c.sender.send_producer_data(c.now)
    add = c.client.sent[-1]
    add.complete(ok_response(add, ErrorCode.CONCURRENT_TRANSACTIONS))  # markers still going
    assert c.sender.send_producer_data(c.now) == 20  # not retry.backoff.ms (100)
    c.now += 20
    c.sender.send_producer_data(c.now)
    assert c.client.sent[-1].api_key == ApiKey.ADD_PARTITIONS_TO_TXN
    c.client.sent[-1].complete(ok_response(c.client.sent[-1]))
    c.send(TP1)  # a later add in the same transaction backs off as any request does
    c.sender.send_producer_data(c.now)
    add = c.client.sent[-1]
    assert add.api_key == ApiKey.ADD_PARTITIONS_TO_TXN and not add.done
    add.complete(ok_response(add, ErrorCode.CONCURRENT_TRANSACTIONS))
    assert c.sender.send_producer_data(c.now) == 100
