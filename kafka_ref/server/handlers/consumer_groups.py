"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Each handler translates one request into one call on the group coordinator's
`ConsumerGroupCoordinator` (kafka_ref/group/consumer_group_coordinator.py) and its answer
into the response; the group logic lives there. Kafka: `KafkaApis.
handleConsumerGroupHeartbeat`, `handleConsumerGroupDescribe`.

* **ConsumerGroupHeartbeat** (68) answers once the coordinator's records are durable (the
  handler returns `DEFERRED`). The coordinator needs the topics' ids and partition counts
  to assign and to tell a metadata change (CGRP-4): the handler hands it every topic the
  controller knows, internal ones included, as Kafka's metadata image does (a regex that
  matches `__consumer_offsets` is given its partitions, CGRP-17). Topic ids travel as
  UUIDs both ways, as on the wire.
* **ConsumerGroupDescribe** (69) describes consumer groups: epochs, assignor, and every
  member with its subscription, its current and its target assignment, topic ids resolved
  to names; a classic group or an unknown one is GROUP_ID_NOT_FOUND (CGRP-16), which tells
  the Java admin client to ask DescribeGroups instead.

Both check READ (heartbeat) or DESCRIBE (describe) on the group, as Kafka does.

Rules: CGRP-1, CGRP-16.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group import Assignment, ConsumerGroup, assignment
from kafka_ref.group.consumer_group_coordinator import ConsumerHeartbeat, TopicImage
from kafka_ref.protocol.messages import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
)
from kafka_ref.protocol.messages.api_68_consumer_group_heartbeat import (
    TOPIC_PARTITIONS as HEARTBEAT_TOPIC_PARTITIONS,
)
from kafka_ref.protocol.messages.api_69_consumer_group_describe import (
    ASSIGNMENT,
    TOPIC_PARTITIONS,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized, authorized_operations
from kafka_ref.server.handlers.groups import _answer, _client_host
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

MEMBER_TYPE_CONSUMER = 1  # ConsumerGroupDescribe v1: a member of the consumer protocol


def topic_images(apis: ApiContext) -> list[TopicImage]:
    """The cluster's topics as the consumer group coordinator sees them."""
    return [TopicImage(t.name, t.topic_id, t.partitions) for t in apis.controller.topics()]


def _wire(a: Assignment) -> list[Any]:
    return [
        HEARTBEAT_TOPIC_PARTITIONS.cls(topic_id=t, partitions=sorted(parts))
        for t, parts in sorted(a.items())
    ]


def handle_consumer_group_heartbeat(apis: ApiContext, request: Request) -> Any:
    body = request.body
    if not authorized(apis, request, Op.READ, Res.GROUP, body.group_id):
        return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    owned = None
    if body.topic_partitions is not None:
        owned = assignment((tp.topic_id, tp.partitions) for tp in body.topic_partitions)
    names = body.subscribed_topic_names
    heartbeat = ConsumerHeartbeat(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=body.subscribed_topic_regex,
        server_assignor=body.server_assignor,
        owned=owned,
        client_id=request.client_id or "",
        client_host=_client_host(request),
        api_version=request.api_version,
    )

    def done(result: Any) -> None:
        answer = None
        if result.assignment is not None:
            answer = ConsumerGroupHeartbeatResponse.Assignment(
                topic_partitions=_wire(result.assignment)
            )
        _answer(
            apis,
            request,
            ConsumerGroupHeartbeatResponse(
                throttle_time_ms=0,
                error_code=result.error,
                error_message=result.message,
                member_id=result.member_id,
                member_epoch=result.member_epoch,
                heartbeat_interval_ms=result.heartbeat_interval_ms,
                assignment=answer,
            ),
        )

    apis.group_coordinator.consumer.heartbeat(heartbeat, topic_images(apis), done)
    return DEFERRED


def handle_consumer_group_describe(apis: ApiContext, request: Request) -> Any:
    body = request.body
    names = {t.topic_id: t.name for t in apis.controller.topics()}
    coordinator = apis.group_coordinator
    groups = []
    for group_id in body.group_ids:
        described = ConsumerGroupDescribeResponse.DescribedGroup(group_id=group_id)
        groups.append(described)
        if not authorized(apis, request, Op.DESCRIBE, Res.GROUP, group_id):
            described.error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED
            continue
        error = coordinator.rebalance.group_status(group_id)
        group = coordinator.manager.get_group(group_id) if error == ErrorCode.NO_ERROR else None
        if error != ErrorCode.NO_ERROR:
            described.error_code = error
            continue
        if not isinstance(group, ConsumerGroup) or group.dead:
            described.error_code = ErrorCode.GROUP_ID_NOT_FOUND
            described.error_message = (
                f"Group {group_id} not found."
                if group is None
                else f"Group {group_id} is not a consumer group."
            )
            continue
        described.group_state = group.state.wire_name
        described.group_epoch = group.group_epoch
        described.assignment_epoch = group.target_assignment_epoch
        described.assignor_name = (
            group.preferred_server_assignor() or coordinator.config.group_consumer_assignors[0]
        )
        for m in group.members.values():
            described.members.append(
                ConsumerGroupDescribeResponse.Member(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=_described(m.assigned, names),
                    target_assignment=_described(
                        group.target_assignment.get(m.member_id, {}), names
                    ),
                    member_type=MEMBER_TYPE_CONSUMER,
                )
            )
        if body.include_authorized_operations:
            described.authorized_operations = authorized_operations(
                apis, request, Res.GROUP, group_id
            )
    return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=groups)


def _described(a: Assignment, names: dict) -> Any:
    return ASSIGNMENT.cls(
        topic_partitions=[
            TOPIC_PARTITIONS.cls(topic_id=t, topic_name=names.get(t, ""), partitions=sorted(p))
            for t, p in sorted(a.items())
        ]
    )
