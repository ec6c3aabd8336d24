"""Committed offsets over the wire: OffsetCommit, OffsetFetch and OffsetDelete.

Each handler checks what the broker checks before the group coordinator sees a request
(authorization, topics the cluster knows) and turns the coordinator's answer
(kafka_ref/group/coordinator.py) into the response of the request's version. Kafka:
`KafkaApis.handleOffsetCommitRequest`, `handleOffsetFetchRequest`,
`handleOffsetDeleteRequest`.

* **OffsetCommit** (8) answers from the coordinator's callback, after the commit is
  appended to `__consumer_offsets`. Partitions of topics the broker does not know get
  UNKNOWN_TOPIC_OR_PARTITION and are not committed. The commit timestamp is the broker's
  clock; `retention_time_ms` (v2-v4) of -1 means the broker default
  (`offsets.retention.minutes` after the group becomes Empty, KIP-211), and any other value
  sets an explicit expiry `now + retention_time_ms`, as Kafka 2.1+ still does for v2-v4;
  from v5 there is no retention time in the request. Null metadata is stored as "". v6
  adds the leader epoch kept with the offset (OFFSET-10), v7 the static member's instance
  id (OFFSET-12), v9 GROUP_ID_NOT_FOUND for a member of a group that does not exist
  (OFFSET-11), v10 topic ids instead of names: an id the cluster does not know is
  UNKNOWN_TOPIC_ID (OFFSET-13).
* **OffsetFetch** (9): a partition never committed answers offset -1, metadata "" and no
  error. v1 has no top-level error, so a group-level error is repeated on every requested
  partition; v2-v7 answer it at the top with no partitions, and a null topic list (v2+)
  means every partition the group has committed (Kafka:
  `OffsetFetchRequest.getErrorResponse`). v5 returns the committed leader epoch. From v8 a
  request names several groups, each answered alone with its own error (OFFSET-14); v9's
  member id and epoch belong to the KIP-848 protocol: a consumer group checks them
  (STALE_MEMBER_EPOCH, CGRP-12), a classic group does not (Kafka
  `ClassicGroup.validateOffsetFetch`); v10 names topics by id (OFFSET-13).
* **OffsetDelete** (47): the coordinator deletes the group's offsets of partitions no
  member subscribes to (OFFSET-15).

Rules: OFFSET-10..OFFSET-15, SEC-17.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

NO_OFFSET = -1  # Kafka: OffsetFetchResponse.INVALID_OFFSET
DEFAULT_RETENTION_TIME = -1  # Kafka: OffsetCommitRequest.DEFAULT_RETENTION_TIME
TOPIC_IDS_VERSION = 10  # OffsetCommit and OffsetFetch name topics by id from v10 (KIP-848)
MULTI_GROUP_VERSION = 8  # OffsetFetch asks for several groups from v8 (KIP-709)
ZERO_UUID = uuid.UUID(int=0)


def _answer(apis: ApiContext, request: Request, body: Any) -> None:
    """Send a late answer; a client that hung up in the meantime gets none."""
    apis.send(request, None if request.connection_closed() else body)


def _group_refused(apis: ApiContext, request: Request, group_id: str, operation: Any) -> bool:
    """Is the group out of bounds for the request's principal? (SEC-17)"""
    return not authorized(apis, request, operation, Res.GROUP, group_id)


def topic_ids(apis: ApiContext) -> dict[str, uuid.UUID]:
    """Every topic's id by name (Kafka: `MetadataCache.getTopicId`), for the v10 requests."""
    return {meta.name: meta.topic_id for meta in apis.controller.topics()}


# ---------------------------------------------------------------------- OffsetCommit
def requested_offsets(
    apis: ApiContext, request: Request, topics: list[Any], now: int, expire: int | None = None
) -> tuple[list[TopicPartition], dict[TopicPartition, ErrorCode], dict]:
    """The offsets of an OffsetCommit or TxnOffsetCommit: every partition of `topics` (the
    request's, by name) in request order, GROUP_AUTHORIZATION_FAILED on all without READ
    on the group, TOPIC_AUTHORIZATION_FAILED for a topic without READ (SEC-17),
    UNKNOWN_TOPIC_OR_PARTITION for one the cluster does not have, the rest stamped `now`."""
    group_refused = _group_refused(apis, request, request.body.group_id, Op.READ)
    order: list[TopicPartition] = []
    errors: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    for topic in topics:
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
                leader_epoch=p.committed_leader_epoch,  # -1 before v6 (OFFSET-10)
                metadata=p.committed_metadata or "",
                commit_timestamp=now,
                expire_timestamp=expire,
            )
    return order, errors, offsets


def _by_name(apis: ApiContext, topics: list[Any]) -> tuple[list[Any], list[Any]]:
    """v10's topics by id: (those the cluster knows, now with their names; the others)."""
    names = {topic_id: name for name, topic_id in topic_ids(apis).items()}
    known, unknown = [], []
    for topic in topics:
        topic.name = names.get(topic.topic_id, "")  # Kafka sets the name the same way
        (known if topic.name else unknown).append(topic)
    return known, unknown


def handle_offset_commit(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    now = apis.clock.milliseconds()
    retention = body.retention_time_ms  # v2-v4; -1 (the broker's retention) from v5
    expire = None if retention == DEFAULT_RETENTION_TIME else now + retention  # KIP-211
    topics, unknown_ids = body.topics, []
    if version >= TOPIC_IDS_VERSION:
        topics, unknown_ids = _by_name(apis, body.topics)
    order, errors, offsets = requested_offsets(apis, request, topics, now, expire)

    def respond() -> Any:
        return _commit_response(apis, version, unknown_ids, order, errors)

    def done(results: dict[TopicPartition, ErrorCode]) -> None:
        errors.update(results)
        _answer(apis, request, respond())

    if not offsets:
        return respond()
    apis.group_coordinator.commit_offsets(
        body.group_id,
        body.member_id,
        body.group_instance_id,  # instance id: v7+ (OFFSET-12)
        body.generation_id_or_member_epoch,
        offsets,
        done,
        api_version=version,
    )
    return DEFERRED


def _commit_response(
    apis: ApiContext,
    version: int,
    unknown_ids: list[Any],
    order: list[TopicPartition],
    errors: dict[TopicPartition, Any],
) -> Any:
    topic_cls = OffsetCommitResponse.OffsetCommitResponseTopic
    partition_cls = OffsetCommitResponse.OffsetCommitResponsePartition
    # v10: topics the cluster does not know by their id, first, as Kafka's response builder
    topics: list[Any] = [
        topic_cls(
            topic_id=t.topic_id,
            partitions=[
                partition_cls(
                    partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                )
                for p in t.partitions
            ],
        )
        for t in unknown_ids
    ]
    ids = topic_ids(apis) if version >= TOPIC_IDS_VERSION else {}
    previous = None
    for tp in dict.fromkeys(order):
        if tp.topic != previous:
            topics.append(topic_cls(name=tp.topic, topic_id=ids.get(tp.topic, ZERO_UUID)))
            previous = tp.topic
        topics[-1].partitions.append(
            partition_cls(partition_index=tp.partition, error_code=errors[tp])
        )
    return OffsetCommitResponse(throttle_time_ms=0, topics=topics)


# ---------------------------------------------------------------------- OffsetFetch
def handle_offset_fetch(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    if version < MULTI_GROUP_VERSION:
        return _offset_fetch_one_group(apis, request)
    # v8+: each group answered alone (OFFSET-14); a group's topics by id from v10
    groups = []
    for group in body.groups:
        unknown_ids: list[Any] = []
        topics = group.topics
        if topics is not None and version >= TOPIC_IDS_VERSION:
            topics, unknown_ids = _by_name(apis, group.topics)
        member = (group.member_id, group.member_epoch)  # v9+, checked by a consumer group
        error, found = _fetch_group(
            apis, request, group.group_id, topics, body.require_stable, member
        )
        groups.append(_group_response(apis, version, group.group_id, error, found, unknown_ids))
    return OffsetFetchResponse(throttle_time_ms=0, groups=groups)


def _fetch_group(
    apis: ApiContext,
    request: Request,
    group_id: str,
    topics: list[Any] | None,
    stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[ErrorCode, list[tuple[TopicPartition, OffsetAndMetadata | None, ErrorCode]]]:
    """One group's committed offsets: (group error, [(partition, offset or None, error)])
    for the requested partitions, or every committed one when `topics` is None. A topic the
    principal may not describe is refused if named, left out if not (SEC-17); with
    `require_stable` a partition with a transactional commit still open answers
    UNSTABLE_OFFSET_COMMIT (KIP-447, TXN-84)."""
    requested = None
    if topics is not None:
        requested = [TopicPartition(t.name, i) for t in topics for i in t.partition_indexes]
    if _group_refused(apis, request, group_id, Op.DESCRIBE):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    error, offsets = apis.group_coordinator.fetch_offsets(group_id, requested, member)
    if error != ErrorCode.NO_ERROR:
        return error, []
    hidden = {
        t
        for t in {tp.topic for tp in requested or offsets}
        if not authorized(apis, request, Op.DESCRIBE, Res.TOPIC, t)
    }
    if requested is None:
        offsets = {tp: o for tp, o in offsets.items() if tp.topic not in hidden}
    unstable: set[TopicPartition] = set()
    if stable:
        unstable = apis.group_coordinator.unstable_offsets(group_id)
    partitions = list(dict.fromkeys(requested)) if requested is not None else sorted(offsets)
    found = []
    for tp in partitions:
        if tp.topic in hidden:
            found.append((tp, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        elif tp in unstable:
            found.append((tp, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
        else:
            found.append((tp, offsets.get(tp), ErrorCode.NO_ERROR))
    return ErrorCode.NO_ERROR, found


def _offset_fetch_one_group(apis: ApiContext, request: Request) -> Any:
    """v1-v7: one group; v1 repeats a group error on every requested partition."""
    body, version = request.body, request.api_version
    require_stable = version >= 7 and body.require_stable
    error, found = _fetch_group(apis, request, body.group_id, body.topics, require_stable)
    if error != ErrorCode.NO_ERROR:
        if version >= 2:
            return OffsetFetchResponse(throttle_time_ms=0, topics=[], error_code=error)
        requested = [TopicPartition(t.name, i) for t in body.topics for i in t.partition_indexes]
        found = [(tp, None, error) for tp in dict.fromkeys(requested)]
    topics: list[Any] = []
    for tp, committed, partition_error in found:
        if not topics or topics[-1].name != tp.topic:
            topics.append(OffsetFetchResponse.OffsetFetchResponseTopic(name=tp.topic))
        topics[-1].partitions.append(
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=tp.partition,
                error_code=partition_error,
                **_committed(committed),
            )
        )
    return OffsetFetchResponse(throttle_time_ms=0, topics=topics, error_code=error)


def _committed(committed: OffsetAndMetadata | None) -> dict[str, Any]:
    if committed is None:  # never committed, or refused: -1 (OFFSET-1)
        return {"committed_offset": NO_OFFSET, "committed_leader_epoch": -1, "metadata": ""}
    return {
        "committed_offset": committed.offset,
        "committed_leader_epoch": committed.leader_epoch,  # v5+ (OFFSET-10)
        "metadata": committed.metadata,
    }


def _group_response(
    apis: ApiContext,
    version: int,
    group_id: str,
    error: ErrorCode,
    found: list[tuple[TopicPartition, OffsetAndMetadata | None, ErrorCode]],
    unknown_ids: list[Any],
) -> Any:
    """One group's answer in a v8+ response; by topic id from v10, where a committed topic
    that no longer exists (no id) is left out, as Kafka does."""
    topic_cls = OffsetFetchResponse.OffsetFetchResponseTopics
    partition_cls = OffsetFetchResponse.OffsetFetchResponsePartitions
    topics: list[Any] = [
        topic_cls(
            topic_id=t.topic_id,
            partitions=[
                partition_cls(
                    partition_index=i,
                    committed_offset=NO_OFFSET,
                    error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                )
                for i in t.partition_indexes
            ],
        )
        for t in unknown_ids
    ]
    ids = topic_ids(apis) if version >= TOPIC_IDS_VERSION else {}
    previous = None
    for tp, committed, partition_error in found:
        if version >= TOPIC_IDS_VERSION and tp.topic not in ids:
            continue
        if tp.topic != previous:
            topics.append(topic_cls(name=tp.topic, topic_id=ids.get(tp.topic, ZERO_UUID)))
            previous = tp.topic
        topics[-1].partitions.append(
            partition_cls(
                partition_index=tp.partition, error_code=partition_error, **_committed(committed)
            )
        )
    return OffsetFetchResponse.OffsetFetchResponseGroup(
        group_id=group_id, topics=topics, error_code=error
    )


# ---------------------------------------------------------------------- OffsetDelete
def handle_offset_delete(apis: ApiContext, request: Request) -> Any:
    """OffsetDelete (OFFSET-15): DELETE on the group, READ on each topic; partitions the
    cluster does not have are UNKNOWN_TOPIC_OR_PARTITION; the coordinator decides the rest."""
    body = request.body
    if _group_refused(apis, request, body.group_id, Op.DELETE):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        return OffsetDeleteResponse(error_code=error, throttle_time_ms=0)
    results: dict[TopicPartition, ErrorCode] = {}
    eligible: list[TopicPartition] = []
    for topic in body.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if not authorized(apis, request, Op.READ, Res.TOPIC, tp.topic):
                results[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif apis.controller.partition_state(tp.topic, tp.partition) is None:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                eligible.append(tp)

    def done(error: ErrorCode, deleted: dict[TopicPartition, ErrorCode]) -> None:
        if error != ErrorCode.NO_ERROR:  # the whole request failed: no partitions
            return _answer(apis, request, OffsetDeleteResponse(error_code=error))
        results.update(deleted)
        topics: dict[str, Any] = {}
        for tp, partition_error in results.items():
            topic = topics.setdefault(
                tp.topic, OffsetDeleteResponse.OffsetDeleteResponseTopic(name=tp.topic)
            )
            topic.partitions.append(
                OffsetDeleteResponse.OffsetDeleteResponsePartition(
                    partition_index=tp.partition, error_code=partition_error
                )
            )
        _answer(apis, request, OffsetDeleteResponse(error_code=error, topics=list(topics.values())))

    apis.group_coordinator.delete_offsets(body.group_id, eligible, done)
    return DEFERRED
