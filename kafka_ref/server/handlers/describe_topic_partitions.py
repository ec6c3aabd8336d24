"""DescribeTopicPartitions (key 75, KIP-966): the topics' partitions, a page at a time.

Kafka: `DescribeTopicPartitionsRequestHandler`, `KRaftMetadataCache.describeTopicResponse`.
A request names topics (none: every topic), a `response_partition_limit` and maybe a
`cursor` (topic name, partition index) from the previous page. The broker:

1. takes the topics in name order, from the cursor's topic on; a cursor whose topic is not
   among the topics named, or whose partition index is negative, is an invalid request:
   every named topic is answered INVALID_REQUEST;
2. leaves out the topics the principal may not DESCRIBE when it asked for every topic; a
   topic it named is answered TOPIC_AUTHORIZATION_FAILED, without its id, after the others;
3. describes the topics in order, each from partition 0 (the cursor's topic from the
   cursor's index), until `min(response_partition_limit, max.request.partition.size.limit)`
   partitions (at least one) are described. A topic that does not fit whole ends the page
   with `next_cursor` at its first partition not described; a page that ends exactly at a
   topic's end points `next_cursor` at the next topic, partition 0. No cursor: the last page;
4. a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, an illegal name
   INVALID_TOPIC_EXCEPTION (every topic: they are skipped).

Each partition: leader (-1 when it has none, with no error: this API reports state, it does
not ask the client to retry), leader epoch, replicas, ISR, the eligible leader replicas of
KIP-966 and the last known ones (a KRaft cluster's; ZooKeeper mode keeps none), offline
replicas. Each topic: its id, whether it
is internal, and its authorized operations (every topic answered but the refused ones).

Rules: BROKER-64, BROKER-62.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import InvalidTopicError, validate_topic_name
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import DescribeTopicPartitionsResponse as Response
from kafka_ref.protocol.types import ZERO_UUID
from kafka_ref.server.handlers.authz import Op, Res, authorized, authorized_operations
from kafka_ref.server.handlers.metadata import INTERNAL_TOPICS, live_brokers
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


def handle_describe_topic_partitions(apis: ApiContext, request: Request) -> Any:
    body = request.body
    everything = not body.topics
    cursor = body.cursor
    start = cursor.topic_name if cursor is not None else ""
    names = sorted(
        {m.name for m in apis.controller.topics()} if everything else {t.name for t in body.topics}
    )
    names = [n for n in names if n >= start]
    named_cursor_missing = not everything and cursor is not None and start not in names
    if named_cursor_missing or (cursor is not None and cursor.partition_index < 0):
        return Response(
            throttle_time_ms=0,
            topics=[_topic(t.name, ErrorCode.INVALID_REQUEST) for t in body.topics],
        )
    allowed = [n for n in names if authorized(apis, request, Op.DESCRIBE, Res.TOPIC, n)]
    refused = [] if everything else [n for n in names if n not in allowed]
    limit = max(
        min(apis.config["max.request.partition.size.limit"], body.response_partition_limit), 1
    )
    topics, next_cursor = _page(apis, allowed, cursor, limit, everything)
    for topic in topics:
        topic.topic_authorized_operations = authorized_operations(
            apis, request, Res.TOPIC, topic.name
        )
    topics += [_topic(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in refused]
    return Response(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)


def _page(
    apis: ApiContext, names: list[str], cursor: Any, limit: int, skip_missing: bool
) -> tuple[list[Any], Any]:
    """The topics that fit in `limit` partitions, and the cursor of the next page or None."""
    controller = apis.controller
    live = {b.node_id for b in live_brokers(controller)}
    topics: list[Any] = []
    remaining = limit
    for name in names:
        if remaining == 0:  # the page ended with the topic before: this one comes next
            return topics, Response.Cursor(topic_name=name, partition_index=0)
        meta = controller.topic(name)
        if meta is None:
            if not skip_missing:
                topics.append(
                    _topic(name, _missing_error(name), is_internal=name in INTERNAL_TOPICS)
                )
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        end = min(meta.partitions, first + remaining)
        topics.append(
            _topic(
                name,
                ErrorCode.NO_ERROR,
                topic_id=meta.topic_id,
                is_internal=meta.internal or name in INTERNAL_TOPICS,
                partitions=[_partition(apis, name, i, live) for i in range(first, end)],
            )
        )
        if end < meta.partitions:
            return topics, Response.Cursor(topic_name=name, partition_index=end)
        remaining -= max(end - first, 0)
    return topics, None


def _partition(apis: ApiContext, name: str, index: int, live: set[int]) -> Any:
    state = apis.controller.partition_state(name, index)
    replicas = tuple(state.replicas) if state else ()
    leader = state.leader if state is not None and state.leader in live else -1
    return Response.DescribeTopicPartitionsResponsePartition(
        error_code=ErrorCode.NO_ERROR,
        partition_index=index,
        leader_id=leader,
        leader_epoch=state.leader_epoch if state else -1,
        replica_nodes=replicas,
        isr_nodes=tuple(state.isr) if state else (),
        eligible_leader_replicas=list(state.elr) if state else [],
        last_known_elr=list(state.last_known_elr) if state else [],
        offline_replicas=[r for r in replicas if r not in live],
    )


def _missing_error(name: str) -> ErrorCode:
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return ErrorCode.INVALID_TOPIC
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _topic(
    name: str,
    error: ErrorCode,
    *,
    topic_id: Any = ZERO_UUID,
    is_internal: bool = False,
    partitions: list | None = None,
) -> Any:
    return Response.DescribeTopicPartitionsResponseTopic(
        error_code=error,
        name=name,
        topic_id=topic_id,
        is_internal=is_internal,
        partitions=partitions or [],
    )
