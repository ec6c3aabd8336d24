"""The Sender: the producer's background thread that turns batches into Produce requests.

The application thread only appends to the accumulator. One I/O thread, the **Sender**
(Kafka's `org.apache.kafka.clients.producer.internals.Sender`), does all the talking, in a
loop (`run_once`):

1. ask the accumulator which brokers lead a partition with a sendable batch (`ready`);
   topics whose leader is unknown trigger a metadata refresh;
2. keep the brokers the network client can send to now (connected, fewer than
   `max.in.flight.requests.per.connection` requests waiting);
3. `drain` one batch per partition for each of them and send **one Produce request per
   broker** holding all its partitions' batches (acks and timeout from the config);
4. fail batches that sat in the accumulator past `delivery.timeout.ms`;
5. `poll` the network client: wait for responses until the next batch can become ready
   (linger.ms) or a `wakeup()` from `send()`.

A Produce response carries an error code per partition. Its batch is then

* **done** on NO_ERROR: every record's future gets its offset, base offset + index;
* **retried** on a *retriable* error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
  REQUEST_TIMED_OUT, a lost connection...) while it has attempts left (`retries`) and
  time left (`delivery.timeout.ms`): back to the front of its queue, to leave again after
  `retry.backoff.ms`. Errors that mean "the metadata is stale" (NOT_LEADER_OR_FOLLOWER,
  UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE) also request a metadata refresh, so the
  retry goes to the new leader;
* **failed** otherwise (MESSAGE_TOO_LARGE, INVALID_RECORD, ...): the futures get the error.

With `acks=0` the broker sends no response at all; batches complete as soon as the request
is written, with offset -1. With more than one request in flight, a retried batch can land
after a later one (reordering); `max_in_flight=1` prevents it by *muting* a partition while
its batch is in flight. The idempotent producer removes the need for that: with a
`TransactionManager` (transaction_manager.py) the sender applies epoch bumps at the top of
each loop, then sends the manager's next coordinator request, if any - InitProducerId
before any batch is drained; for a transactional producer also FindCoordinator,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn - one at a time and with no
Produce while it is in flight (Kafka's `maybeSendAndPollTransactionalRequest`). It lets the
manager decide which errors to retry, and treats DUPLICATE_SEQUENCE_NUMBER as success.

Spec rules: CLIENT-7, CLIENT-8, CLIENT-9, CLIENT-10 (spec/client.md);
IPROD-1, IPROD-5, IPROD-6 (spec/idempotent_producer.md); TXN-42 (spec/transactions.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_ref.client.accumulator import RecordAccumulator
from kafka_ref.client.cluster_view import INVALIDATES_METADATA, Metadata, error_code
from kafka_ref.client.connection import ClientRequest
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.client.producer_batch import ProducerBatch
from kafka_ref.client.transaction_state import TransactionAbortedError
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import ProduceRequest

if TYPE_CHECKING:
    from kafka_ref.client.transaction_manager import TransactionManager

log = logging.getLogger("kafka_ref.client")
_SUCCESS = (ErrorCode.NO_ERROR, ErrorCode.DUPLICATE_SEQUENCE_NUMBER)


class DeliveryTimeoutError(KafkaError):
    """A batch did not complete within delivery.timeout.ms (Kafka's TimeoutException)."""

    code = ErrorCode.REQUEST_TIMED_OUT


class Sender(threading.Thread):
    """Drains the accumulator into Produce requests, one per leader, and handles answers."""

    def __init__(
        self,
        client: NetworkClient,
        metadata: Metadata,
        accumulator: RecordAccumulator,
        *,
        acks: int,
        retries: int,
        request_timeout_ms: int,
        max_request_size: int,
        guarantee_message_order: bool,
        name: str = "kafka-producer-network-thread",
        clock: Callable[[], int] = now_ms,
        transaction_manager: TransactionManager | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.client, self.metadata, self.accumulator = client, metadata, accumulator
        self.acks, self.retries = acks, retries
        self.request_timeout_ms, self.max_request_size = request_timeout_ms, max_request_size
        self.guarantee_message_order = guarantee_message_order
        self.clock = clock  # monotonic ms
        self.transaction_manager = transaction_manager
        self.running = True
        self.force_close = False

    def run(self) -> None:
        while self.running:
            self._run_once_safely()
        # close(): send what is left, unless forced (Kafka: the same two loops)
        while not self.force_close and (
            self.accumulator.has_undrained() or self.client.in_flight_count() > 0
        ):
            self._run_once_safely()
        if self.force_close:
            self.accumulator.abort_incomplete(KafkaError("producer closed forcefully"))
        self.client.close()

    def _run_once_safely(self) -> None:
        try:
            self.run_once()
        except Exception:  # keep the thread alive: a dead sender loses every future
            log.exception("uncaught error in the producer's sender thread")

    def initiate_close(self) -> None:
        self.accumulator.close()
        self.running = False
        self.wakeup()

    def wakeup(self) -> None:
        self.client.wakeup()

    def run_once(self) -> None:
        poll_timeout = self.send_producer_data(self.clock())
        self.client.poll(poll_timeout)

    def send_producer_data(self, now: int) -> int:
        """Steps 1-4 above; returns how long poll may wait."""
        if self.transaction_manager is not None:
            wait = self._maybe_send_transactional_request(now)
            if wait is not None:  # a coordinator request, or no producer id: no Produce now
                self._fail_expired_batches(now)
                return wait
        cluster = self.metadata.fetch()
        result = self.accumulator.ready(cluster, now)
        if result.unknown_leader_topics:
            for topic in result.unknown_leader_topics:
                self.metadata.add_topic(topic)
            self.metadata.request_update()
        ready_nodes = {node for node in result.ready_nodes if self.client.ready(node)}
        batches = self.accumulator.drain(cluster, ready_nodes, self.max_request_size, now)
        if self.guarantee_message_order:
            for node_batches in batches.values():
                for batch in node_batches:
                    self.accumulator.mute(batch.tp)
        self._fail_expired_batches(now)
        for node, node_batches in batches.items():
            self._send_produce_request(node, node_batches)
        poll_timeout = result.next_ready_check_delay_ms
        if result.ready_nodes - ready_nodes:  # a broker was busy or unreachable: look again soon
            poll_timeout = min(poll_timeout, self.client.reconnect_backoff_ms)
        return 0 if batches else poll_timeout

    def _fail_expired_batches(self, now: int) -> None:
        for batch in self.accumulator.expired_batches(now):
            self._fail(
                batch,
                DeliveryTimeoutError(
                    f"Expiring {batch.record_count} record(s) for {batch.tp}: "
                    f"{now - batch.created_ms} ms has passed since batch creation"
                ),
            )

    def _maybe_send_transactional_request(self, now: int) -> int | None:
        """Kafka's maybeSendAndPollTransactionalRequest: one coordinator request at a time,
        and no Produce while it is in flight (TXN-42). Returns None when batches may be
        drained, else how long poll may wait."""
        tm = self.transaction_manager
        assert tm is not None
        if tm.fatal_error is not None:  # every record of this producer fails with it
            self.accumulator.abort_incomplete(tm.fatal_error)
            return self.request_timeout_ms
        tm.bump_idempotent_epoch_and_reset_id_if_needed()
        if tm.in_flight is not None:
            return self.request_timeout_ms  # its answer wakes the poll
        if tm.should_abort_undrained:
            self.accumulator.abort_undrained_batches(
                tm.last_error or TransactionAbortedError("the transaction was aborted")
            )
        following = tm.next_request(self.accumulator.has_incomplete(), now)
        if isinstance(following, int):
            return following
        if following is not None:
            request, node = following
            if node is not None:
                self.client.add_node(node)
                target: int | None = node.node_id
            else:
                target = self.client.least_loaded_node()
            if target is None or not self.client.ready(target):
                tm.in_flight = None
                tm.retry(request, now, lookup=node is not None)
                self.metadata.request_update()
                return self.client.reconnect_backoff_ms
            self.client.send(
                target,
                request.api_key,
                request.body,
                callback=lambda sent: tm.handle_response(request, sent, self.clock()),
            )
            return self.request_timeout_ms
        return None if tm.has_producer_id else self.request_timeout_ms

    def _send_produce_request(self, node: int, batches: list[ProducerBatch]) -> None:
        by_topic: dict[str, list] = {}
        for batch in batches:
            by_topic.setdefault(batch.tp.topic, []).append(
                ProduceRequest.PartitionProduceData(index=batch.tp.partition, records=batch.built)
            )
        tm = self.transaction_manager
        request = ProduceRequest(
            transactional_id=tm.transactional_id if tm is not None else None,
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topic_data=[
                ProduceRequest.TopicProduceData(name=topic, partition_data=parts)
                for topic, parts in by_topic.items()
            ],
        )
        in_request = {batch.tp: batch for batch in batches}
        self.client.send(
            node,
            ApiKey.PRODUCE,
            request,
            callback=lambda sent: self._handle_produce_response(sent, in_request),
            expect_response=self.acks != 0,
        )

    def _handle_produce_response(
        self, sent: ClientRequest, batches: dict[TopicPartition, ProducerBatch]
    ) -> None:
        now = self.clock()
        if sent.error is not None:  # disconnected or timed out: every batch may retry
            for batch in batches.values():
                self._complete_batch(batch, sent.error.code, -1, -1, now, str(sent.error))
            return
        if self.acks == 0:  # no response is coming: done, offset unknown (CLIENT-9)
            for batch in batches.values():
                self._complete_batch(batch, ErrorCode.NO_ERROR, -1, -1, now)
            return
        for topic in sent.response.responses:
            for part in topic.partition_responses:
                batch = batches.pop(TopicPartition(topic.name, part.index), None)
                if batch is not None:
                    self._complete_batch(
                        batch,
                        error_code(part.error_code),
                        part.base_offset,
                        part.log_append_time_ms,
                        now,
                    )
        for batch in batches.values():  # a partition the broker did not answer for
            self._complete_batch(
                batch, ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1, now, "no answer for partition"
            )

    def _complete_batch(
        self,
        batch: ProducerBatch,
        error: ErrorCode,
        base_offset: int,
        log_append_time: int,
        now: int,
        message: str = "",
    ) -> None:
        if error in INVALIDATES_METADATA:
            self.metadata.request_update()  # the retry must find the current leader
        if self.guarantee_message_order:
            self.accumulator.unmute(batch.tp)
        tm = self.transaction_manager
        if error == ErrorCode.NO_ERROR or (tm is not None and error in _SUCCESS):
            if tm is not None:
                tm.handle_completed_batch(batch)
            batch.done(base_offset, log_append_time)
            self.accumulator.deallocate(batch)
        elif self._can_retry(batch, error, now):
            log.warning(
                "produce to %s failed with %s, retrying (%d attempts left)",
                batch.tp,
                error.name,
                self.retries - batch.attempts - 1,
            )
            self.accumulator.reenqueue(batch, now)
        else:
            self._fail(batch, KafkaError(message or f"produce to {batch.tp} failed", code=error))

    def _can_retry(self, batch: ProducerBatch, error: ErrorCode, now: int) -> bool:
        """Kafka's Sender.canRetry: a retriable error, attempts and delivery time left."""
        if batch.attempts >= self.retries or batch.completed.is_set():
            return False
        if batch.expired(self.accumulator.delivery_timeout_ms, now):
            return False
        tm = self.transaction_manager
        return error.retriable if tm is None else tm.can_retry(batch, error)

    def _fail(self, batch: ProducerBatch, error: KafkaError) -> None:
        if self.transaction_manager is not None:
            self.transaction_manager.handle_failed_batch(batch, error)
        batch.done(-1, -1, error)
        self.accumulator.deallocate(batch)
