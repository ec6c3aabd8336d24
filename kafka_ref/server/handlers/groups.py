"""Consumer groups: FindCoordinator, the rebalance APIs, committed offsets, group admin.

Each handler translates one request into one call on the `GroupCoordinator`
(kafka_ref/group/coordinator.py, Kafka: `GroupCoordinator.handleJoinGroup`, ...) and its
result into the response; the group logic lives in the coordinator. Kafka's
`KafkaApis.handleJoinGroupRequest` and friends do the same.

* **FindCoordinator** (key 10): key type 0 (a group) makes sure `__consumer_offsets`
  exists (kafka_ref/server/group_adapter.py) and answers the broker that leads the group's
  partition of it (`partition_for`): on one broker always this broker; in a cluster
  whichever broker the controller made leader, and COORDINATOR_NOT_AVAILABLE while the
  partition has no leader (BROKER-44). Key type 1 (a transactional id) answers the
  leader of the id's `__transaction_state` partition, created on first use (TXN-9,
  server/txn_adapter.py). Any other key type is INVALID_REQUEST.
* **JoinGroup** (11) and **SyncGroup** (14) answer later: the coordinator calls back when
  the rebalance round completes, and the callback sends the response (the handler returns
  `DEFERRED`, like a waiting fetch). JoinGroup v0 has no rebalance timeout, so the session
  timeout serves as both (Kafka does the same); from v4 an unknown member joining with an
  empty member id gets MEMBER_ID_REQUIRED and its id (`require_known_member_id`, KIP-394);
  v5 carries `group_instance_id`. The client host is the connection's address, as Kafka's
  "/127.0.0.1".
* **Heartbeat** (12) and **LeaveGroup** (13) answer at once. LeaveGroup v0-v2 name one
  member; their single error is the top-level error, else the member's (Kafka:
  `LeaveGroupResponse` for version < 3).
* **OffsetCommit** (8) answers from the coordinator's callback, after the commit is
  appended to `__consumer_offsets`. Partitions of topics the broker does not know get
  UNKNOWN_TOPIC_OR_PARTITION and are not committed. The commit timestamp is the broker's
  clock; `retention_time_ms` (v2-v4) of -1 means the broker default
  (`offsets.retention.minutes` after the group becomes empty, KIP-211), and any other value
  sets an explicit expiry `now + retention_time_ms`, as Kafka 2.1+ still does for v2-v4.
  Null metadata is stored as "".
* **OffsetFetch** (9): a partition never committed answers offset -1, metadata "" and no
  error. v1 has no top-level error, so a group-level error is repeated on every requested
  partition; v2+ answers it at the top with no partitions, and a null topic list (v2+)
  means every partition the group has committed (Kafka: `OffsetFetchRequest.getErrorResponse`).
* **DescribeGroups** (15), **ListGroups** (16), **DeleteGroups** (42): per group results
  from the coordinator, in request order.

Rules: BROKER-44, BROKER-45.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.group.coordinator import GroupSummary
from kafka_ref.protocol.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from kafka_ref.protocol.messages.api_10_find_coordinator import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
)
from kafka_ref.server.group_adapter import coordinator_of, ensure_offsets_topic
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED
from kafka_ref.server.txn_adapter import coordinator_of as txn_coordinator_of
from kafka_ref.server.txn_adapter import ensure_transaction_topic

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

NO_PROTOCOL = ""  # Kafka: GroupCoordinator.NoProtocol, sent where a version has no null
NO_OFFSET = -1  # Kafka: OffsetFetchResponse.INVALID_OFFSET
DEFAULT_RETENTION_TIME = -1  # Kafka: OffsetCommitRequest.DEFAULT_RETENTION_TIME


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


def _group_refused(apis: ApiContext, request: Request, operation: Any = Op.READ) -> bool:
    """Is the request's group out of bounds for its principal? (SEC-17)"""
    return not authorized(apis, request, operation, Res.GROUP, request.body.group_id)


def handle_find_coordinator(apis: ApiContext, request: Request) -> Any:
    key_type = request.body.key_type  # v0: 0 (a group)
    if key_type in _KEYS and not authorized(apis, request, Op.DESCRIBE, _KEYS[key_type][0],
                                            request.body.key):  # fmt: skip
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
    else:
        error = ErrorCode.INVALID_REQUEST
    if error != ErrorCode.NO_ERROR:
        return FindCoordinatorResponse(
            throttle_time_ms=0, error_code=error, error_message=error.name, node_id=-1,
            host="", port=-1,
        )  # fmt: skip
    if key_type == TRANSACTION_KEY_TYPE:
        leader = txn_coordinator_of(apis.controller, apis.txn.coordinator, request.body.key)
    else:
        leader = coordinator_of(apis.controller, apis.group_coordinator, request.body.key)
    address = leader.address(request.listener_name) if leader is not None else None
    if address is None:  # no leader for the group's partition yet: the client retries
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        return FindCoordinatorResponse(
            throttle_time_ms=0, error_code=error, error_message=error.name, node_id=-1,
            host="", port=-1,
        )  # fmt: skip
    return FindCoordinatorResponse(
        throttle_time_ms=0, error_code=error, error_message=None, node_id=leader.node_id,
        host=address[0], port=address[1],  # the client's listener's address (SEC-2)
    )  # fmt: skip


# ---------------------------------------------------------------------- the rebalance
def handle_join_group(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    rebalance_timeout_ms = body.session_timeout_ms if version == 0 else body.rebalance_timeout_ms
    if _group_refused(apis, request):
        return JoinGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, generation_id=-1,
                                 member_id=body.member_id, members=[])  # fmt: skip

    def done(result: Any) -> None:
        members = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
            )
            for m in result.members
        ]
        _answer(apis, request, JoinGroupResponse(
            throttle_time_ms=0, error_code=result.error, generation_id=result.generation_id,
            protocol_type=result.protocol_type, protocol_name=result.protocol_name or NO_PROTOCOL,
            leader=result.leader_id, member_id=result.member_id, members=members,
        ))  # fmt: skip

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
    )
    return _deferred()


def handle_sync_group(apis: ApiContext, request: Request) -> Any:
    body = request.body
    if _group_refused(apis, request):
        return SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment=b"")

    def done(result: Any) -> None:
        _answer(apis, request, SyncGroupResponse(
            throttle_time_ms=0, error_code=result.error, protocol_type=result.protocol_type,
            protocol_name=result.protocol_name, assignment=result.assignment,
        ))  # fmt: skip

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
    body = request.body
    if _group_refused(apis, request):
        return LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    rebalance = apis.group_coordinator.rebalance
    error, members = rebalance.leave_group(body.group_id, [(body.member_id, None)])
    if error == ErrorCode.NO_ERROR and members:
        error = members[0][2]  # one member before v3: its error is the answer
    return LeaveGroupResponse(throttle_time_ms=0, error_code=error)


# ---------------------------------------------------------------------- committed offsets
def requested_offsets(
    apis: ApiContext, request: Request, now: int, expire: int | None = None
) -> tuple[list[TopicPartition], dict[TopicPartition, ErrorCode], dict]:
    """The offsets of an OffsetCommit or TxnOffsetCommit: every partition in request order,
    GROUP_AUTHORIZATION_FAILED on all without READ on the group, TOPIC_AUTHORIZATION_FAILED
    for a topic without READ (SEC-17), UNKNOWN_TOPIC_OR_PARTITION for one the cluster does
    not have, the rest stamped `now`."""
    body, group_refused = request.body, _group_refused(apis, request)
    order: list[TopicPartition] = []
    errors: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            order.append(tp)
            if group_refused:
                errors[tp] = ErrorCode.GROUP_AUTHORIZATION_FAILED
                continue
            if not authorized(apis, request, Op.READ, Res.TOPIC, tp.topic):
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if apis.controller.partition_state(tp.topic, tp.partition) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offsets[tp] = OffsetAndMetadata(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch,
                metadata=p.committed_metadata or "",
                commit_timestamp=now,
                expire_timestamp=expire,
            )
    return order, errors, offsets


def handle_offset_commit(apis: ApiContext, request: Request) -> Any:
    body = request.body
    now = apis.clock.milliseconds()
    retention = body.retention_time_ms
    expire = None if retention == DEFAULT_RETENTION_TIME else now + retention  # KIP-211
    order, errors, offsets = requested_offsets(apis, request, now, expire)

    def done(results: dict[TopicPartition, ErrorCode]) -> None:
        errors.update(results)
        _answer(apis, request, _commit_response(order, errors))

    if not offsets:
        return _commit_response(order, errors)
    apis.group_coordinator.commit_offsets(
        body.group_id, body.member_id, None, body.generation_id_or_member_epoch, offsets, done
    )
    return _deferred()


def _commit_response(order: list[TopicPartition], errors: dict[TopicPartition, Any]) -> Any:
    topics: list[Any] = []
    for tp in dict.fromkeys(order):
        if not topics or topics[-1].name != tp.topic:
            topics.append(OffsetCommitResponse.OffsetCommitResponseTopic(name=tp.topic))
        topics[-1].partitions.append(
            OffsetCommitResponse.OffsetCommitResponsePartition(
                partition_index=tp.partition, error_code=errors[tp]
            )
        )
    return OffsetCommitResponse(throttle_time_ms=0, topics=topics)


def handle_offset_fetch(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    requested = None
    if body.topics is not None:
        requested = [
            TopicPartition(t.name, index) for t in body.topics for index in t.partition_indexes
        ]
    if _group_refused(apis, request, Op.DESCRIBE):
        error, offsets = ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
    else:
        error, offsets = apis.group_coordinator.fetch_offsets(body.group_id, requested)
    # A topic the principal may not describe: refused if named, left out if not (SEC-17).
    hidden = {t for t in {tp.topic for tp in requested or offsets} if not authorized(
        apis, request, Op.DESCRIBE, Res.TOPIC, t)}  # fmt: skip
    if requested is None:
        offsets = {tp: o for tp, o in offsets.items() if tp.topic not in hidden}
    if error != ErrorCode.NO_ERROR:
        if version >= 2:
            return OffsetFetchResponse(throttle_time_ms=0, topics=[], error_code=error)
        offsets = dict.fromkeys(requested or [])  # v1: the error goes on every partition
    partitions = list(dict.fromkeys(requested)) if requested is not None else sorted(offsets)
    unstable: set[TopicPartition] = set()
    if version >= 7 and body.require_stable and error == ErrorCode.NO_ERROR:
        unstable = apis.group_coordinator.unstable_offsets(body.group_id)  # KIP-447, TXN-84
    topics: list[Any] = []
    for tp in partitions:
        committed = None if tp in unstable else offsets.get(tp)
        if not topics or topics[-1].name != tp.topic:
            topics.append(OffsetFetchResponse.OffsetFetchResponseTopic(name=tp.topic))
        topics[-1].partitions.append(
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=tp.partition,
                committed_offset=NO_OFFSET if committed is None else committed.offset,
                committed_leader_epoch=-1 if committed is None else committed.leader_epoch,
                metadata="" if committed is None else committed.metadata,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if tp.topic in hidden
                else ErrorCode.UNSTABLE_OFFSET_COMMIT
                if tp in unstable
                else error,
            )
        )
    return OffsetFetchResponse(throttle_time_ms=0, topics=topics, error_code=error)


# ---------------------------------------------------------------------- group administration
def handle_describe_groups(apis: ApiContext, request: Request) -> Any:
    groups = []
    for group_id in request.body.groups:
        if authorized(apis, request, Op.DESCRIBE, Res.GROUP, group_id):
            error, group = apis.group_coordinator.describe_group(group_id)
        else:  # SEC-17
            error, group = (
                ErrorCode.GROUP_AUTHORIZATION_FAILED,
                GroupSummary(group_id, "", "", "", []),
            )
        members = [
            DescribeGroupsResponse.DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
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
                group_id=group_id,
                group_state=group.state,
                protocol_type=group.protocol_type or "",
                protocol_data=group.protocol_name or "",
                members=members,
            )
        )
    return DescribeGroupsResponse(throttle_time_ms=0, groups=groups)


def handle_list_groups(apis: ApiContext, request: Request) -> Any:
    error, overviews = apis.group_coordinator.list_groups()
    if not authorized(apis, request, Op.DESCRIBE, Res.CLUSTER):  # else only describable ones
        overviews = [g for g in overviews if authorized(apis, request, Op.DESCRIBE, Res.GROUP,
                                                        g.group_id)]  # fmt: skip
    groups = [
        ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "")
        for g in overviews
    ]
    return ListGroupsResponse(throttle_time_ms=0, error_code=error, groups=groups)


def handle_delete_groups(apis: ApiContext, request: Request) -> Any:
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
