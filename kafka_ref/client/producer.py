"""The producer: `send()` a record, get a future of where it landed.

    producer = Producer(bootstrap_servers="127.0.0.1:9092", acks="all", linger_ms=5)
    future = producer.send("clicks", b"page=/home", key=b"user-42")
    print(future.result())        # RecordMetadata(topic='clicks', partition=1, offset=17, ...)
    producer.close()

A record's path through the producer (Kafka's `KafkaProducer.doSend`):

1. **serialize** the key and value to bytes (`key_serializer`, `value_serializer`; by default
   bytes pass through and str is encoded as UTF-8);
2. **wait for metadata** of the topic, at most `max.block.ms`: the partitioner needs the
   number of partitions. The first send to a topic asks the sender thread to fetch it;
3. **partition** (partitioner.py): explicit partition, murmur2 of the key, or sticky;
4. **append** to the record accumulator (accumulator.py), which returns a future at once.
   If the sticky partition needs a new batch, the partitioner picks again first (KIP-480);
5. the **Sender** thread (sender.py) drains ready batches into Produce requests, one per
   leader, and completes the futures from the responses, retrying what can be retried.

`send()` therefore never waits for the network (only for metadata, or for memory when
`buffer.memory` is full). `flush()` makes every batch sendable now and waits until all
futures are done; `close()` flushes and stops the sender thread.

Errors reach the caller the way Kafka's do: an error about the record or the cluster
(MESSAGE_TOO_LARGE, a metadata timeout, a failed delivery) is set on the future and passed
to the callback; only misuse (a closed producer, a value that is not bytes) raises from
`send()` itself.

The configuration keeps Kafka's names in snake_case (`linger.ms` -> `linger_ms`) and Kafka
4.0's defaults, `enable.idempotence` included (KIP-679): left unset (None) it is on when
acks=all, retries > 0 and max_in_flight <= 5 - Kafka's defaults - and silently off when
another setting conflicts, as in the Java client; set to True with a conflicting setting
it raises `ProducerConfigError` (Java's ConfigException); False turns it off.
The idempotent producer (transaction_manager.py) gets a producer id before its first batch
and numbers each partition's batches, so retries never write a record twice.

With a `transactional_id` the producer is transactional (KIP-98): `init_transactions()`
once, then `begin_transaction()`, sends, `send_offsets_to_transaction()`, and
`commit_transaction()` or `abort_transaction()`; a `send()` outside a transaction raises.
`ProducerFencedError` means another producer took over the transactional id: close.

Spec rules: CLIENT-2..CLIENT-9 (spec/client.md); IPROD-1 (spec/idempotent_producer.md);
TXN-41 (spec/transactions.md).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka_ref.client.accumulator import RecordAccumulator
from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.connection import parse_bootstrap_servers
from kafka_ref.client.network_client import NetworkClient
from kafka_ref.client.partitioner import DefaultPartitioner
from kafka_ref.client.producer_batch import (
    Callback,
    FutureRecordMetadata,
    RecordMetadata,
    estimate_size,
)
from kafka_ref.client.sender import Sender
from kafka_ref.client.transaction_manager import TransactionManager
from kafka_ref.client.transaction_state import (
    ProducerFencedError,
    TransactionalRequestResult,
    TransactionStateError,
)
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode, InvalidConfigError, KafkaError, MessageTooLargeError
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Header, Record
from kafka_ref.security.client_security import ClientSecurity, resolve_security

__all__ = [
    "Producer",
    "ProducerConfigError",
    "ProducerFencedError",
    "RecordMetadata",
    "TransactionStateError",
]

_ids = itertools.count(1)
# Topic errors in metadata that no amount of waiting will fix.
_FATAL_TOPIC_ERRORS = {ErrorCode.INVALID_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def parse_acks(acks: int | str) -> int:
    """Kafka's acks: 0, 1, or all (-1)."""
    text = str(acks).strip().lower()
    if text in ("all", "-1"):
        return -1
    if text in ("0", "1"):
        return int(text)
    raise ValueError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")


class ProducerConfigError(InvalidConfigError, ValueError):
    """Settings that contradict each other (Kafka's ConfigException)."""


def idempotence_enabled(enable: bool | None, acks: int, retries: int, max_in_flight: int) -> bool:
    """KIP-679: on by default unless a setting conflicts; explicitly on and a conflict raises."""
    conflicts = []
    if acks != -1:
        conflicts.append(
            "Must set acks to all in order to use the idempotent producer. "
            "Otherwise we cannot guarantee idempotence."
        )
    if retries <= 0:
        conflicts.append("Must set retries to non-zero when using the idempotent producer.")
    if max_in_flight > 5:
        conflicts.append(
            "Must set max.in.flight.requests.per.connection to at most 5 "
            "when using the idempotent producer."
        )
    if enable and conflicts:
        raise ProducerConfigError(conflicts[0])
    return bool(enable or (enable is None and not conflicts))


def to_bytes(data: Any) -> bytes | None:
    """The default serializer: bytes stay bytes, str becomes UTF-8, None stays None."""
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        return data.encode("utf-8")
    raise TypeError(f"cannot send a {type(data).__name__} without a serializer")


class Producer:
    """A Kafka producer (Kafka's `KafkaProducer`). Thread-safe: share one per process."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        client_id: str | None = None,
        acks: int | str = "all",
        linger_ms: int = 5,
        batch_size: int = 16_384,
        compression_type: str = "none",
        retries: int = 2**31 - 1,
        retry_backoff_ms: int = 100,
        delivery_timeout_ms: int = 120_000,
        request_timeout_ms: int = 30_000,
        max_in_flight: int = 5,
        max_block_ms: int = 60_000,
        max_request_size: int = 1_048_576,
        buffer_memory: int = 33_554_432,
        metadata_max_age_ms: int = 300_000,
        key_serializer: Callable[[Any], bytes | None] = to_bytes,
        value_serializer: Callable[[Any], bytes | None] = to_bytes,
        partitioner: DefaultPartitioner | None = None,
        enable_idempotence: bool | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        security: Mapping[str, Any] | ClientSecurity | None = None,
    ) -> None:
        if delivery_timeout_ms < linger_ms + request_timeout_ms:
            raise ValueError("delivery_timeout_ms must be >= linger_ms + request_timeout_ms")
        if transactional_id is not None and enable_idempotence is False:
            raise ProducerConfigError(
                "Cannot set a transactional.id without also enabling idempotence."
            )
        self.acks = parse_acks(acks)
        self.enable_idempotence = idempotence_enabled(
            True if transactional_id is not None else enable_idempotence,
            self.acks,
            retries,
            max_in_flight,
        )
        self.transaction_manager = (
            TransactionManager(
                transactional_id=transactional_id,
                transaction_timeout_ms=transaction_timeout_ms,
                retry_backoff_ms=retry_backoff_ms,
            )
            if self.enable_idempotence
            else None
        )
        self.max_block_ms, self.max_request_size = max_block_ms, max_request_size
        self.key_serializer, self.value_serializer = key_serializer, value_serializer
        self.partitioner = partitioner or DefaultPartitioner()
        self.client_id = client_id or f"kafka-ref-producer-{next(_ids)}"
        self.metadata = Metadata(
            parse_bootstrap_servers(bootstrap_servers),
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
        )
        self.accumulator = RecordAccumulator(
            batch_size=batch_size,
            compression=Compression.from_name(compression_type),
            linger_ms=linger_ms,
            retry_backoff_ms=retry_backoff_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            buffer_memory=buffer_memory,
            transaction_manager=self.transaction_manager,
        )
        client = NetworkClient(
            self.metadata,
            client_id=self.client_id,
            request_timeout_ms=request_timeout_ms,
            max_in_flight=max_in_flight,
            security=resolve_security(security),
        )
        self.sender = Sender(
            client,
            self.metadata,
            self.accumulator,
            acks=self.acks,
            retries=retries,
            request_timeout_ms=request_timeout_ms,
            max_request_size=max_request_size,
            guarantee_message_order=max_in_flight == 1,
            name=f"kafka-producer-network-thread | {self.client_id}",
            transaction_manager=self.transaction_manager,
        )
        self.sender.start()
        self._closed = False

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | Mapping[str, bytes | None] | None = None,
        timestamp: int | None = None,
        callback: Callback | None = None,
    ) -> FutureRecordMetadata:
        """Queue a record; the future resolves to its `RecordMetadata` once acknowledged."""
        if self._closed:
            raise RuntimeError("cannot send after the producer is closed")
        key_bytes, value_bytes = self.key_serializer(key), self.value_serializer(value)
        if isinstance(headers, Mapping):
            headers = headers.items()
        record = Record(
            key_bytes,
            value_bytes,
            time.time_ns() // 1_000_000 if timestamp is None else timestamp,
            tuple(Header(k, to_bytes(v)) for k, v in headers or ()),
        )
        tm = self.transaction_manager
        if tm is not None and tm.is_transactional:
            tm.fail_if_not_ready_for_send()  # raises: a misuse, not a delivery failure
        try:
            if tm is not None and tm.fatal_error:
                raise tm.fatal_error
            size = estimate_size(record.key, record.value, record.headers)
            if size > self.max_request_size:
                raise MessageTooLargeError(
                    f"The message is {size} bytes when serialized which is larger than "
                    f"{self.max_request_size}, which is the value of the max.request.size config"
                )
            cluster = self._wait_on_metadata(topic, partition)
            abort_on_new_batch = True  # a new batch first makes the sticky partitioner move on
            while True:
                chosen = self.partitioner.partition(topic, key_bytes, cluster, partition)
                result = self.accumulator.append(
                    TopicPartition(topic, chosen),
                    record,
                    callback,
                    self._now(),
                    abort_on_new_batch=abort_on_new_batch,
                    max_block_ms=self.max_block_ms,
                )
                if not result.abort_for_new_batch:
                    if tm is not None and tm.is_transactional:
                        tm.maybe_add_partition(TopicPartition(topic, chosen))
                    break
                self.partitioner.on_new_batch(topic, cluster, chosen)  # choose again, once
                abort_on_new_batch = False
        except KafkaError as err:  # Kafka: an ApiException fails the future, not send()
            future = FutureRecordMetadata()
            if callback is not None:
                callback(None, err)
            future.set_exception(err)
            return future
        if result.batch_is_full or result.new_batch_created:
            self.sender.wakeup()
        assert result.future is not None
        return result.future

    def _wait_on_metadata(self, topic: str, partition: int | None):
        """Block (max.block.ms) until the topic's partitions are known (Kafka: waitOnMetadata)."""
        self.metadata.add_topic(topic)
        deadline = time.monotonic() + self.max_block_ms / 1000
        while True:
            cluster = self.metadata.fetch()
            count = cluster.partition_count(topic)
            error = cluster.topic_errors.get(topic)
            if error in _FATAL_TOPIC_ERRORS:
                raise KafkaError(f"topic {topic!r}: {error.name}", code=error)
            if count and (partition is None or partition < count):
                return cluster
            self.metadata.maybe_throw_auth_failure()  # refused credentials: no use waiting
            version = self.metadata.request_update()
            self.sender.wakeup()
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.metadata.await_update(version, remaining):
                what = f"Topic {topic}" if not count else f"Partition {partition} of topic {topic}"
                unreachable = self.sender.client.last_error  # name the cause when we know it
                cause = (
                    f" The last connection attempt failed: {unreachable}"
                    if (unreachable is not None and cluster.is_bootstrap)
                    else ""
                )
                raise KafkaError(
                    f"{what} not present in metadata after {self.max_block_ms} ms.{cause}",
                    code=error or ErrorCode.REQUEST_TIMED_OUT,
                )

    def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of `topic` (waits for its metadata)."""
        return [
            p.partition for p in self._wait_on_metadata(topic, None).partitions_for_topic(topic)
        ]

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until every record sent so far is done."""
        self.accumulator.begin_flush()
        self.sender.wakeup()
        if not self.accumulator.await_flush_completion(timeout):
            raise KafkaError("flush timed out", code=ErrorCode.REQUEST_TIMED_OUT)

    # -- transactions (KIP-98; transaction_manager.py) ------------------------------------

    def _transactional(self, operation: str) -> TransactionManager:
        tm = self.transaction_manager
        if tm is None or not tm.is_transactional:
            raise TransactionStateError(
                f"Cannot call {operation}: the producer has no transactional_id"
            )
        return tm

    def _await(self, result: TransactionalRequestResult, timeout: float | None) -> None:
        self.sender.wakeup()
        result.wait(self.max_block_ms / 1000 if timeout is None else timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register the transactional id: fence older producers with it, abort what they left
        open, get the producer id and epoch. Once, before the first transaction."""
        self._await(self._transactional("init_transactions").initialize_transactions(), timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until commit or abort belong to it."""
        self._transactional("begin_transaction").begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group: str | Any,
        timeout: float | None = None,
    ) -> None:
        """Commit a consumer group's offsets (the next record to read) inside the
        transaction: visible when it commits, dropped when it aborts. `group` is the group
        id, or anything with a `group_id` (a consumer, its group metadata)."""
        group_id = group if isinstance(group, str) else getattr(group, "group_id", None)
        if not group_id:
            raise ValueError(f"send_offsets_to_transaction needs a group id, not {group!r}")
        tm = self._transactional("send_offsets_to_transaction")
        self._await(tm.send_offsets_to_transaction(offsets, group_id), timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send every record of the transaction, then commit it (EndTxn). If a record or a
        request failed, this raises and the transaction must be aborted."""
        tm = self._transactional("commit_transaction")
        self.flush(timeout)
        self._await(tm.begin_commit(), timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not yet sent fail, the written ones are dropped by
        read_committed consumers, and offsets sent to it are discarded (EndTxn)."""
        self._await(self._transactional("abort_transaction").begin_abort(), timeout)

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting records, deliver what is queued (up to `timeout` s), stop the thread.

        Records still undelivered when the timeout passes fail with an error.
        """
        if self._closed:
            return
        self._closed = True
        self.sender.initiate_close()
        self.sender.join(timeout)
        if self.sender.is_alive():
            self.sender.force_close = True
            self.sender.wakeup()
            self.sender.join()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _now() -> int:
        return time.monotonic_ns() // 1_000_000
