"""ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46):
an operator's requests to the controller about where replicas and leaders are.

Admin clients send them to the controller (Metadata's `controller_id`). In a ZooKeeper
cluster the handler hands them to the active controller's event thread
(leader_balance.py, reassignment.py) and answers when it has decided; another broker
answers NOT_CONTROLLER and the client looks the controller up again.

A single broker in embedded mode (no ZooKeeper) answers as a one-broker Kafka does
(CTRL-29): every partition has one replica, on this broker, which leads it. So a
reassignment to exactly this broker has nothing to do (NO_ERROR), one naming another broker
is INVALID_REPLICA_ASSIGNMENT (that broker is not registered), a cancel is
NO_REASSIGNMENT_IN_PROGRESS, the list of reassignments is empty, and an election is
ELECTION_NOT_NEEDED.

All three need ALTER (the reassignments and the elections) or DESCRIBE (the list) on the
cluster when authorization is on (Kafka: `KafkaApis.handleAlterPartitionReassignmentsRequest`).

A v1 request may forbid a target that changes a partition's replication factor (CTRL-33).

Rules: CTRL-24..CTRL-29, CTRL-33.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.leader_balance import ElectionType
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.reassignment_responses import (
    alter_response,
    elect_response,
    list_response,
)
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


def _answer_later(apis: ApiContext, request: Request, respond: Any) -> Any:
    """A reply callback for the controller's thread that sends `respond(result)`."""
    loop = asyncio.get_running_loop()
    return lambda result: loop.call_soon_threadsafe(apis.send, request, respond(result))


def _controller(apis: ApiContext) -> Any:
    """The active controller here, None in embedded mode; raises NOT_CONTROLLER otherwise."""
    controller = apis.kafka_controller
    if controller is not None and not controller.active:
        return False
    return controller


def _top(results: dict | None) -> ErrorCode:
    """The top-level error of a controller's answer: None means it resigned meanwhile."""
    return ErrorCode.NOT_CONTROLLER if results is None else ErrorCode.NO_ERROR


def _embedded_known(apis: ApiContext, tp: TopicPartition) -> bool:
    meta = apis.controller.topic(tp[0])
    return meta is not None and 0 <= tp[1] < meta.partitions


# ---------------------------------------------------------------------- AlterPartitionReassignments
def handle_alter_partition_reassignments(apis: ApiContext, request: Request) -> Any:
    allow = request.body.allow_replication_factor_change  # true before v1 (CTRL-33)
    items = [
        (t.name, p.partition_index, None if p.replicas is None else tuple(p.replicas))
        for t in request.body.topics
        for p in t.partitions
    ]
    if not authorized(apis, request, Op.ALTER, Res.CLUSTER):
        return alter_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {}, allow)
    controller = _controller(apis)
    if controller is False:
        return alter_response(ErrorCode.NOT_CONTROLLER, {}, allow)
    if controller is None:
        return alter_response(
            ErrorCode.NO_ERROR,
            {
                TopicPartition(t, p): _embedded_reassign(apis, TopicPartition(t, p), target)
                for t, p, target in items
            },
            allow,
        )
    reply = _answer_later(apis, request, lambda r: alter_response(_top(r), r or {}, allow))
    controller.alter_reassignments(items, reply, allow)
    return DEFERRED


def _embedded_reassign(
    apis: ApiContext, tp: TopicPartition, target: tuple[int, ...] | None
) -> tuple[ErrorCode, str | None]:
    if not _embedded_known(apis, tp):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp[0]}-{tp[1]}."
    if target is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment in progress."
    if tuple(target) != (apis.broker_id,):
        return ErrorCode.INVALID_REPLICATION_ASSIGNMENT, (
            f"Only broker {apis.broker_id} is registered: a single broker has nowhere to move to."
        )
    return ErrorCode.NO_ERROR, None


# ---------------------------------------------------------------------- ListPartitionReassignments
def handle_list_partition_reassignments(apis: ApiContext, request: Request) -> Any:
    wanted = request.body.topics
    if not authorized(apis, request, Op.DESCRIBE, Res.CLUSTER):
        return list_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
    controller = _controller(apis)
    if controller is False:
        return list_response(ErrorCode.NOT_CONTROLLER, {})
    if controller is None:
        return list_response(ErrorCode.NO_ERROR, {})

    def respond(moves: dict | None) -> Any:
        if moves is None:
            return list_response(ErrorCode.NOT_CONTROLLER, {})
        if wanted is not None:
            asked = {(t.name, p) for t in wanted for p in t.partition_indexes}
            moves = {tp: m for tp, m in moves.items() if tp in asked}
        return list_response(ErrorCode.NO_ERROR, moves)

    controller.list_reassignments(_answer_later(apis, request, respond))
    return DEFERRED


# ---------------------------------------------------------------------- ElectLeaders
def handle_elect_leaders(apis: ApiContext, request: Request) -> Any:
    body = request.body
    partitions = None
    if body.topic_partitions is not None:
        partitions = [
            TopicPartition(t.topic, p) for t in body.topic_partitions for p in t.partitions
        ]
    if not authorized(apis, request, Op.ALTER, Res.CLUSTER):
        return elect_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
    try:
        election = ElectionType(body.election_type)
    except ValueError:
        return elect_response(ErrorCode.INVALID_REQUEST, {})
    controller = _controller(apis)
    if controller is False:
        return elect_response(ErrorCode.NOT_CONTROLLER, {})
    if controller is None:
        if partitions is None:
            partitions = [
                TopicPartition(m.name, p)
                for m in apis.controller.topics()
                for p in range(m.partitions)
            ]
        return elect_response(
            ErrorCode.NO_ERROR,
            {
                tp: (ErrorCode.ELECTION_NOT_NEEDED, "The only replica leads already.")
                if _embedded_known(apis, tp)
                else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp[0]}-{tp[1]}.")
                for tp in partitions
            },
        )
    reply = _answer_later(apis, request, lambda r: elect_response(_top(r), r or {}))
    controller.elect_leaders(election, partitions, reply)
    return DEFERRED
