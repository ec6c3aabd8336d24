"""Produce: producers append record batches to partition leaders.

A ProduceRequest carries `acks`, a timeout, and per topic-partition one record batch as
the producer built it (possibly compressed). The broker's path (Kafka:
`KafkaApis.handleProduceRequest` -> `ReplicaManager.appendRecords`) never decodes a record:

1. Per partition, in this order: the producer must be allowed to write to the topic
   (TOPIC_AUTHORIZATION_FAILED); the partition must exist (UNKNOWN_TOPIC_OR_PARTITION:
   produce never creates topics, Metadata does, BROKER-11); and the batch's header is
   checked as `ProduceRequest.validateRecords` does: exactly one whole batch (INVALID_RECORD;
   a length no format allows or an unknown magic is CORRUPT_MESSAGE), of magic 2 (magic 0/1
   is INVALID_RECORD: kafka-ref stores only v2 batches and does not convert), zstd only from
   v7 (UNSUPPORTED_COMPRESSION_TYPE, BROKER-27). Trailing bytes that do not make a second
   batch are dropped, as Kafka's append trims them.
2. Then, for the partitions that passed, `acks` must be 0, 1 or -1 (all); anything else
   answers each of them with INVALID_REQUIRED_ACKS (BROKER-13). The order is Kafka's
   (`KafkaApis.handleProduceRequest` sorts the partitions out before
   `ReplicaManager.appendRecords` looks at acks), so a partition that does not exist says so
   whatever the acks.
3. The log validates the batch (length, CRC-32C, record count, `max.message.bytes` ->
   MESSAGE_TOO_LARGE), stamps base offset and leader epoch in place, and with
   `message.timestamp.type=LogAppendTime` the broker's time (then the response carries
   it in `log_append_time_ms`, else -1, BROKER-28). A batch of an idempotent producer is
   checked against the partition's producer state first: a retry of one of its last five
   batches writes nothing and answers the original offsets; a gap, an old epoch or an
   unknown producer get OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH or
   UNKNOWN_PRODUCER_ID (IDEM-3..IDEM-7). Errors are per partition: one bad partition
   does not fail the others (BROKER-14).
4. acks=1 answers after the leader's append. acks=-1 (all) answers once every in-sync
   replica has the batch: when the HW passes it (`check_enough_replicas_reach_offset`,
   REPL-4). On one broker the leader is the whole ISR, so that is at once; in a cluster
   the request waits as a `DelayedProduce` in the produce purgatory, re-checked whenever
   the partition's HW or leadership moves, and answered with REQUEST_TIMED_OUT after the
   request's `timeout_ms` (REPL-11), NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank
   below min.insync.replicas meanwhile (REPL-6), NOT_LEADER_OR_FOLLOWER if the broker lost
   the leadership. acks=0 gets no response at all: the client does not read one
   (BROKER-4). If an acks=0 append failed, the broker closes the connection, Kafka's only
   way to tell such a producer (BROKER-15).

A request whose batches are transactional must carry a transactional id its client may
write: without one, or without the right, every partition answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED before anything else is looked at (TXN-88; Kafka
checks the first batch of each partition, `RequestUtils.hasTransactionalRecords`).
A transactional batch (request with a transactional id) for a partition where its producer
has no open transaction yet is appended only once the transaction coordinator confirms
that the partition is in the producer's transaction (KIP-890, TXN-23,
server/add_partitions_manager.py): the request then answers later, like an acks=all one.

Produce v0-2 (magic 0/1 message sets) are advertised only so that old librdkafka enables
compression; like Kafka 4, the broker answers them with UNSUPPORTED_VERSION per partition
(BROKER-16). From v10 a partition refused with NOT_LEADER_OR_FOLLOWER names its leader and
the response its address (KIP-951, BROKER-69); from v11 a transactional batch for a
partition outside the transaction is TRANSACTION_ABORTABLE rather than INVALID_TXN_STATE
(KIP-890, BROKER-72). From v12 (transactions v2) the client no longer adds the partition to its
transaction: the leader asks the coordinator to add it before the append (TXN-95).

Rules: BROKER-4, BROKER-11, BROKER-13..BROKER-16, BROKER-27, BROKER-28, BROKER-69,
BROKER-72, REPL-4, REPL-6, REPL-11, TXN-23, TXN-88, TXN-95.
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import CorruptRecordError, ErrorCode
from kafka_ref.protocol.messages import ProduceResponse
from kafka_ref.record.batch import (
    ATTR_TRANSACTIONAL,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    BatchHeader,
)
from kafka_ref.record.compression import Compression
from kafka_ref.server import replica_manager
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.handlers.leader_hints import LeaderHints
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED
from kafka_ref.txn import transaction_version

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

logger = logging.getLogger("kafka_ref.server.handlers.produce")

_LENGTH = struct.Struct(">i")  # batchLength at offset 8
LEGACY_RECORD_OVERHEAD_V0 = 14  # the smallest record of any format (Kafka: RECORD_OVERHEAD_V0)
_ATTRIBUTES = struct.Struct(">h")  # attributes at offset 21
MIN_VERSION_WITH_BATCHES = 3
MIN_VERSION_WITH_ZSTD = 7
MIN_VERSION_WITH_LEADER_HINTS = 10
MIN_VERSION_WITH_TRANSACTION_ABORTABLE = 11


class _CorruptBatch(Exception):
    """A batch header no format allows (Kafka: CorruptRecordException while iterating)."""


def _batch_end(records: Any, pos: int) -> int | None:
    """Where the batch starting at `pos` ends, or None when no whole batch is there (Kafka:
    `ByteBufferLogInputStream.nextBatch`, which stops at a partial batch without an error).
    A length below the smallest record of any format, or an unknown magic, is corrupt."""
    remaining = len(records) - pos
    if remaining < LOG_OVERHEAD:
        return None
    length = _LENGTH.unpack_from(records, pos + 8)[0]
    if length < LEGACY_RECORD_OVERHEAD_V0:
        raise _CorruptBatch(
            f"batch length {length} is below the smallest record's {LEGACY_RECORD_OVERHEAD_V0}"
        )
    if remaining <= MAGIC_OFFSET:
        return None
    magic = records[pos + MAGIC_OFFSET]
    if magic > MAGIC_V2:  # a signed byte in Kafka: negative magics land here too
        raise _CorruptBatch(f"invalid magic {magic}")
    if remaining < length + LOG_OVERHEAD:
        return None
    return pos + length + LOG_OVERHEAD


def check_records(records: Any, version: int) -> tuple[ErrorCode, str, int]:
    """The per-partition checks of Kafka's `ProduceRequest.validateRecords` (BROKER-27):
    (error, why, where the batch ends). Bytes after the one batch that do not make a whole
    second batch are not an error: the append drops them, as Kafka's `trimInvalidBytes`."""
    try:
        end = None if records is None else _batch_end(records, 0)
        if end is None:
            return (
                ErrorCode.INVALID_RECORD,
                "at least one record batch per partition is required",
                0,
            )
        magic = records[MAGIC_OFFSET]
        if magic != MAGIC_V2:
            return ErrorCode.INVALID_RECORD, f"magic {magic}: only v2 batches from Produce v3", 0
        codec = _ATTRIBUTES.unpack_from(records, 21)[0] & 0x07
        if version < MIN_VERSION_WITH_ZSTD and codec == Compression.ZSTD:
            return (
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                f"zstd needs Produce v7, got v{version}",
                0,
            )
        if _batch_end(records, end) is not None:
            return ErrorCode.INVALID_RECORD, "exactly one record batch per partition is allowed", 0
    except _CorruptBatch as err:
        return ErrorCode.CORRUPT_MESSAGE, str(err), 0
    return ErrorCode.NO_ERROR, "", end


def has_transactional_records(body: Any) -> bool:
    """Whether the first batch of any partition is transactional (Kafka:
    `RequestUtils.hasTransactionalRecords`): such a request needs a transactional id its
    client may write (TXN-88)."""
    for topic in body.topic_data:
        for data in topic.partition_data:
            records = data.records
            if (
                records is not None
                and len(records) >= 23
                and records[MAGIC_OFFSET] == MAGIC_V2
                and _ATTRIBUTES.unpack_from(records, 21)[0] & ATTR_TRANSACTIONAL
            ):
                return True
    return False


def handle_produce(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    acks = body.acks
    if version < MIN_VERSION_WITH_BATCHES:
        error = ErrorCode.UNSUPPORTED_VERSION  # BROKER-16, as Kafka 4
    elif has_transactional_records(body) and (
        body.transactional_id is None
        or not authorized(apis, request, Op.WRITE, Res.TRANSACTIONAL_ID, body.transactional_id)
    ):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # SEC-17, TXN-88
    else:
        error = ErrorCode.NO_ERROR
    if error != ErrorCode.NO_ERROR:
        if acks == 0:
            request.close_connection(f"Produce v{version} acks=0 refused: {error.name}")
            return None
        return _response(apis, request, {}, error)

    entries: dict[tuple[str, int], Any] = {}
    failed: dict[tuple[str, int], tuple[ErrorCode, str]] = {}
    for topic in body.topic_data:
        allowed = authorized(apis, request, Op.WRITE, Res.TOPIC, topic.name)
        meta = apis.controller.topic(topic.name)
        for data in topic.partition_data:
            tp = (topic.name, data.index)
            if tp in entries or tp in failed:
                failed[tp] = (ErrorCode.INVALID_REQUEST, "partition listed twice")
                entries.pop(tp, None)
                continue
            if not allowed:
                code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "not authorized"  # SEC-17
            elif meta is None or not 0 <= data.index < meta.partitions:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}"
            else:
                code, message, end = check_records(data.records, version)
            if code != ErrorCode.NO_ERROR:
                failed[tp] = (code, message)
            else:  # the one batch, without trailing bytes that do not make another
                records = data.records
                entries[tp] = records if end == len(records) else memoryview(records)[:end]
    if entries and acks not in (0, 1, -1):  # BROKER-13: only the partitions that passed
        for tp in entries:
            failed[tp] = (ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, not {acks}")
        return _response(apis, request, failed)
    if body.transactional_id is not None and _verify_first(apis, request, entries, failed):
        return DEFERRED
    return _append(apis, request, entries, failed)


def not_in_transaction(version: int, message: str) -> tuple[ErrorCode, str]:
    """The answer for a partition the coordinator says is not in the producer's transaction:
    from v11 TRANSACTION_ABORTABLE, on which the producer aborts and carries on; before, the
    older INVALID_TXN_STATE with its message (KIP-890; Kafka: `AddPartitionsToTxnManager`,
    BROKER-72)."""
    if version >= MIN_VERSION_WITH_TRANSACTION_ABORTABLE:
        return ErrorCode.TRANSACTION_ABORTABLE, ""
    return ErrorCode.INVALID_TXN_STATE, message


def _verify_first(apis: ApiContext, request: Request, entries: dict, failed: dict) -> bool:
    """Start the coordinator's verification of the partitions that need it (TXN-23);
    True when the request then answers later."""
    manager, need = apis.add_partitions, {}
    # transactions v2: the leader adds the partition for the producer (TXN-95)
    add = transaction_version.adds_partitions_implicitly(
        request.api_version, transaction_version.PRODUCE_V2_VERSION
    )
    for tp, records in entries.items():
        partition = apis.replica_manager.partitions.get(tp)
        if partition is None or not partition.is_leader:
            continue  # the append answers NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION
        try:
            header = BatchHeader.parse(records)
        except CorruptRecordError:
            continue  # the append answers CORRUPT_MESSAGE
        ongoing = _open_at_epoch(partition, header.producer_epoch)
        if manager.needs_verification(tp, header, ongoing, add):
            need[tp] = (header.producer_id, header.producer_epoch)
    if not need:
        return False
    if len(set(need.values())) > 1:  # Kafka: "more than one producer ID"
        for tp in need:
            failed[tp] = (ErrorCode.INVALID_PRODUCER_ID_MAPPING, "more than one producer id")
            entries.pop(tp)
        return False
    ((producer_id, epoch),) = set(need.values())
    guards = {tp: manager.start(tp, producer_id) for tp in need}

    def verified(errors: dict[tuple[str, int], tuple[ErrorCode, str]]) -> None:
        for tp, (code, message) in errors.items():
            if code == ErrorCode.INVALID_TXN_STATE:  # the partition is not in the transaction
                errors[tp] = not_in_transaction(request.api_version, message)
        for tp, guard in guards.items():
            if tp not in errors and not manager.may_append(tp, producer_id, guard, ongoing_now(tp)):
                errors[tp] = (ErrorCode.INVALID_TXN_STATE, "the transaction ended meanwhile")
            if tp in errors:
                failed[tp] = errors[tp]
                entries.pop(tp)
        response = _append(apis, request, entries, failed)
        for tp in guards:
            # The guard is done once the transaction is open here (that proves the partition
            # from now on) or the coordinator refused for good; a retriable refusal, or a
            # failed append, keeps it for the producer's retry, as Kafka does.
            refused = errors.get(tp, (ErrorCode.NO_ERROR, ""))[0]
            keep = (ErrorCode.NO_ERROR, ErrorCode.NOT_ENOUGH_REPLICAS)
            if producer_id in ongoing_now(tp) or refused not in keep:
                manager.clear(tp, producer_id)
        if response is not DEFERRED:  # else the DelayedProduce answers
            apis.send(request, response)

    def ongoing_now(tp: tuple[str, int]) -> dict[int, int]:
        partition = apis.replica_manager.partitions.get(tp)
        return {} if partition is None else _open_at_epoch(partition, epoch)

    tps = sorted(need)
    manager.verify(request.body.transactional_id, producer_id, epoch, tps, verified, add)
    return True


def _open_at_epoch(partition: Any, epoch: int) -> dict[int, int]:
    """Producer id -> first offset of the transactions open at the partition at `epoch`:
    under transactions v2 a batch one epoch up belongs to the next transaction (TXN-95)."""
    state = partition.log.producer_state
    return {
        pid: first
        for pid, first in state.ongoing_transactions.items()
        if state.has_ongoing_transaction(pid, epoch)
    }


def _append(apis: ApiContext, request: Request, entries: dict, failed: dict) -> Any:
    acks = request.body.acks
    results = apis.replica_manager.append_records(entries, acks)
    outcome: dict[tuple[str, int], Any] = dict(results)
    for tp, (code, message) in failed.items():
        outcome[tp] = (code, message)
    errors = {tp: _error_of(r) for tp, r in outcome.items() if _error_of(r)[0] != 0}
    for (topic, index), (code, message) in errors.items():
        if code != ErrorCode.KAFKA_STORAGE_ERROR:  # the log manager reports those (DUR-15)
            logger.info("produce to %s-%d failed: %s: %s", topic, index, code.name, message)
    if acks == 0:
        if errors:
            request.close_connection("acks=0 produce failed; closing to tell the producer")
        return None
    if acks == -1:
        delayed = DelayedProduce(apis, request, outcome)
        if delayed.waiting:  # not yet on the whole ISR: wait in the purgatory (REPL-4)
            apis.replica_manager.produce_purgatory.try_complete_else_watch(delayed, delayed.waiting)
            return DEFERRED
    return _response(apis, request, outcome)


class DelayedProduce(replica_manager.DelayedProduce):
    """An acks=all produce waiting for the ISR; the replica manager's `DelayedProduce`
    decides when it is done, this one answers with a Produce response."""

    def __init__(self, apis: ApiContext, request: Request, outcome: dict) -> None:
        required = {
            tp: result.info.last_offset + 1
            for tp, result in outcome.items()
            if not isinstance(result, tuple) and result.error == 0 and result.info is not None
        }
        super().__init__(apis.replica_manager, request.body.timeout_ms, required)
        self.apis, self.request, self.outcome = apis, request, outcome
        for tp, error in self.errors.items():  # done already, but failed
            self.outcome[tp] = (error, "")

    def on_complete(self) -> None:
        for tp, error in self.errors.items():
            self.outcome[tp] = (error, "")
        # Still waiting at the timeout (or at shutdown): never acknowledged as written.
        for tp in self.waiting:
            self.outcome[tp] = (ErrorCode.REQUEST_TIMED_OUT, "")
        if self.request.connection_closed():
            self.apis.send(self.request, None)
            return
        self.apis.send(self.request, _response(self.apis, self.request, self.outcome))


def _log_start(result: Any) -> int:
    """A failed partition's log start offset: known for a failed append to a partition
    this broker leads (BROKER-14), -1 for one refused before the append."""
    return -1 if result is None or isinstance(result, tuple) else result.log_start_offset


def _error_of(result: Any) -> tuple[ErrorCode, str]:
    if isinstance(result, tuple):
        return result
    return result.error, result.message


def _response(
    apis: ApiContext, request: Request, outcome: dict, error: ErrorCode = ErrorCode.NO_ERROR
) -> Any:
    # Every field is given, so no default values are built per partition (the hot path).
    make = ProduceResponse.PartitionProduceResponse
    hints = None  # v10+: leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951)
    topics = []
    for topic in request.body.topic_data:
        partitions = []
        for data in topic.partition_data:
            result = outcome.get((topic.name, data.index))
            code, message = (error, "") if result is None else _error_of(result)
            info = None if result is None or isinstance(result, tuple) else result.info
            ok = code == ErrorCode.NO_ERROR and info is not None
            current_leader = _NO_LEADER
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and (
                request.api_version >= MIN_VERSION_WITH_LEADER_HINTS
            ):
                hints = hints or LeaderHints(apis, request)
                leader_id, leader_epoch = hints.current_leader(topic.name, data.index)
                current_leader = ProduceResponse.LeaderIdAndEpoch(
                    leader_id=leader_id, leader_epoch=leader_epoch
                )
            partitions.append(
                make(
                    index=data.index,
                    error_code=code,
                    base_offset=info.first_offset if ok else -1,
                    log_append_time_ms=info.log_append_time if ok else -1,
                    log_start_offset=info.log_start_offset if ok else _log_start(result),
                    record_errors=_NO_RECORD_ERRORS if ok else _record_errors(result),
                    error_message=None if ok else message or None,  # v8+ (KIP-467)
                    current_leader=current_leader,  # tagged, v10+: only when not the leader
                )
            )
        topics.append(
            ProduceResponse.TopicProduceResponse(name=topic.name, partition_responses=partitions)
        )
    endpoints = hints.node_endpoints(ProduceResponse.NodeEndpoint) if hints else _NO_ENDPOINTS
    return ProduceResponse(responses=topics, throttle_time_ms=0, node_endpoints=endpoints)


def _record_errors(result: Any) -> list:
    """The records of a refused batch at fault (Produce v8+, KIP-467), by index in the batch."""
    found = getattr(result, "record_errors", ())
    make = ProduceResponse.BatchIndexAndErrorMessage
    return [make(batch_index=i, batch_index_error_message=m) for i, m in found]


_NO_RECORD_ERRORS: list = []  # v8+ fields, empty and shared (never mutated)
_NO_ENDPOINTS: list = []
_NO_LEADER = ProduceResponse.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)  # the default
