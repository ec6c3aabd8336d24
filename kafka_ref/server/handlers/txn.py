"""The transaction APIs: producer ids, the transaction coordinator's requests, the markers.

* **InitProducerId** (22). Without a transactional id (an idempotent producer) any broker
  answers a fresh producer id from its `ProducerIdManager` (kafka_ref/txn/producer_ids.py)
  and epoch 0 (IDEM-15). With one, the transaction coordinator of the id answers its
  producer id with the epoch bumped, fencing older instances (TXN-13); a broker that is
  not the id's coordinator answers NOT_COORDINATOR, an empty id is INVALID_REQUEST. From
  v3 the producer may name the id and epoch it has, to have the epoch bumped after an
  error instead of starting afresh (KIP-360, TXN-18).
* **AddPartitionsToTxn** (24), **AddOffsetsToTxn** (25), **EndTxn** (26) go to the
  transaction coordinator (kafka_ref/txn/coordinator.py) and are answered once its write to
  `__transaction_state` is durable. AddOffsetsToTxn adds the group's partition of
  `__consumer_offsets` to the transaction. AddPartitionsToTxn v4, which brokers send,
  carries several transactions; with `verify_only` it only asks whether the partitions
  are in the transaction, and is answered at once (KIP-890, TXN-23); without it (v5) a
  leader adds a partition for a transactions-v2 producer (TXN-95). EndTxn v5 is
  transactions v2: the epoch is bumped and the answer names the next one (TXN-92).
* **WriteTxnMarkers** (27), from a transaction coordinator (possibly this broker): for
  each partition, one control batch appended as the leader with acks=all (TXN-1); the
  answer waits for the ISR like an acks=all produce. For a partition of
  `__consumer_offsets` the group coordinator then completes the transaction's offsets. A
  marker of transaction version 2 (v2) must be newer than the producer's epoch at the
  partition (KIP-1228, TXN-96).
* **TxnOffsetCommit** (28) goes to the group coordinator (txn_offsets in kafka_ref/group/);
  from v5 the group's partition is first added to the transaction for it (TXN-95).

PRODUCER_FENCED (90) exists only from InitProducerId v4, AddPartitionsToTxn, AddOffsetsToTxn
and EndTxn v2, TxnOffsetCommit v3; older versions get INVALID_PRODUCER_EPOCH (47) instead,
as Kafka's request classes do.

Rules: IDEM-15, IDEM-17, TXN-1, TXN-9, TXN-12, TXN-13, TXN-23, TXN-92, TXN-95, TXN-96.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.log.validator import AppendOrigin
from kafka_ref.protocol.messages import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
    WriteTxnMarkersResponse,
)
from kafka_ref.record.control import ControlRecordType, EndTransactionMarker, build_marker_batch
from kafka_ref.server.group_adapter import OFFSETS_TOPIC, DelayedCoordinatorAppend
from kafka_ref.server.handlers.authz import Op, Res, authorized, authorized_any
from kafka_ref.server.handlers.group_offsets import requested_offsets
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED
from kafka_ref.txn import transaction_version

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

logger = logging.getLogger("kafka_ref.server.handlers.txn")

NO_PRODUCER_ID, NO_PRODUCER_EPOCH = -1, -1
MARKER_TIMEOUT_MS = 30_000  # Kafka: the coordinator's request timeout
# the first version of each API that knows PRODUCER_FENCED
_FENCED_SINCE = {22: 4, 24: 2, 25: 2, 26: 2, 28: 3}


def _client_error(request: Request, error: ErrorCode) -> ErrorCode:
    if error == ErrorCode.PRODUCER_FENCED and request.api_version < _FENCED_SINCE.get(
        request.api_key, 0
    ):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def _answer(apis: ApiContext, request: Request, body: Any) -> None:
    apis.send(request, None if request.connection_closed() else body)


# ---------------------------------------------------------------------- InitProducerId
def handle_init_producer_id(apis: ApiContext, request: Request) -> Any:
    body = request.body
    transactional_id = body.transactional_id
    refused = _init_refused(apis, request, transactional_id)
    if refused is not None:
        return _init_response(refused)
    if transactional_id is not None:
        if apis.txn is None:
            empty = transactional_id == ""
            return _init_response(ErrorCode.INVALID_REQUEST if empty else ErrorCode.NOT_COORDINATOR)

        def done(error: ErrorCode, producer_id: int, epoch: int) -> None:
            error = _client_error(request, error)
            _answer(apis, request, _init_response(error, producer_id, epoch))

        expected = (body.producer_id, body.producer_epoch) if request.api_version >= 3 else None
        apis.txn.coordinator.handle_init_producer_id(
            transactional_id, body.transaction_timeout_ms, done, expected
        )
        return DEFERRED
    try:
        producer_id = apis.producer_ids.generate_producer_id()
    except KafkaError as err:
        logger.error("cannot allocate a producer id: %s", err)
        return _init_response(err.code)
    except OSError as err:  # the block could not be persisted: retriable, as in Kafka
        logger.error("cannot persist a producer id block: %s", err)
        return _init_response(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    logger.debug("producer id %d for %s", producer_id, request.client_id)
    return _init_response(ErrorCode.NO_ERROR, producer_id, 0)


def _init_refused(
    apis: ApiContext, request: Request, transactional_id: str | None
) -> ErrorCode | None:
    """WRITE on the transactional id; without one (an idempotent producer) IDEMPOTENT_WRITE
    on the cluster or, since KIP-679, WRITE on any topic (SEC-17)."""
    if transactional_id is not None:
        if not _may_write_txn(apis, request, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authorized(apis, request, Op.IDEMPOTENT_WRITE, Res.CLUSTER) and not authorized_any(
        apis, request, Op.WRITE, Res.TOPIC
    ):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


def _may_write_txn(apis: ApiContext, request: Request, transactional_id: str) -> bool:
    return authorized(apis, request, Op.WRITE, Res.TRANSACTIONAL_ID, transactional_id)


def _denied_partitions(
    apis: ApiContext, request: Request, transactional_id: str, partitions: set[tuple[str, int]]
) -> dict[tuple[str, int], ErrorCode]:
    """Refusals before the coordinator is asked: every partition when the id may not be
    written (SEC-17), else those of topics that may not be written (SEC-17) and those that
    do not exist (TXN-87). Kafka answers the others OPERATION_NOT_ATTEMPTED."""
    if not _may_write_txn(apis, request, transactional_id):
        return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    denied = {}
    for topic, index in partitions:
        meta = apis.controller.topic(topic)
        if not authorized(apis, request, Op.WRITE, Res.TOPIC, topic):
            denied[(topic, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif meta is None or not 0 <= index < meta.partitions:
            denied[(topic, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return denied


def _init_response(
    error: ErrorCode, producer_id: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH
) -> Any:
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=error, producer_id=producer_id, producer_epoch=epoch
    )


# ---------------------------------------------------------------------- the coordinator
def handle_add_partitions_to_txn(apis: ApiContext, request: Request) -> Any:
    if request.api_version >= 4:
        return _add_partitions_v4(apis, request)
    body = request.body
    partitions = {(t.name, p) for t in body.v3_and_below_topics for p in t.partitions}
    denied = _denied_partitions(apis, request, body.v3_and_below_transactional_id, partitions)

    def done(error: ErrorCode) -> None:
        error = _client_error(request, error)
        results = [
            AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult(
                name=t.name,
                results_by_partition=[
                    AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult(
                        partition_index=p, partition_error_code=denied.get((t.name, p), error)
                    )
                    for p in t.partitions
                ],
            )
            for t in body.v3_and_below_topics
        ]
        _answer(
            apis,
            request,
            AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=results),
        )

    if denied:
        done(ErrorCode.OPERATION_NOT_ATTEMPTED)
    elif apis.txn is None:
        done(ErrorCode.NOT_COORDINATOR)
    else:
        apis.txn.coordinator.handle_add_partitions(
            body.v3_and_below_transactional_id,
            body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch,
            partitions,
            done,
        )
    return DEFERRED


def _add_partitions_v4(apis: ApiContext, request: Request) -> Any:
    """A broker's batch of transactions (KIP-890): `verify_only` asks whether the
    partitions are in the transaction (TXN-23), else they are added as in v0-v3. One
    result per transaction; the answer goes once every transaction has its result."""
    transactions = request.body.transactions
    if not authorized(apis, request, Op.CLUSTER_ACTION, Res.CLUSTER):  # brokers only (SEC-17)
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=error)
    ids = {txn.transactional_id for txn in transactions}  # a map in Kafka: one result each
    results: dict[str, Any] = {}

    def result_of(txn: Any, errors: dict[tuple[str, int], ErrorCode]) -> None:
        topics = [
            AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult(
                name=t.name,
                results_by_partition=[
                    AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult(
                        partition_index=p, partition_error_code=errors[(t.name, p)]
                    )
                    for p in t.partitions
                ],
            )
            for t in txn.topics
        ]
        results[txn.transactional_id] = AddPartitionsToTxnResponse.AddPartitionsToTxnResult(
            transactional_id=txn.transactional_id, topic_results=topics
        )
        if len(results) == len(ids):
            _answer(
                apis,
                request,
                AddPartitionsToTxnResponse(
                    throttle_time_ms=0, error_code=0, results_by_transaction=list(results.values())
                ),
            )

    if not transactions:
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=0)
    for txn in transactions:
        tps = {(t.name, p) for t in txn.topics for p in t.partitions}
        if apis.txn is None:
            result_of(txn, dict.fromkeys(tps, ErrorCode.NOT_COORDINATOR))
        elif txn.verify_only:
            result_of(
                txn,
                apis.txn.coordinator.handle_verify_partitions(
                    txn.transactional_id, txn.producer_id, txn.producer_epoch, tps
                ),
            )
        else:  # a transactions-v2 Produce or TxnOffsetCommit adds its partition (TXN-95)
            apis.txn.coordinator.handle_add_partitions(
                txn.transactional_id,
                txn.producer_id,
                txn.producer_epoch,
                tps,
                lambda error, txn=txn, tps=tps: result_of(txn, dict.fromkeys(tps, error)),
                transaction_version.for_add_partitions(request.api_version, txn.verify_only),
            )
    return DEFERRED


def handle_add_offsets_to_txn(apis: ApiContext, request: Request) -> Any:
    body = request.body

    def done(error: ErrorCode) -> None:
        error = _client_error(request, error)
        _answer(apis, request, AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=error))

    if not _may_write_txn(apis, request, body.transactional_id):  # SEC-17
        return AddOffsetsToTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorized(apis, request, Op.READ, Res.GROUP, body.group_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if apis.txn is None:
        done(ErrorCode.NOT_COORDINATOR)
        return DEFERRED
    offsets_partition = (OFFSETS_TOPIC, apis.group_coordinator.partition_for(body.group_id))
    apis.txn.coordinator.handle_add_partitions(
        body.transactional_id, body.producer_id, body.producer_epoch, {offsets_partition}, done
    )
    return DEFERRED


def handle_end_txn(apis: ApiContext, request: Request) -> Any:
    """EndTxn; from v5 (transactions v2) the coordinator bumps the epoch and the answer names
    the producer id and epoch of the next transaction (TXN-92)."""
    body = request.body

    def done(error: ErrorCode, producer_id: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH):
        error = _client_error(request, error)
        response = EndTxnResponse(
            throttle_time_ms=0, error_code=error, producer_id=producer_id, producer_epoch=epoch
        )
        _answer(apis, request, response)

    if not _may_write_txn(apis, request, body.transactional_id):  # SEC-17
        done(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif apis.txn is None:
        done(ErrorCode.NOT_COORDINATOR)
    elif transaction_version.supports_epoch_bump(
        transaction_version.for_end_txn(request.api_version)
    ):
        apis.txn.coordinator.handle_end_txn_v2(
            body.transactional_id, body.producer_id, body.producer_epoch, body.committed, done
        )
    else:
        apis.txn.coordinator.handle_end_txn(
            body.transactional_id, body.producer_id, body.producer_epoch, body.committed, done
        )
    return DEFERRED


# ---------------------------------------------------------------------- WriteTxnMarkers
def handle_write_txn_markers(apis: ApiContext, request: Request) -> Any:
    """Append each marker as the leader, answer once the ISR has them all (TXN-1)."""
    manager = apis.replica_manager
    now = apis.clock.milliseconds()
    errors: dict[tuple[int, str, int], ErrorCode] = {}
    waiting: set[tuple[int, str, int]] = set()
    finished = False
    cluster_action = authorized(apis, request, Op.CLUSTER_ACTION, Res.CLUSTER)  # SEC-17

    def maybe_answer() -> None:
        if waiting or not finished:
            return
        results = []
        for marker in request.body.markers:
            topics = [
                WriteTxnMarkersResponse.WritableTxnMarkerTopicResult(
                    name=t.name,
                    partitions=[
                        WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult(
                            partition_index=p, error_code=errors[(marker.producer_id, t.name, p)]
                        )
                        for p in t.partition_indexes
                    ],
                )
                for t in marker.topics
            ]
            results.append(
                WriteTxnMarkersResponse.WritableTxnMarkerResult(
                    producer_id=marker.producer_id, topics=topics
                )
            )
        _answer(apis, request, WriteTxnMarkersResponse(markers=results))

    for marker in request.body.markers:
        kind = ControlRecordType.COMMIT if marker.transaction_result else ControlRecordType.ABORT
        end = EndTransactionMarker(kind, marker.coordinator_epoch)
        batch = build_marker_batch(marker.producer_id, marker.producer_epoch, end, now)
        for topic in marker.topics:
            for index in topic.partition_indexes:
                key, tp = (marker.producer_id, topic.name, index), (topic.name, index)
                if not cluster_action:
                    errors[key] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    continue
                if not _marker_epoch_valid(apis, tp, marker):
                    errors[key] = ErrorCode.INVALID_PRODUCER_EPOCH  # KIP-1228, TXN-96
                    continue
                result = manager.append_records(
                    {tp: memoryview(batch)}, -1, AppendOrigin.COORDINATOR
                )[tp]
                if result.error != ErrorCode.NO_ERROR or result.info is None:
                    errors[key] = result.error
                    continue
                apis.add_partitions.clear(tp, marker.producer_id)  # the transaction ended
                waiting.add(key)

                def replicated(error: ErrorCode, key=key, commit=marker.transaction_result) -> None:
                    errors[key] = error
                    waiting.discard(key)
                    if error == ErrorCode.NO_ERROR and key[1] == OFFSETS_TOPIC:
                        apis.group_coordinator.complete_txn_offsets(key[2], key[0], commit)
                    maybe_answer()

                delayed = DelayedCoordinatorAppend(
                    manager, tp, result.info.last_offset + 1, MARKER_TIMEOUT_MS, replicated
                )
                manager.produce_purgatory.try_complete_else_watch(delayed, [tp])
    finished = True
    maybe_answer()
    return DEFERRED


def _marker_epoch_valid(apis: ApiContext, tp: tuple[str, int], marker: Any) -> bool:
    """KIP-1228: a transactions-v2 marker carries the epoch the coordinator bumped at EndTxn,
    so it must be newer than any epoch the producer wrote here; one that is not is a late or
    repeated marker. A v0/v1 marker only may not be older (TXN-3), which the log checks
    (Kafka: `ProducerAppendInfo.checkProducerEpoch`; TXN-96)."""
    if not transaction_version.supports_epoch_bump(marker.transaction_version):
        return True
    partition = apis.replica_manager.partitions.get(tp)
    if partition is None or not partition.is_leader:
        return True  # the append answers for the partition
    current = partition.log.producer_state.producer_epoch(marker.producer_id)
    return current is None or marker.producer_epoch > current


# ---------------------------------------------------------------------- TxnOffsetCommit
def handle_txn_offset_commit(apis: ApiContext, request: Request) -> Any:
    """Offsets in a transaction: pending in the group coordinator until the marker (TXN-16)."""
    body = request.body
    now = apis.clock.milliseconds()
    order, errors, offsets = requested_offsets(apis, request, body.topics, now)
    if not _may_write_txn(apis, request, body.transactional_id):  # SEC-17
        errors = dict.fromkeys(order, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        offsets = {}

    def respond() -> Any:
        topics: list[Any] = []
        for tp in dict.fromkeys(order):
            if not topics or topics[-1].name != tp.topic:
                topics.append(TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(name=tp.topic))
            topics[-1].partitions.append(
                TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(
                    partition_index=tp.partition, error_code=_client_error(request, errors[tp])
                )
            )
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=topics)

    def done(results: dict[TopicPartition, ErrorCode]) -> None:
        errors.update(results)
        _answer(apis, request, respond())

    if not offsets:
        return respond()
    # v3+ (KIP-447): the consumer's member id, instance id and generation
    member = (body.member_id, body.group_instance_id, body.generation_id)

    def commit() -> None:
        apis.group_coordinator.commit_txn_offsets(
            body.group_id, body.producer_id, body.producer_epoch, offsets, done, member
        )

    if transaction_version.adds_partitions_implicitly(
        request.api_version, transaction_version.TXN_OFFSET_COMMIT_V2_VERSION
    ):
        _add_offsets_partition(apis, body, offsets, commit, done)
    else:
        commit()
    return DEFERRED


def _add_offsets_partition(apis: ApiContext, body: Any, offsets: dict, commit, done) -> None:
    """Transactions v2 (TXN-95): TxnOffsetCommit v5 does AddOffsetsToTxn's work first, the
    group coordinator asking the transaction coordinator to add the group's partition of
    `__consumer_offsets`, then commits. A refusal answers every partition: the retriable
    ones as COORDINATOR_NOT_AVAILABLE, which the producer retries (Kafka:
    `GroupCoordinatorService.normalizeException`)."""
    offsets_partition = (OFFSETS_TOPIC, apis.group_coordinator.partition_for(body.group_id))

    def added(errors: dict[tuple[str, int], tuple[ErrorCode, str]]) -> None:
        if not errors:
            return commit()
        ((code, _),) = errors.values()
        if code == ErrorCode.NOT_ENOUGH_REPLICAS:
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        done(dict.fromkeys(offsets, code))

    apis.add_partitions.verify(
        body.transactional_id,
        body.producer_id,
        body.producer_epoch,
        [offsets_partition],
        added,
        add=True,
    )
