"""The answers of ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments,
built one way for every place that answers them: a ZooKeeper-mode or embedded broker
(handlers/reassignments.py), the KRaft active controller (controller_admin_apis.py), and a
KRaft broker whose forwarding failed (forwarding_manager.py).

Each groups its partitions by topic, in order, and carries a top-level error code; one
other than NO_ERROR comes with its name as the message. A request that fails whole (no
controller in time, a controller that is no longer active) answers every partition it
named with that error and Kafka's message for it (`every_partition`; Kafka:
`ElectLeadersRequest.getErrorResponse`, `AlterPartitionReassignmentsRequest.getErrorResponse`):
librdkafka reads the partitions of an answer, and a partition's error without a message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    AlterPartitionReassignmentsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)

Results = dict[TopicPartition, tuple[ErrorCode, str | None]]

# Kafka's `Errors` messages, which an `ApiError` made of a code alone carries
KAFKA_MESSAGES = {
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.UNKNOWN_SERVER_ERROR: (
        "The server experienced an unexpected error when processing the request."
    ),
    ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}


def every_partition(partitions: Iterable[TopicPartition], error: ErrorCode) -> Results:
    """Each partition a request named, answered `error` with Kafka's message for it."""
    return {tp: (error, KAFKA_MESSAGES.get(error, error.name)) for tp in partitions}


def elected_partitions(body: Any) -> list[TopicPartition]:
    """The partitions an ElectLeaders names (none: every partition, answered by name
    only when decided)."""
    if body.topic_partitions is None:
        return []
    return [TopicPartition(t.topic, p) for t in body.topic_partitions for p in t.partitions]


def reassigned_partitions(body: Any) -> list[TopicPartition]:
    """The partitions an AlterPartitionReassignments names."""
    return [TopicPartition(t.name, p.partition_index) for t in body.topics for p in t.partitions]


def alter_response(error: ErrorCode, results: Results, allow_rf_change: bool) -> Any:
    """The answer, echoing whether the request allowed replication factor changes (v1+)."""
    R = AlterPartitionReassignmentsResponse
    topics: dict[str, list[Any]] = {}
    for (topic, partition), (code, message) in sorted(results.items()):
        topics.setdefault(topic, []).append(
            R.ReassignablePartitionResponse(
                partition_index=partition, error_code=code, error_message=message
            )
        )
    return R(
        throttle_time_ms=0,
        allow_replication_factor_change=allow_rf_change,
        error_code=error,
        error_message=None if error == ErrorCode.NO_ERROR else error.name,
        responses=[R.ReassignableTopicResponse(name=t, partitions=p) for t, p in topics.items()],
    )


def list_response(error: ErrorCode, moves: dict) -> Any:
    R = ListPartitionReassignmentsResponse
    topics: dict[str, list[Any]] = {}
    for (topic, partition), (replicas, adding, removing) in sorted(moves.items()):
        topics.setdefault(topic, []).append(
            R.OngoingPartitionReassignment(
                partition_index=partition,
                replicas=list(replicas),
                adding_replicas=list(adding),
                removing_replicas=list(removing),
            )
        )
    return R(
        throttle_time_ms=0,
        error_code=error,
        error_message=None if error == ErrorCode.NO_ERROR else error.name,
        topics=[R.OngoingTopicReassignment(name=t, partitions=p) for t, p in topics.items()],
    )


def elect_response(error: ErrorCode, results: Results) -> Any:
    R = ElectLeadersResponse
    topics: dict[str, list[Any]] = {}
    for (topic, partition), (code, message) in sorted(results.items()):
        topics.setdefault(topic, []).append(
            R.PartitionResult(partition_id=partition, error_code=code, error_message=message)
        )
    return R(
        throttle_time_ms=0,
        error_code=error,
        replica_election_results=[
            R.ReplicaElectionResult(topic=t, partition_result=p) for t, p in topics.items()
        ],
    )
