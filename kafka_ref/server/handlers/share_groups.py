"""Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe and the admin's offsets.

Each handler translates one request into one call on the group coordinator's
`ShareGroupCoordinator` (kafka_ref/share/share_group_coordinator.py) and its answer into the
response; the group logic lives there. Kafka: `KafkaApis.handleShareGroupHeartbeat`,
`handleShareGroupDescribe`.

* **ShareGroupHeartbeat** (76) answers once the coordinator's records are durable (the
  handler returns `DEFERRED`). It needs READ on the group and DESCRIBE on every topic it
  subscribes to (TOPIC_AUTHORIZATION_FAILED otherwise, before the group is touched), and
  hands the coordinator every topic the controller knows, with its id and partitions.
* **ShareGroupDescribe** (77) describes share groups: epochs, the assignor (`simple`) and
  every member with its subscription and assignment, topic ids resolved to names; a group
  of another type, or none, is GROUP_ID_NOT_FOUND (SHARE-47).
* **DescribeShareGroupOffsets** (90), **AlterShareGroupOffsets** (91) and
  **DeleteShareGroupOffsets** (92) resolve topic names to ids, check the topics, and hand
  the rest to the coordinator's `ShareGroupAdmin`, which reads, starts again or deletes
  the share-partitions' state through the persister; they answer once it has (SHARE-49).
  DescribeShareGroupOffsets v1 adds each share-partition's lag, from the partition's high
  watermark asked of its leader (SHARE-51).

Rules: SHARE-40, SHARE-47, SHARE-49, SHARE-51.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group import Assignment
from kafka_ref.protocol.messages import (
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponse,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatResponse,
)
from kafka_ref.protocol.messages.api_76_share_group_heartbeat import (
    TOPIC_PARTITIONS as HEARTBEAT_TOPIC_PARTITIONS,
)
from kafka_ref.protocol.messages.api_77_share_group_describe import ASSIGNMENT, TOPIC_PARTITIONS
from kafka_ref.server.handlers.authz import Op, Res, authorized, authorized_operations
from kafka_ref.server.handlers.consumer_groups import topic_images
from kafka_ref.server.handlers.groups import _answer, _client_host
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED
from kafka_ref.share.share_group import ShareGroup
from kafka_ref.share.share_group_assignor import SIMPLE
from kafka_ref.share.share_group_coordinator import ShareHeartbeat

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


def handle_share_group_heartbeat(apis: ApiContext, request: Request) -> Any:
    body = request.body
    if not authorized(apis, request, Op.READ, Res.GROUP, body.group_id):
        return ShareGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = body.subscribed_topic_names
    if names and not all(authorized(apis, request, Op.DESCRIBE, Res.TOPIC, n) for n in names):
        return ShareGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    heartbeat = ShareHeartbeat(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        rack_id=body.rack_id,
        subscribed_topic_names=None if names is None else tuple(names),
        client_id=request.client_id or "",
        client_host=_client_host(request),
    )

    def done(result: Any) -> None:
        answer = None
        if result.assignment is not None:
            answer = ShareGroupHeartbeatResponse.Assignment(
                topic_partitions=[
                    HEARTBEAT_TOPIC_PARTITIONS.cls(topic_id=t, partitions=sorted(parts))
                    for t, parts in sorted(result.assignment.items())
                ]
            )
        _answer(
            apis,
            request,
            ShareGroupHeartbeatResponse(
                throttle_time_ms=0,
                error_code=result.error,
                error_message=result.message,
                member_id=result.member_id,
                member_epoch=result.member_epoch,
                heartbeat_interval_ms=result.heartbeat_interval_ms,
                assignment=answer,
            ),
        )

    apis.group_coordinator.share.heartbeat(heartbeat, topic_images(apis), done)
    return DEFERRED


def handle_share_group_describe(apis: ApiContext, request: Request) -> Any:
    body = request.body
    names = {t.topic_id: t.name for t in apis.controller.topics()}
    coordinator = apis.group_coordinator
    groups = []
    for group_id in body.group_ids:
        described = ShareGroupDescribeResponse.DescribedGroup(group_id=group_id)
        groups.append(described)
        if not authorized(apis, request, Op.DESCRIBE, Res.GROUP, group_id):
            described.error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED
            continue
        error = coordinator.rebalance.group_status(group_id)
        if error != ErrorCode.NO_ERROR:
            described.error_code = error
            continue
        group = coordinator.manager.get_group(group_id)
        if isinstance(group, ShareGroup) and group.dead:
            group = None
        if not isinstance(group, ShareGroup):
            described.error_code = ErrorCode.GROUP_ID_NOT_FOUND
            described.error_message = (
                f"Group {group_id} not found."
                if group is None
                else f"Group {group_id} is not a share group."
            )
            continue
        described.group_state = group.state.wire_name
        described.group_epoch = group.group_epoch
        described.assignment_epoch = group.target_assignment_epoch
        described.assignor_name = SIMPLE
        for m in group.members.values():
            described.members.append(
                ShareGroupDescribeResponse.Member(
                    member_id=m.member_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    assignment=_described(m.assigned, names),
                )
            )
        if body.include_authorized_operations:
            described.authorized_operations = authorized_operations(
                apis, request, Res.GROUP, group_id
            )
    return ShareGroupDescribeResponse(throttle_time_ms=0, groups=groups)


def _described(a: Assignment, names: dict) -> Any:
    return ASSIGNMENT.cls(
        topic_partitions=[
            TOPIC_PARTITIONS.cls(topic_id=t, topic_name=names.get(t, ""), partitions=sorted(p))
            for t, p in sorted(a.items())
        ]
    )


# -- the share admin's offsets (SHARE-49) ---------------------------------------------
def handle_describe_share_group_offsets(apis: ApiContext, request: Request) -> Any:
    """Per group, each partition's start offset from the persister's summary and, from v1,
    its lag (SHARE-51); answered once every group's reads are done (DEFERRED)."""
    body = request.body
    topics = {t.name: t for t in apis.controller.topics()}
    names = {t.topic_id: t.name for t in topics.values()}
    R = DescribeShareGroupOffsetsResponse
    groups: list[Any] = []
    waiting = [len(body.groups)]

    def one_done() -> None:
        waiting[0] -= 1
        if waiting[0] == 0:
            _answer(apis, request, R(throttle_time_ms=0, groups=groups))

    for asked in body.groups:
        group = R.DescribeShareGroupOffsetsResponseGroup(group_id=asked.group_id)
        groups.append(group)
        if not authorized(apis, request, Op.DESCRIBE, Res.GROUP, asked.group_id):
            group.error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED
            one_done()
            continue
        refused: dict[str, ErrorCode] = {}
        wanted = None
        if asked.topics is not None:
            wanted = []
            for t in asked.topics:
                if not authorized(apis, request, Op.DESCRIBE, Res.TOPIC, t.topic_name):
                    refused[t.topic_name] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif t.topic_name not in topics:
                    refused[t.topic_name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    wanted.extend((topics[t.topic_name].topic_id, p) for p in t.partitions)

        def described(error, message, results, group=group, asked=asked, refused=refused):
            group.error_code, group.error_message = error, message
            by_topic: dict[Any, list] = {}
            for (topic_id, p), offsets in sorted(results.items()):
                by_topic.setdefault(topic_id, []).append(
                    R.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p,
                        start_offset=offsets.start_offset,
                        leader_epoch=offsets.leader_epoch,
                        lag=offsets.lag,  # v1 (SHARE-51)
                        error_code=offsets.error,
                        error_message=offsets.error_message,
                    )
                )
            for topic_id, partitions in by_topic.items():
                group.topics.append(
                    R.DescribeShareGroupOffsetsResponseTopic(
                        topic_name=names.get(topic_id, ""), topic_id=topic_id, partitions=partitions
                    )
                )
            for t in asked.topics or []:
                if t.topic_name in refused:
                    group.topics.append(_refused_topic(t, refused[t.topic_name]))
            one_done()

        apis.group_coordinator.share_admin.describe_offsets(asked.group_id, wanted, described)
    if not body.groups:
        return R(throttle_time_ms=0, groups=[])
    return DEFERRED


def _refused_topic(asked: Any, error: ErrorCode) -> Any:
    """A topic of DescribeShareGroupOffsets that is not read: each partition with `error`."""
    R = DescribeShareGroupOffsetsResponse
    partitions = [
        R.DescribeShareGroupOffsetsResponsePartition(
            partition_index=p, start_offset=-1, error_code=error
        )
        for p in asked.partitions
    ]
    return R.DescribeShareGroupOffsetsResponseTopic(
        topic_name=asked.topic_name, partitions=partitions
    )


def handle_alter_share_group_offsets(apis: ApiContext, request: Request) -> Any:
    body = request.body
    R = AlterShareGroupOffsetsResponse
    if not authorized(apis, request, Op.READ, Res.GROUP, body.group_id):
        return R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics = {t.name: t for t in apis.controller.topics()}
    offsets, refused = {}, {}
    for t in body.topics:
        image = topics.get(t.topic_name)
        for p in t.partitions:
            if not authorized(apis, request, Op.READ, Res.TOPIC, t.topic_name):
                refused[(t.topic_name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif image is None or not 0 <= p.partition_index < image.partitions:
                refused[(t.topic_name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[(image.topic_id, image.name, p.partition_index)] = p.start_offset

    def altered(error, message, results) -> None:
        answer = R(throttle_time_ms=0, error_code=error, error_message=message)
        for t in body.topics:
            image = topics.get(t.topic_name)
            topic = R.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name)
            if image is not None:
                topic.topic_id = image.topic_id
            for p in t.partitions:
                code = refused.get((t.topic_name, p.partition_index))
                if code is None:
                    code = (
                        error
                        if error != ErrorCode.NO_ERROR
                        else results.get((image.topic_id, p.partition_index), ErrorCode.NO_ERROR)
                    )
                topic.partitions.append(
                    R.AlterShareGroupOffsetsResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                )
            answer.responses.append(topic)
        _answer(apis, request, answer)

    apis.group_coordinator.share_admin.alter_offsets(body.group_id, offsets, altered)
    return DEFERRED


def handle_delete_share_group_offsets(apis: ApiContext, request: Request) -> Any:
    body = request.body
    R = DeleteShareGroupOffsetsResponse
    if not authorized(apis, request, Op.DELETE, Res.GROUP, body.group_id):
        return R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics = {t.name: t for t in apis.controller.topics()}
    wanted, refused = {}, {}
    for t in body.topics:
        if not authorized(apis, request, Op.READ, Res.TOPIC, t.topic_name):
            refused[t.topic_name] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif t.topic_name not in topics:
            refused[t.topic_name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            wanted[topics[t.topic_name].topic_id] = t.topic_name

    def deleted(error, message, results) -> None:
        answer = R(throttle_time_ms=0, error_code=error, error_message=message)
        if error == ErrorCode.NO_ERROR:
            for t in body.topics:
                image = topics.get(t.topic_name)
                code = refused.get(t.topic_name) or results.get(image.topic_id, ErrorCode.NO_ERROR)
                topic = R.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=t.topic_name, error_code=code
                )
                if image is not None:
                    topic.topic_id = image.topic_id
                answer.responses.append(topic)
        _answer(apis, request, answer)

    apis.group_coordinator.share_admin.delete_offsets(body.group_id, wanted, deleted)
    return DEFERRED
