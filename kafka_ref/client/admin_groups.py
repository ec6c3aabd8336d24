"""The admin client's consumer-group operations (Kafka's `KafkaAdminClient` group calls).

Every group lives on one broker, its coordinator, so every group request but ListGroups
goes there, found first with FindCoordinator (as the members find it):

| operation                      | API                                   | sent to          |
|--------------------------------|---------------------------------------|------------------|
| list_groups                    | ListGroups                            | every broker     |
| describe_groups                | DescribeGroups, ConsumerGroupDescribe | the coordinator  |
| list_consumer_group_offsets    | OffsetFetch (all partitions, v2+)     | the coordinator  |
| alter_consumer_group_offsets   | OffsetCommit, generation -1, member ""| the coordinator  |
| delete_groups                  | DeleteGroups                          | the coordinator  |
| delete_consumer_group_offsets  | OffsetDelete                          | the coordinator  |

A coordinator that moved (NOT_COORDINATOR), is not ready (COORDINATOR_NOT_AVAILABLE) or is
still loading its groups (COORDINATOR_LOAD_IN_PROGRESS) is asked again after a new
FindCoordinator, until `request.timeout.ms`. Altering offsets from outside the group is
only allowed by the coordinator while the group has no members (else UNKNOWN_MEMBER_ID),
and deleting a group only while it is empty (NON_EMPTY_GROUP): an active group owns its
offsets. Deleting some of a group's offsets is allowed for topics no member subscribes to
(else GROUP_SUBSCRIBED_TO_TOPIC per partition, OFFSET-15).

A group of the consumer group protocol (KIP-848) is not a classic group: DescribeGroups v6
answers GROUP_ID_NOT_FOUND for it, and `describe_groups` then asks ConsumerGroupDescribe, as
Kafka's admin client does the other way round (CGRP-16): its assignor is the server-side
one, its members' assignments come with topic names.

`GroupAdmin` is constructed with those routes (admin_requests.py): the cluster's brokers,
a request to one of them, and a request to a group's coordinator.

Spec rules: CLIENT-30 (spec/client.md), OFFSET-15 (spec/offsets.md), CGRP-16
(spec/consumer_group.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from kafka_ref.client.abstract_coordinator import NO_GENERATION
from kafka_ref.client.admin_requests import ErrorOf
from kafka_ref.client.cluster_view import Cluster, Node, error_code
from kafka_ref.client.offset_committer import (
    as_offsets,
    offset_commit_request,
    offset_fetch_request,
    parse_offset_fetch,
)
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey, UnsupportedVersionError
from kafka_ref.protocol.consumer_protocol import decode_assignment, decode_subscription
from kafka_ref.protocol.messages import (
    ConsumerGroupDescribeRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
)


class GroupListing(NamedTuple):
    group_id: str
    protocol_type: str
    state: str  # "" when the broker's ListGroups version does not say (v4+ does)


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]  # decoded for consumer groups
    topics: tuple[str, ...]  # the member's subscription


class ConsumerGroupDescription(NamedTuple):
    group_id: str
    state: str  # Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str
    protocol: str  # the assignor, for consumer groups
    members: tuple[MemberDescription, ...]
    coordinator: Node
    group_type: str = "classic"  # "consumer": the KIP-848 protocol's


def _member(m: Any, consumer: bool) -> MemberDescription:
    assignment: tuple[TopicPartition, ...] = ()
    topics: tuple[str, ...] = ()
    if consumer and m.member_assignment:
        _, tps, _ = decode_assignment(m.member_assignment)
        assignment = tuple(sorted(TopicPartition(*tp) for tp in tps))
    if consumer and m.member_metadata:
        topics = tuple(decode_subscription(m.member_metadata)[1].topics)
    return MemberDescription(
        m.member_id, m.group_instance_id, m.client_id, m.client_host, assignment, topics
    )


class GroupRoutes(Protocol):
    """The routes the group (and transaction) operations use (`AdminRequests`)."""

    def cluster(self, refresh: bool = False) -> Cluster: ...

    def send(self, node: int | None, api_key: ApiKey, body: Any) -> Any: ...

    def to_coordinator(
        self, key: str, api_key: ApiKey, body: Any, error_of: ErrorOf, key_type: int = 0
    ) -> tuple[Node, Any]: ...


class GroupAdmin:
    """Group operations of `Admin`."""

    def __init__(self, requests: GroupRoutes) -> None:
        self.requests = requests

    def list_groups(self) -> list[GroupListing]:
        """Every group of every broker (ListGroups goes to each one)."""
        cluster = self.requests.cluster(refresh=True)
        groups: dict[str, GroupListing] = {}
        for node in cluster.nodes:
            response = self.requests.send(node.node_id, ApiKey.LIST_GROUPS, ListGroupsRequest())
            code = error_code(response.error_code)
            if code != ErrorCode.NO_ERROR:
                raise KafkaError(f"list groups of broker {node.node_id}", code=code)
            for g in response.groups:
                groups[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state)
        return sorted(groups.values())

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, ConsumerGroupDescription]:
        """State, assignor and members (with decoded assignments) of each group. A group
        that does not exist is described as Dead with no members, as DescribeGroups v0-v5
        answer it (v6 answers GROUP_ID_NOT_FOUND instead)."""
        out = {}
        for group_id in group_ids:
            node, response = self.requests.to_coordinator(
                group_id,
                ApiKey.DESCRIBE_GROUPS,
                DescribeGroupsRequest(groups=[group_id]),
                lambda r: error_code(r.groups[0].error_code),
            )
            g = response.groups[0]
            code = error_code(g.error_code)
            if code == ErrorCode.GROUP_ID_NOT_FOUND and (
                described := self._describe_consumer_group(group_id)
            ):
                out[group_id] = described
                continue
            if code == ErrorCode.GROUP_ID_NOT_FOUND:  # v6: no such group
                g.group_state, g.protocol_type, g.protocol_data, g.members = "Dead", "", "", []
            elif code != ErrorCode.NO_ERROR:
                raise KafkaError(f"describe group {group_id}", code=code)
            consumer = g.protocol_type in ("consumer", "")
            out[group_id] = ConsumerGroupDescription(
                g.group_id,
                g.group_state,
                g.protocol_type,
                g.protocol_data,
                tuple(_member(m, consumer) for m in g.members),
                node,
            )
        return out

    def _describe_consumer_group(self, group_id: str) -> ConsumerGroupDescription | None:
        """A KIP-848 group by ConsumerGroupDescribe; None if it is not one (or the broker
        does not have the API)."""
        try:
            node, response = self.requests.to_coordinator(
                group_id,
                ApiKey.CONSUMER_GROUP_DESCRIBE,
                ConsumerGroupDescribeRequest(group_ids=[group_id]),
                lambda r: error_code(r.groups[0].error_code),
            )
        except UnsupportedVersionError:
            return None
        g = response.groups[0]
        if error_code(g.error_code) != ErrorCode.NO_ERROR:
            return None
        members = tuple(
            MemberDescription(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                tuple(
                    sorted(
                        TopicPartition(t.topic_name, p)
                        for t in m.assignment.topic_partitions
                        for p in t.partitions
                    )
                ),
                tuple(m.subscribed_topic_names),
            )
            for m in g.members
        )
        return ConsumerGroupDescription(
            group_id, g.group_state, "consumer", g.assignor_name, members, node, "consumer"
        )

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (every committed partition by default)."""
        partitions = None if partitions is None else [TopicPartition(*tp) for tp in partitions]

        def group_error(response: Any) -> ErrorCode:
            return parse_offset_fetch(response)[0]

        _, response = self.requests.to_coordinator(
            group_id,
            ApiKey.OFFSET_FETCH,
            offset_fetch_request(group_id, partitions),
            group_error,
        )
        code, found = parse_offset_fetch(response)
        if code != ErrorCode.NO_ERROR:
            raise KafkaError(f"list offsets of group {group_id}", code=code)
        out = {}
        for tp, (code, om) in sorted(found.items()):
            if code != ErrorCode.NO_ERROR:
                raise KafkaError(f"offset of {tp} in group {group_id}", code=code)
            if om is not None:
                out[tp] = om
        return out

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
    ) -> None:
        """Commit `offsets` for the group from outside it (generation -1, member ""): the
        coordinator allows it only while the group has no members."""
        offsets = as_offsets(offsets)

        def first_error(response: Any) -> ErrorCode:
            codes = (error_code(p.error_code) for t in response.topics for p in t.partitions)
            return next((c for c in codes if c != ErrorCode.NO_ERROR), ErrorCode.NO_ERROR)

        _, response = self.requests.to_coordinator(
            group_id,
            ApiKey.OFFSET_COMMIT,
            offset_commit_request(group_id, NO_GENERATION, offsets),
            first_error,
        )
        for topic in response.topics:
            for p in topic.partitions:
                code = error_code(p.error_code)
                if code != ErrorCode.NO_ERROR:
                    tp = TopicPartition(topic.name, p.partition_index)
                    raise KafkaError(f"alter offset of {tp} in group {group_id}", code=code)

    def delete_groups(self, group_ids: Iterable[str]) -> None:
        """Delete groups and their offsets; raises for the first that failed
        (NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND)."""
        for group_id in group_ids:
            _, response = self.requests.to_coordinator(
                group_id,
                ApiKey.DELETE_GROUPS,
                DeleteGroupsRequest(groups_names=[group_id]),
                lambda r: error_code(r.results[0].error_code),
            )
            code = error_code(response.results[0].error_code)
            if code != ErrorCode.NO_ERROR:
                raise KafkaError(f"delete group {group_id}", code=code)

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """Delete the group's committed offsets of these partitions (OffsetDelete, KIP-496):
        {partition: error}, NO_ERROR where deleted (or nothing was committed),
        GROUP_SUBSCRIBED_TO_TOPIC where a member subscribes to the topic. Raises for an
        error of the whole group (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = OffsetDeleteRequest(
            group_id=group_id,
            topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p)
                        for p in indexes
                    ],
                )
                for topic, indexes in by_topic.items()
            ],
        )
        _, response = self.requests.to_coordinator(
            group_id, ApiKey.OFFSET_DELETE, request, lambda r: error_code(r.error_code)
        )
        code = error_code(response.error_code)
        if code != ErrorCode.NO_ERROR:
            raise KafkaError(f"delete offsets of group {group_id}", code=code)
        return {
            TopicPartition(t.name, p.partition_index): error_code(p.error_code)
            for t in response.topics
            for p in t.partitions
        }
