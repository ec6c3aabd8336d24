"""The records of `__transaction_state`: how the transaction coordinator remembers.

The transaction coordinator keeps no files of its own. Every change of a transaction's
state (a new epoch, a partition added, the decision to commit or abort, the end) becomes
a record of the internal, compacted topic `__transaction_state` *before* anyone acts on
it, and a coordinator that takes over a partition of that topic rebuilds its transactions
by reading the partition from the start (TXN-10). Compaction keeps the newest record per
transactional id, which is all a coordinator needs.

A transactional id's home is partition `abs(transactionalId.hashCode) %
transaction.state.log.num.partitions` (50 by default), the same rule as a group's home in
`__consumer_offsets` (Kafka: `TransactionStateManager.partitionFor`, TXN-9).

Both key and value start with an int16 version (Kafka's `TransactionLog.keyToBytes`,
`valueToBytes`; layouts from `TransactionLogKey.json`, `TransactionLogValue.json` in
Kafka's transaction-coordinator module):

    key     version 0:  transactionalId string
    value   version 0:  producerId int64, producerEpoch int16, transactionTimeoutMs int32,
                        transactionStatus int8, transactionPartitions [topic string,
                        partitionIds [int32]] (nullable), transactionLastUpdateTimestampMs
                        int64, transactionStartTimestampMs int64
            version 1:  the same fields, flexible (compact strings and arrays, tagged
                        fields: 0 previousProducerId, 1 nextProducerId,
                        2 clientTransactionVersion)

kafka-ref writes value version 1 for a transaction whose client speaks transactions v2
(KIP-890 part 2, transaction_version.py): its tagged fields keep the client's transaction
version and the producer ids of an epoch overflow, which a coordinator that loads the
record needs to carry on (TXN-93). Other transactions get version 0, which a Kafka before
4.0 can read. It reads both. An Empty transaction's partitions are written as null.
A null value (tombstone) removes an expired transactional id.

Rules: TXN-9, TXN-10, TXN-93.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_ref.group.group_metadata_manager import java_abs, java_string_hashcode
from kafka_ref.protocol.schema import Field, Message
from kafka_ref.txn.transaction_metadata import TransactionMetadata, TransactionState
from kafka_ref.txn.transaction_version import supports_epoch_bump

TRANSACTION_STATE_TOPIC = "__transaction_state"  # Kafka: Topic.TRANSACTION_STATE_TOPIC_NAME
KEY_VERSION = 0
VALUE_VERSION = 0  # transactions v1
VALUE_VERSION_V2 = 1  # transactions v2: flexible, with the tagged fields

Records = Iterable[tuple[bytes | None, bytes | None]]
"""(key, value) of every record of a partition in offset order; value None = tombstone."""

TransactionLogKey = Message(
    "TransactionLogKey",
    api_key=None,
    valid_versions="0",
    flexible_versions="none",
    fields=[Field("TransactionalId", "string", "0")],
)

TransactionLogValue = Message(
    "TransactionLogValue",
    api_key=None,
    valid_versions="0-1",
    flexible_versions="1+",
    fields=[
        Field("ProducerId", "int64", "0+"),
        Field("PreviousProducerId", "int64", "1+", default=-1, tagged_versions="1+", tag=0),
        Field("NextProducerId", "int64", "1+", default=-1, tagged_versions="1+", tag=1),
        Field("ProducerEpoch", "int16", "0+"),
        Field("TransactionTimeoutMs", "int32", "0+"),
        Field("TransactionStatus", "int8", "0+"),
        Field(
            "TransactionPartitions",
            "[]PartitionsSchema",
            "0+",
            nullable_versions="0+",
            fields=[
                Field("Topic", "string", "0+"),
                Field("PartitionIds", "[]int32", "0+"),
            ],
        ),
        Field("TransactionLastUpdateTimestampMs", "int64", "0+"),
        Field("TransactionStartTimestampMs", "int64", "0+"),
        Field("ClientTransactionVersion", "int16", "1+", default=0, tagged_versions="1+", tag=2),
    ],
)


class UnknownTxnRecordVersionError(ValueError):
    """A key or value version this code does not know (a newer Kafka wrote it)."""


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The `__transaction_state` partition that is the id's home (TXN-9)."""
    return java_abs(java_string_hashcode(transactional_id)) % num_partitions


def _version(data: bytes | memoryview) -> tuple[int, memoryview]:
    view = memoryview(data)
    if len(view) < 2:
        raise UnknownTxnRecordVersionError("a record key or value shorter than its version")
    return int.from_bytes(view[:2], "big", signed=True), view[2:]


def key_bytes(transactional_id: str) -> bytes:
    key = TransactionLogKey(transactional_id=transactional_id)
    return KEY_VERSION.to_bytes(2, "big") + TransactionLogKey.encode(KEY_VERSION, key)


def value_bytes(meta: TransactionMetadata) -> bytes:
    """The value Kafka writes for `meta` (Kafka: `TransactionLog.valueToBytes`)."""
    partitions = None
    if meta.state != TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(partition)
        partitions = [
            TransactionLogValue.PartitionsSchema(topic=t, partition_ids=ids)
            for t, ids in by_topic.items()
        ]
    value = TransactionLogValue(
        producer_id=meta.producer_id,
        previous_producer_id=meta.previous_producer_id,
        next_producer_id=meta.next_producer_id,
        producer_epoch=meta.producer_epoch,
        transaction_timeout_ms=meta.txn_timeout_ms,
        transaction_status=int(meta.state),
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=meta.txn_last_update_timestamp,
        transaction_start_timestamp_ms=meta.txn_start_timestamp,
        client_transaction_version=meta.client_transaction_version,
    )
    v2 = supports_epoch_bump(meta.client_transaction_version)
    version = VALUE_VERSION_V2 if v2 else VALUE_VERSION
    return version.to_bytes(2, "big") + TransactionLogValue.encode(version, value)


def read_key(key: bytes | memoryview) -> str:
    version, body = _version(key)
    if version != KEY_VERSION:
        raise UnknownTxnRecordVersionError(f"unknown __transaction_state key version {version}")
    return TransactionLogKey.decode(version, body).transactional_id


def read_value(transactional_id: str, value: bytes | memoryview) -> TransactionMetadata:
    version, body = _version(value)
    if version not in (0, 1):
        raise UnknownTxnRecordVersionError(f"unknown TransactionLogValue version {version}")
    v = TransactionLogValue.decode(version, body)
    partitions = {
        (p.topic, pid) for p in (v.transaction_partitions or []) for pid in p.partition_ids
    }
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=v.producer_id,
        producer_epoch=v.producer_epoch,
        txn_timeout_ms=v.transaction_timeout_ms,
        state=TransactionState(v.transaction_status),
        partitions=partitions,
        txn_start_timestamp=v.transaction_start_timestamp_ms,
        txn_last_update_timestamp=v.transaction_last_update_timestamp_ms,
        previous_producer_id=v.previous_producer_id,
        next_producer_id=v.next_producer_id,
        client_transaction_version=v.client_transaction_version,
    )


@dataclass
class LoadedTransactions:
    """A partition's transactions after replaying its records (Kafka:
    `TransactionStateManager.loadTransactionMetadata`)."""

    transactions: dict[str, TransactionMetadata]


def fold(records: Records) -> LoadedTransactions:
    """Replay (key, value) records in offset order; the last record per id wins."""
    out: dict[str, TransactionMetadata] = {}
    for key, value in records:
        if key is None:
            continue
        transactional_id = read_key(key)
        if value is None:
            out.pop(transactional_id, None)
        else:
            out[transactional_id] = read_value(transactional_id, value)
    return LoadedTransactions(out)
