"""The admin client's replica operations (Kafka's `Admin.alterPartitionReassignments`,
`listPartitionReassignments`, KIP-455, and `electLeaders`, KIP-460): what
`kafka-reassign-partitions.sh` and `kafka-leader-election.sh` do.

    admin.alter_partition_reassignments({TopicPartition("clicks", 0): [2, 3]})
    admin.alter_partition_reassignments({TopicPartition("clicks", 0): None})  # cancel
    admin.list_partition_reassignments()  # {tp: (replicas, adding, removing)}
    admin.elect_leaders(PREFERRED, [TopicPartition("clicks", 0)])  # or None: every one

All three go to the controller (CTRL-24..CTRL-29), once more after NOT_CONTROLLER, so
`ReplicaAdmin` needs the route to the controller and the request timeout
(admin_requests.py). The per-partition outcomes come back as a dict of (ErrorCode,
message); a top-level refusal raises `KafkaError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from kafka_ref.client.admin_requests import ErrorOf
from kafka_ref.client.cluster_view import error_code
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)

PREFERRED, UNCLEAN = 0, 1  # Kafka's ElectionType
Outcomes = dict[TopicPartition, tuple[ErrorCode, str | None]]


class ControllerRoute(Protocol):
    """The route to the controller (`AdminRequests`)."""

    timeout_ms: int

    def to_controller(self, api_key: ApiKey, body: Any, error_of: ErrorOf) -> Any: ...


def _top_error(response: Any) -> ErrorCode:
    return error_code(response.error_code)


class ReplicaAdmin:
    """Reassignments and elections of `Admin`."""

    def __init__(self, requests: ControllerRoute) -> None:
        self.requests = requests

    def _ask_controller(self, api_key: ApiKey, body: Any) -> Any:
        response = self.requests.to_controller(api_key, body, _top_error)
        error = error_code(response.error_code)
        if error != ErrorCode.NO_ERROR:
            message = getattr(response, "error_message", None)
            raise KafkaError(f"{api_key.name.lower()}: {message or error.name}", code=error)
        return response

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Outcomes:
        """Move each partition to its target replicas, or cancel its move (None)."""
        R = AlterPartitionReassignmentsRequest
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), target in sorted(targets.items()):
            by_topic.setdefault(topic, []).append(
                R.ReassignablePartition(
                    partition_index=partition, replicas=None if target is None else list(target)
                )
            )
        body = R(
            timeout_ms=self.requests.timeout_ms,
            topics=[R.ReassignableTopic(name=t, partitions=p) for t, p in by_topic.items()],
        )
        response = self._ask_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body)
        return {
            TopicPartition(t.name, p.partition_index): (error_code(p.error_code), p.error_message)
            for t in response.responses
            for p in t.partitions
        }

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """The moves in progress: (replicas, adding, removing) per partition."""
        R = ListPartitionReassignmentsRequest
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = [
                R.ListPartitionReassignmentsTopics(name=t, partition_indexes=p)
                for t, p in by_topic.items()
            ]
        body = R(timeout_ms=self.requests.timeout_ms, topics=topics)
        response = self._ask_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS, body)
        return {
            TopicPartition(t.name, p.partition_index): (
                tuple(p.replicas),
                tuple(p.adding_replicas),
                tuple(p.removing_replicas),
            )
            for t in response.topics
            for p in t.partitions
        }

    def elect_leaders(
        self, election_type: int, partitions: Iterable[TopicPartition] | None = None
    ) -> Outcomes:
        """Elect the preferred (0) or, for leaderless partitions, any live (1) replica."""
        R = ElectLeadersRequest
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = [R.TopicPartitions(topic=t, partitions=p) for t, p in by_topic.items()]
        body = R(election_type=election_type, topic_partitions=topics, timeout_ms=30_000)
        response = self._ask_controller(ApiKey.ELECT_LEADERS, body)
        return {
            TopicPartition(t.topic, p.partition_id): (error_code(p.error_code), p.error_message)
            for t in response.replica_election_results
            for p in t.partition_result
        }
