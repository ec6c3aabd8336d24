"""Consumer groups: FindCoordinator, the rebalance APIs, group administration.

Each handler translates one request into one call on the `GroupCoordinator`
(kafka_ref/group/coordinator.py, Kafka: `GroupCoordinator.handleJoinGroup`, ...) and its
result into the response of the request's version; the group logic lives in the
coordinator. Kafka's `KafkaApis.handleJoinGroupRequest` and friends do the same. Committed
offsets (OffsetCommit, OffsetFetch, OffsetDelete) have their own module, group_offsets.py.

* **FindCoordinator** (key 10): key type 0 (a group) makes sure `__consumer_offsets`
  exists (kafka_ref/server/group_adapter.py) and answers the broker that leads the group's
  partition of it (`partition_for`): on one broker always this broker; in a cluster
  whichever broker the controller made leader, and COORDINATOR_NOT_AVAILABLE while the
  partition has no leader (BROKER-44). Key type 1 (a transactional id) answers the
  leader of the id's `__transaction_state` partition, created on first use (TXN-9,
  server/txn_adapter.py). Key type 2 (a share-partition, `group:topicId:partition`)
  answers the leader of its `__share_group_state` partition, created on first use
  (SHARE-70, server/share_coordinator_adapter.py); only brokers ask for it, so with
  authorization on it needs CLUSTER_ACTION on the cluster, as in Kafka. Any other key type
  is INVALID_REQUEST. From v4 one request asks for a list of keys (REBAL-25).
* **JoinGroup** (11) and **SyncGroup** (14) answer later: the coordinator calls back when
  the rebalance round completes, and the callback sends the response (the handler returns
  `DEFERRED`, like a waiting fetch). JoinGroup v0 has no rebalance timeout, so the session
  timeout serves as both (Kafka does the same); from v4 an unknown member joining with an
  empty member id gets MEMBER_ID_REQUIRED and its id (`require_known_member_id`, KIP-394);
  v5 carries `group_instance_id`; v7 answers the protocol type, as SyncGroup v5 does,
  which also checks it (REBAL-19); v8 a reason (REBAL-20); v9 SkipAssignment (REBAL-21).
  The client host is the connection's address, as Kafka's "/127.0.0.1".
* **Heartbeat** (12) and **LeaveGroup** (13) answer at once. LeaveGroup v0-v2 name one
  member; their single error is the top-level error, else the member's (Kafka:
  `LeaveGroupResponse` for version < 3); v3+ a batch of members (REBAL-22).
* **DescribeGroups** (15), **ListGroups** (16), **DeleteGroups** (42): per group results
  from the coordinator, in request order (REBAL-23, REBAL-24).

The flexible versions (FindCoordinator v3, JoinGroup v6, Heartbeat v4, LeaveGroup v4,
SyncGroup v4, DescribeGroups v5, ListGroups v3, DeleteGroups v2) change only the encoding
(REBAL-26).

Rules: BROKER-44, BROKER-45, REBAL-19..REBAL-26.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.group.coordinator import CLASSIC_GROUP_TYPE, GroupSummary
from kafka_ref.group.group_metadata import DEAD
from kafka_ref.group.messages import LeavingMember
from kafka_ref.protocol.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    SyncGroupResponse,
)
from kafka_ref.protocol.messages.api_10_find_coordinator import (
    GROUP_KEY_TYPE,
    SHARE_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
)
from kafka_ref.server.group_adapter import coordinator_of, ensure_offsets_topic
from kafka_ref.server.handlers.authz import Op, Res, authorized, authorized_operations
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED
from kafka_ref.server.share_coordinator_adapter import ensure_share_state_topic
from kafka_ref.server.txn_adapter import coordinator_of as txn_coordinator_of
from kafka_ref.server.txn_adapter import ensure_transaction_topic
from kafka_ref.share.persister import is_coordinator_key

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

NO_PROTOCOL = ""  # Kafka: GroupCoordinator.NoProtocol, sent where a version has no null
SKIP_ASSIGNMENT_VERSION = 9  # JoinGroup: a static leader may skip the assignment (KIP-814)
BATCHED_MEMBERS_VERSION = 3  # LeaveGroup: a batch of members (KIP-345)
GROUP_ID_NOT_FOUND_VERSION = 6  # DescribeGroups: an unknown group is an error (KIP-1043)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # Kafka: Integer.MIN_VALUE, "not asked for"


def no_protocol(version: int) -> str | None:
    """A JoinGroup answer without a chosen protocol (an error, or MEMBER_ID_REQUIRED): null
    from v7, where the field is nullable, else "" (Kafka: `JoinGroupRequest.getErrorResponse`,
    REBAL-27)."""
    return None if version >= 7 else NO_PROTOCOL


def _deferred() -> Any:
    return DEFERRED


def _answer(apis: ApiContext, request: Request, body: Any) -> None:
    """Send a late answer; a client that hung up in the meantime gets none."""
    apis.send(request, None if request.connection_closed() else body)


def _client_host(request: Request) -> str:
    host = getattr(request.connection, "name", "?").rpartition(":")[0]
    return f"/{host}" if host else "/"


# ---------------------------------------------------------------------- FindCoordinator
# A coordinator key's resource, and the error when DESCRIBE on it is refused.
_KEYS = {
    GROUP_KEY_TYPE: (Res.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
    TRANSACTION_KEY_TYPE: (Res.TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
}
BATCHED_KEYS_VERSION = 4  # FindCoordinator answers a list of keys from v4 (KIP-699)


def _group_refused(apis: ApiContext, request: Request, operation: Any = Op.READ) -> bool:
    """Is the request's group out of bounds for its principal? (SEC-17)"""
    return not authorized(apis, request, operation, Res.GROUP, request.body.group_id)


def handle_find_coordinator(apis: ApiContext, request: Request) -> Any:
    """v0-v3 ask for one key; from v4 a list of keys of one type, each answered alone
    (REBAL-25). Kafka: `handleFindCoordinatorRequestLessThanV4`, `...V4AndAbove`."""
    body = request.body
    if request.api_version < BATCHED_KEYS_VERSION:
        error, node_id, host, port = _coordinator(apis, request, body.key_type, body.key)
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            error_code=error,
            error_message=None if error == ErrorCode.NO_ERROR else error.name,
            node_id=node_id,
            host=host,
            port=port,
        )
    coordinators = []
    for key in body.coordinator_keys:
        error, node_id, host, port = _coordinator(apis, request, body.key_type, key)
        coordinators.append(
            FindCoordinatorResponse.Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=error
            )
        )
    return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)


def _coordinator(
    apis: ApiContext, request: Request, key_type: int, key: str
) -> tuple[ErrorCode, int, str, int]:
    """(error, node id, host, port) of one key's coordinator (Kafka `getCoordinator`);
    with an error, node -1, host "" and port -1 (Kafka `Node.noNode`)."""
    if key_type in _KEYS and not authorized(apis, request, Op.DESCRIBE, _KEYS[key_type][0], key):
        error = _KEYS[key_type][1]  # SEC-17
    elif key_type == GROUP_KEY_TYPE:
        error = ensure_offsets_topic(apis.controller, apis.config)
    elif key_type == TRANSACTION_KEY_TYPE:  # TXN-9 (no coordinator: retriable)
        no_txn = apis.txn is None
        error = (
            ErrorCode.COORDINATOR_NOT_AVAILABLE
            if no_txn
            else ensure_transaction_topic(apis.controller, apis.config)
        )
    elif key_type == SHARE_KEY_TYPE and not authorized(
        apis, request, Op.CLUSTER_ACTION, Res.CLUSTER
    ):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elif key_type == SHARE_KEY_TYPE and not is_coordinator_key(key):
        error = ErrorCode.INVALID_REQUEST  # not group:topicId:partition (Kafka validates it)
    elif key_type == SHARE_KEY_TYPE:  # a share-partition's coordinator (SHARE-70)
        error = (
            ErrorCode.COORDINATOR_NOT_AVAILABLE
            if apis.share_coordinator is None
            else ensure_share_state_topic(apis.controller, apis.config)
        )
    else:  # an unknown type
        error = ErrorCode.INVALID_REQUEST
    if error != ErrorCode.NO_ERROR:
        return error, -1, "", -1
    if key_type == TRANSACTION_KEY_TYPE:
        leader = txn_coordinator_of(apis.controller, apis.txn.coordinator, key)
    elif key_type == SHARE_KEY_TYPE:
        leader = apis.share_coordinator.coordinator_of(key)
    else:
        leader = coordinator_of(apis.controller, apis.group_coordinator, key)
    address = leader.address(request.listener_name) if leader is not None else None
    if address is None:  # no leader for the group's partition yet: the client retries
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return ErrorCode.NO_ERROR, leader.node_id, address[0], address[1]  # the listener's (SEC-2)


# ---------------------------------------------------------------------- the rebalance
def handle_join_group(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    rebalance_timeout_ms = body.session_timeout_ms if version == 0 else body.rebalance_timeout_ms
    if _group_refused(apis, request):
        return JoinGroupResponse(
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            generation_id=-1,
            member_id=body.member_id,
            members=[],
        )

    def done(result: Any) -> None:
        members = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
            )
            for m in result.members
        ]
        _answer(
            apis,
            request,
            JoinGroupResponse(
                throttle_time_ms=0,
                error_code=result.error,
                generation_id=result.generation_id,
                protocol_type=result.protocol_type,
                protocol_name=result.protocol_name or no_protocol(version),
                leader=result.leader_id,
                skip_assignment=result.skip_assignment,
                member_id=result.member_id,
                members=members,
            ),
        )

    apis.group_coordinator.rebalance.join_group(
        body.group_id,
        body.member_id,
        body.group_instance_id,
        version >= 4,  # require_known_member_id (KIP-394)
        request.client_id or "",
        _client_host(request),
        rebalance_timeout_ms,
        body.session_timeout_ms,
        body.protocol_type,
        [(p.name, bytes(p.metadata)) for p in body.protocols],
        done,
        reason=body.reason,  # v8+, logged (REBAL-20)
        supports_skip_assignment=version >= SKIP_ASSIGNMENT_VERSION,  # REBAL-21
    )
    return _deferred()


def handle_sync_group(apis: ApiContext, request: Request) -> Any:
    body = request.body
    if _group_refused(apis, request):
        return SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment=b"")

    def done(result: Any) -> None:
        _answer(
            apis,
            request,
            SyncGroupResponse(
                throttle_time_ms=0,
                error_code=result.error,
                protocol_type=result.protocol_type,
                protocol_name=result.protocol_name,
                assignment=result.assignment,
            ),
        )

    apis.group_coordinator.rebalance.sync_group(
        body.group_id,
        body.generation_id,
        body.member_id,
        body.group_instance_id,
        body.protocol_type,  # v5+; null below
        body.protocol_name,
        {a.member_id: bytes(a.assignment) for a in body.assignments},
        done,
    )
    return _deferred()


def handle_heartbeat(apis: ApiContext, request: Request) -> Any:
    body = request.body
    if _group_refused(apis, request):
        return HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = apis.group_coordinator.rebalance.heartbeat(
        body.group_id, body.member_id, body.group_instance_id, body.generation_id
    )
    return HeartbeatResponse(throttle_time_ms=0, error_code=error)


def handle_leave_group(apis: ApiContext, request: Request) -> Any:
    """v0-v2 name one member, whose error is the answer (Kafka: `LeaveGroupResponse` for
    version < 3); from v3 a batch of members, each answered alone (REBAL-22)."""
    body, version = request.body, request.api_version
    if version < BATCHED_MEMBERS_VERSION:
        members = [LeavingMember(body.member_id)]
    else:
        members = [LeavingMember(m.member_id, m.group_instance_id, m.reason) for m in body.members]
    if _group_refused(apis, request):
        return LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    rebalance = apis.group_coordinator.rebalance
    error, results = rebalance.leave_group(body.group_id, members)
    if version < BATCHED_MEMBERS_VERSION:
        if error == ErrorCode.NO_ERROR and results:
            error = results[0][2]  # one member before v3: its error is the answer
        return LeaveGroupResponse(throttle_time_ms=0, error_code=error)
    answered = [
        LeaveGroupResponse.MemberResponse(
            member_id=member_id, group_instance_id=instance_id, error_code=member_error
        )
        for member_id, instance_id, member_error in results
    ]
    return LeaveGroupResponse(throttle_time_ms=0, error_code=error, members=answered)


# ---------------------------------------------------------------------- group administration
def handle_describe_groups(apis: ApiContext, request: Request) -> Any:
    """Per group, in request order. v3+ may ask for the principal's authorized operations
    on each group; v6 answers GROUP_ID_NOT_FOUND, with a message, for a group that does not
    exist, which older versions describe as Dead without an error (REBAL-23); the same for
    a consumer group of KIP-848, "not a classic group" (CGRP-16)."""
    body, version = request.body, request.api_version
    groups = []
    for group_id in body.groups:
        if authorized(apis, request, Op.DESCRIBE, Res.GROUP, group_id):
            error, group = apis.group_coordinator.describe_group(group_id)
        else:  # SEC-17
            error, group = (
                ErrorCode.GROUP_AUTHORIZATION_FAILED,
                GroupSummary(group_id, "", "", "", []),
            )
        message = None
        if (
            version >= GROUP_ID_NOT_FOUND_VERSION
            and error == ErrorCode.NO_ERROR
            and (group.state == DEAD.wire_name)
        ):
            error, message = ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
            if group.group_type != CLASSIC_GROUP_TYPE:  # a KIP-848 group (CGRP-16)
                message = f"Group {group_id} is not a classic group."
        operations = AUTHORIZED_OPERATIONS_OMITTED
        if body.include_authorized_operations and error == ErrorCode.NO_ERROR:
            operations = authorized_operations(apis, request, Res.GROUP, group_id)
        members = [
            DescribeGroupsResponse.DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,  # v4+
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata,
                member_assignment=m.assignment,
            )
            for m in group.members
        ]
        groups.append(
            DescribeGroupsResponse.DescribedGroup(
                error_code=error,
                error_message=message,
                group_id=group_id,
                group_state=group.state,
                protocol_type=group.protocol_type or "",
                protocol_data=group.protocol_name or "",
                members=members,
                authorized_operations=operations,
            )
        )
    return DescribeGroupsResponse(throttle_time_ms=0, groups=groups)


def handle_list_groups(apis: ApiContext, request: Request) -> Any:
    """Every group this broker coordinates; v4+ may filter by state, v5+ by type, and
    answer each group's state and type (REBAL-24)."""
    body = request.body
    error, overviews = apis.group_coordinator.list_groups(body.states_filter, body.types_filter)
    if not authorized(apis, request, Op.DESCRIBE, Res.CLUSTER):  # else only describable ones
        overviews = [
            g for g in overviews if authorized(apis, request, Op.DESCRIBE, Res.GROUP, g.group_id)
        ]
    groups = [
        ListGroupsResponse.ListedGroup(
            group_id=g.group_id,
            protocol_type=g.protocol_type or "",
            group_state=g.state,  # v4+
            group_type=g.group_type,  # v5+
        )
        for g in overviews
    ]
    return ListGroupsResponse(throttle_time_ms=0, error_code=error, groups=groups)


def handle_delete_groups(apis: ApiContext, request: Request) -> Any:
    """Per group; v3's error message stays null, as in Kafka (OFFSET-7)."""
    names = list(dict.fromkeys(request.body.groups_names))
    allowed = [n for n in names if authorized(apis, request, Op.DELETE, Res.GROUP, n)]
    results = dict.fromkeys(names, ErrorCode.GROUP_AUTHORIZATION_FAILED)  # SEC-17
    results.update(apis.group_coordinator.delete_groups(allowed))
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=name, error_code=results[name])
            for name in names
        ],
    )
