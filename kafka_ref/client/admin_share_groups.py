"""The admin client's share-group operations (Kafka's `KafkaAdminClient` share group calls).

A share group (KIP-932) lives on its group coordinator like a consumer group, so every
request but ListGroups goes there, found with FindCoordinator (admin_groups.py):

| operation                     | API                            | sent to         |
|-------------------------------|--------------------------------|-----------------|
| list_share_groups             | ListGroups v5, types ["share"] | every broker    |
| describe_share_groups         | ShareGroupDescribe             | the coordinator |
| list_share_group_offsets      | DescribeShareGroupOffsets      | the coordinator |
| list_share_group_offsets_info | DescribeShareGroupOffsets v1   | the coordinator |
| alter_share_group_offsets     | AlterShareGroupOffsets         | the coordinator |
| delete_share_group_offsets    | DeleteShareGroupOffsets        | the coordinator |
| delete_groups                 | DeleteGroups (admin_groups.py) | the coordinator |

A share group's offsets are its share-partitions' start offsets, which the coordinator
reads and changes through the share coordinator; altering and deleting them needs an empty
group (NON_EMPTY_GROUP). `list_share_group_offsets_info` adds each one's leader epoch and
lag (KIP-1226; None when the coordinator cannot tell it, as Kafka's
`SharePartitionOffsetInfo.lag` is empty).

Spec rules: SHARE-47, SHARE-49, SHARE-51 (spec/share_groups.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafka_ref.client.admin_groups import GroupListing, GroupRoutes
from kafka_ref.client.cluster_view import Node, error_code
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ListGroupsRequest,
    ShareGroupDescribeRequest,
)

SHARE = "share"  # ListGroups v5's group type


class ShareMemberDescription(NamedTuple):
    member_id: str
    client_id: str
    host: str
    member_epoch: int
    assignment: tuple[TopicPartition, ...]
    topics: tuple[str, ...]  # the member's subscription


class ShareGroupDescription(NamedTuple):
    group_id: str
    state: str  # Empty, Stable, Dead (no such share group)
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMemberDescription, ...]
    coordinator: Node | None


class SharePartitionOffsetInfo(NamedTuple):
    """One share-partition's offsets (Kafka `SharePartitionOffsetInfo`)."""

    start_offset: int  # -1: the share-partition has no state
    leader_epoch: int | None
    lag: int | None  # the records below the high watermark not yet done; None: unknown


class ShareAdmin:
    """Share group operations of `Admin`."""

    def __init__(self, requests: GroupRoutes) -> None:
        self.requests = requests

    def list_share_groups(self) -> list[GroupListing]:
        """Every share group of every broker."""
        groups: dict[str, GroupListing] = {}
        for node in self.requests.cluster(refresh=True).nodes:
            response = self.requests.send(
                node.node_id, ApiKey.LIST_GROUPS, ListGroupsRequest(types_filter=[SHARE])
            )
            code = error_code(response.error_code)
            if code != ErrorCode.NO_ERROR:
                raise KafkaError(f"list groups of broker {node.node_id}", code=code)
            for g in response.groups:
                groups[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state)
        return sorted(groups.values())

    def describe_share_groups(self, group_ids: Iterable[str]) -> dict[str, ShareGroupDescription]:
        """State, epochs and members of each share group; one that does not exist (or is
        not a share group) is described as Dead without members."""
        out = {}
        for group_id in group_ids:

            def group_error(response: Any) -> ErrorCode:
                code = error_code(response.groups[0].error_code)
                return ErrorCode.NO_ERROR if code == ErrorCode.GROUP_ID_NOT_FOUND else code

            node, response = self.requests.to_coordinator(
                group_id,
                ApiKey.SHARE_GROUP_DESCRIBE,
                ShareGroupDescribeRequest(group_ids=[group_id]),
                group_error,
            )
            g = response.groups[0]
            code = error_code(g.error_code)
            if code == ErrorCode.GROUP_ID_NOT_FOUND:
                out[group_id] = ShareGroupDescription(group_id, "Dead", -1, -1, "", (), node)
                continue
            if code != ErrorCode.NO_ERROR:
                raise KafkaError(f"describe share group {group_id}", code=code)
            members = tuple(
                ShareMemberDescription(
                    m.member_id,
                    m.client_id,
                    m.client_host,
                    m.member_epoch,
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
            out[group_id] = ShareGroupDescription(
                group_id,
                g.group_state,
                g.group_epoch,
                g.assignment_epoch,
                g.assignor_name,
                members,
                node,
            )
        return out

    def list_share_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, int]:
        """{partition: share-partition start offset}: every partition the group has a state
        for by default; -1 for one asked for without a state."""
        infos = self.list_share_group_offsets_info(group_id, partitions)
        return {tp: info.start_offset for tp, info in infos.items()}

    def list_share_group_offsets_info(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        """{partition: its start offset, leader epoch and lag}, for the partitions of
        `list_share_group_offsets` (SHARE-51)."""
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, p in partitions:
                by_topic.setdefault(topic, []).append(p)
            topics = [
                DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestTopic(
                    topic_name=t, partitions=sorted(ps)
                )
                for t, ps in sorted(by_topic.items())
            ]
        group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
            group_id=group_id, topics=topics
        )
        _, response = self.requests.to_coordinator(
            group_id,
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            DescribeShareGroupOffsetsRequest(groups=[group]),
            lambda r: error_code(r.groups[0].error_code),
        )
        g = response.groups[0]
        if error_code(g.error_code) != ErrorCode.NO_ERROR:
            raise KafkaError(f"list offsets of share group {group_id}", code=g.error_code)
        out = {}
        for t in g.topics:
            for p in t.partitions:
                tp = TopicPartition(t.topic_name, p.partition_index)
                if error_code(p.error_code) != ErrorCode.NO_ERROR:
                    raise KafkaError(f"offset of {tp} in share group {group_id}", code=p.error_code)
                out[tp] = SharePartitionOffsetInfo(
                    p.start_offset,
                    None if p.leader_epoch < 0 else p.leader_epoch,
                    None if p.lag < 0 else p.lag,
                )
        return dict(sorted(out.items()))

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> None:
        """Start the share-partitions again at `offsets`; the group must be empty."""
        R = AlterShareGroupOffsetsRequest
        by_topic: dict[str, list[Any]] = {}
        for (topic, p), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                R.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=offset)
            )
        request = R(
            group_id=group_id,
            topics=[
                R.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        _, response = self.requests.to_coordinator(
            group_id, ApiKey.ALTER_SHARE_GROUP_OFFSETS, request, lambda r: error_code(r.error_code)
        )
        if error_code(response.error_code) != ErrorCode.NO_ERROR:
            raise KafkaError(f"alter offsets of share group {group_id}", code=response.error_code)
        for t in response.responses:
            for p in t.partitions:
                if error_code(p.error_code) != ErrorCode.NO_ERROR:
                    tp = TopicPartition(t.topic_name, p.partition_index)
                    raise KafkaError(f"alter offset of {tp} in group {group_id}", code=p.error_code)

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str]
    ) -> dict[str, ErrorCode]:
        """Delete the group's state of these topics: {topic: error}. Raises for an error of
        the whole group (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...)."""
        R = DeleteShareGroupOffsetsRequest
        request = R(
            group_id=group_id,
            topics=[R.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics],
        )
        _, response = self.requests.to_coordinator(
            group_id, ApiKey.DELETE_SHARE_GROUP_OFFSETS, request, lambda r: error_code(r.error_code)
        )
        if error_code(response.error_code) != ErrorCode.NO_ERROR:
            raise KafkaError(f"delete offsets of share group {group_id}", code=response.error_code)
        return {t.topic_name: error_code(t.error_code) for t in response.responses}
