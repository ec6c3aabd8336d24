"""Looking into transactions: DescribeProducers, DescribeTransactions, ListTransactions.

A transaction that never ends holds its partitions' LSO back, and read_committed consumers
with it. KIP-664 gives operators three requests to find such a *hanging transaction*:

* **DescribeProducers** (61) asks a partition's leader for its producer state: per
  producer id the epoch, last sequence and append time, the coordinator epoch of its last
  marker and the first offset of its open transaction (kafka_ref/log/producer_state.py);
* **ListTransactions** (66) asks a transaction coordinator for the transactional ids it
  coordinates, filtered by state, producer id, (v1) by how long they have been running
  and (v2, KIP-1152) by a regular expression the whole transactional id must match
  (TXN-86);
* **DescribeTransactions** (65) asks the id's coordinator for its state, timeout, start
  time, producer id and epoch, and partitions (kafka_ref/txn/transaction_metadata.py).

Kafka: `KafkaApis.handleDescribeProducersRequest`, `handleListTransactionsRequest`,
`handleDescribeTransactionsRequest`, `TransactionStateManager.listTransactionStates`.

Rules: TXN-19, TXN-86.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import (
    DescribeProducersResponse,
    DescribeTransactionsResponse,
    ListTransactionsResponse,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized, require
from kafka_ref.server.request_channel import Request
from kafka_ref.txn.transaction_metadata import TransactionState

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


def handle_describe_producers(apis: ApiContext, request: Request) -> Any:
    topics = []
    for topic in request.body.topics:
        partitions = []
        for index in topic.partition_indexes:
            result = DescribeProducersResponse.PartitionResponse(
                partition_index=index, error_code=ErrorCode.NO_ERROR, active_producers=[]
            )
            try:
                require(apis, request, Op.READ, Res.TOPIC, topic.name)  # SEC-17
                partition = apis.replica_manager.get_partition(topic.name, index)
                if not partition.is_leader:
                    result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    state = partition.log.producer_state
                    result.active_producers = [
                        _producer_state(pid, e) for pid, e in sorted(state.active_producers.items())
                    ]
            except KafkaError as err:
                result.error_code, result.error_message = err.code, str(err)
            partitions.append(result)
        topics.append(
            DescribeProducersResponse.TopicResponse(name=topic.name, partitions=partitions)
        )
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


def _producer_state(pid: int, e: Any) -> Any:
    return DescribeProducersResponse.ProducerState(
        producer_id=pid,
        producer_epoch=e.producer_epoch,
        last_sequence=e.last_seq,
        last_timestamp=e.last_timestamp,
        coordinator_epoch=e.coordinator_epoch,
        current_txn_start_offset=e.current_txn_first_offset,
    )


def handle_describe_transactions(apis: ApiContext, request: Request) -> Any:
    states = []
    for transactional_id in request.body.transactional_ids:
        error, meta = (
            apis.txn.coordinator.describe(transactional_id)
            if apis.txn is not None
            else (ErrorCode.NOT_COORDINATOR, None)
        )
        if not authorized(apis, request, Op.DESCRIBE, Res.TRANSACTIONAL_ID, transactional_id):
            error, meta = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None  # SEC-17
        entry = DescribeTransactionsResponse.TransactionState(
            error_code=error,
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout_ms=0,
            transaction_start_time_ms=-1,
            producer_id=-1,
            producer_epoch=-1,
            topics=[],
        )
        if meta is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(meta.partitions):
                by_topic.setdefault(topic, []).append(index)
            entry.transaction_state = meta.state.kafka_name
            entry.transaction_timeout_ms = meta.txn_timeout_ms
            entry.transaction_start_time_ms = meta.txn_start_timestamp
            entry.producer_id, entry.producer_epoch = meta.producer_id, meta.producer_epoch
            entry.topics = [
                DescribeTransactionsResponse.TopicData(topic=t, partitions=ps)
                for t, ps in by_topic.items()
            ]
        states.append(entry)
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


def handle_list_transactions(apis: ApiContext, request: Request) -> Any:
    body = request.body
    wanted, unknown = set(), []
    for name in body.state_filters:
        state = TransactionState.from_kafka_name(name)
        if state is None:
            unknown.append(name)
        else:
            wanted.add(state)
    pids = set(body.producer_id_filters)
    duration = body.duration_filter if request.api_version >= 1 else -1
    pattern = None
    if body.transactional_id_pattern:  # v2+; null or "" lists every id
        try:
            pattern = re.compile(body.transactional_id_pattern)
        except re.error:  # Kafka: InvalidRegularExpression, the whole request
            error = ErrorCode.INVALID_REGULAR_EXPRESSION
            return ListTransactionsResponse(
                throttle_time_ms=0, error_code=error, unknown_state_filters=unknown
            )
    now = apis.clock.milliseconds()
    found = []
    for meta in apis.txn.coordinator.transactions() if apis.txn is not None else []:
        if (body.state_filters and meta.state not in wanted) or (
            pids and meta.producer_id not in pids
        ):
            continue
        if duration >= 0 and now - meta.txn_start_timestamp < duration:
            continue
        if pattern is not None and not pattern.fullmatch(meta.transactional_id):
            continue  # Kafka: re2j `Matcher.matches`, the whole id
        if not authorized(apis, request, Op.DESCRIBE, Res.TRANSACTIONAL_ID, meta.transactional_id):
            continue  # only the ones it may describe (SEC-17)
        found.append(
            ListTransactionsResponse.TransactionState(
                transactional_id=meta.transactional_id,
                producer_id=meta.producer_id,
                transaction_state=meta.state.kafka_name,
            )
        )
    return ListTransactionsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        unknown_state_filters=unknown,
        transaction_states=sorted(found, key=lambda s: s.transactional_id),
    )
