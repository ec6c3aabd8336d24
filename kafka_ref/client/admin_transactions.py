"""The admin client's transaction operations (KIP-664, Kafka's `Admin.listTransactions`,
`describeTransactions`, `describeProducers`): finding hanging transactions.

A transaction that never ends holds every read_committed consumer of its partitions back
at its first offset (the last stable offset cannot pass it). Three requests show where:

| operation              | API                   | sent to                                |
|------------------------|-----------------------|----------------------------------------|
| list_transactions      | ListTransactions      | every broker (its own ids)             |
| describe_transactions  | DescribeTransactions  | the transactional id's coordinator     |
| describe_producers     | DescribeProducers     | the partition's leader                 |

DescribeProducers is the partition's own view: per producer id its epoch, last sequence
and, when it has one, the first offset of its open transaction. A producer listed there
with an open transaction that no coordinator lists as Ongoing is hanging.

`TransactionAdmin` is constructed with the routes it uses, those of the group operations
(admin_groups.py's `GroupRoutes`): the cluster, a request to one broker, a request to a
transactional id's coordinator.

Spec rules: CLIENT-32 (spec/client.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from kafka_ref.client.admin_groups import GroupRoutes
from kafka_ref.client.cluster_view import error_code
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)

TRANSACTION_KEY_TYPE = 1  # FindCoordinator


class TransactionListing(NamedTuple):
    transactional_id: str
    producer_id: int
    state: str  # Kafka's names: Empty, Ongoing, PrepareCommit, CompleteCommit, ...
    coordinator_id: int


class TransactionDescription(NamedTuple):
    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int  # -1 when no transaction is open
    topic_partitions: tuple[TopicPartition, ...]


class ProducerState(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_transaction_start_offset: int  # -1 without an open transaction


class TransactionAdmin:
    """Transaction operations of `Admin`."""

    def __init__(self, requests: GroupRoutes) -> None:
        self.requests = requests

    def list_transactions(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
    ) -> list[TransactionListing]:
        """Every transactional id every broker coordinates, optionally filtered."""
        cluster = self.requests.cluster(refresh=True)
        body = ListTransactionsRequest(
            state_filters=list(states), producer_id_filters=list(producer_ids), duration_filter=-1
        )
        found = []
        for node in cluster.nodes:
            response = self.requests.send(node.node_id, ApiKey.LIST_TRANSACTIONS, body)
            code = error_code(response.error_code)
            if code != ErrorCode.NO_ERROR:
                raise KafkaError(f"list transactions of broker {node.node_id}", code=code)
            if response.unknown_state_filters:
                raise KafkaError(
                    f"unknown transaction states: {', '.join(response.unknown_state_filters)}",
                    code=ErrorCode.INVALID_REQUEST,
                )
            found += [
                TransactionListing(
                    t.transactional_id, t.producer_id, t.transaction_state, node.node_id
                )
                for t in response.transaction_states
            ]
        return sorted(found)

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription]:
        """State, producer and partitions of each id, from its coordinator."""
        out = {}
        for tid in transactional_ids:
            node, response = self.requests.to_coordinator(
                tid,
                ApiKey.DESCRIBE_TRANSACTIONS,
                DescribeTransactionsRequest(transactional_ids=[tid]),
                lambda r: error_code(r.transaction_states[0].error_code),
                TRANSACTION_KEY_TYPE,
            )
            t = response.transaction_states[0]
            code = error_code(t.error_code)
            if code != ErrorCode.NO_ERROR:
                raise KafkaError(f"describe transactional id {tid}", code=code)
            out[tid] = TransactionDescription(
                t.transactional_id,
                node.node_id,
                t.transaction_state,
                t.producer_id,
                t.producer_epoch,
                t.transaction_timeout_ms,
                t.transaction_start_time_ms,
                tuple(
                    TopicPartition(topic.topic, p) for topic in t.topics for p in topic.partitions
                ),
            )
        return out

    def describe_producers(self, tp: TopicPartition) -> list[ProducerState]:
        """The producers the partition's leader remembers (its producer state)."""
        leader = self.requests.cluster(refresh=True).leader_for(tp)
        if leader is None:
            raise KafkaError(f"no leader for {tp}", code=ErrorCode.LEADER_NOT_AVAILABLE)
        body = DescribeProducersRequest(
            topics=[
                DescribeProducersRequest.TopicRequest(
                    name=tp.topic, partition_indexes=[tp.partition]
                )
            ]
        )
        response = self.requests.send(leader, ApiKey.DESCRIBE_PRODUCERS, body)
        part = response.topics[0].partitions[0]
        code = error_code(part.error_code)
        if code != ErrorCode.NO_ERROR:
            raise KafkaError(f"describe producers of {tp}: {part.error_message or ''}", code=code)
        return [
            ProducerState(
                p.producer_id,
                p.producer_epoch,
                p.last_sequence,
                p.last_timestamp,
                p.coordinator_epoch,
                p.current_txn_start_offset,
            )
            for p in part.active_producers
        ]
