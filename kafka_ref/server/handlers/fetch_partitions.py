"""What a Fetch asks for, and its answer grouped by topic, across Fetch's versions.

Consumers and followers send the same Fetch request, and its versions differ in how they
name things, not in what the broker does with them:

* up to v12 a topic is named by its name; from v13 by its topic id (KIP-516), which the
  broker resolves with its metadata. An id it does not know answers that topic's partitions
  with UNKNOWN_TOPIC_ID, read nothing, and the client refreshes its metadata;
* up to v14 the fetching replica is the top-level `ReplicaId` (-1 for a consumer); from v15
  it is `ReplicaState.ReplicaId`, next to the follower's broker epoch (KIP-903);
* from v12 a partition carries `LastFetchedEpoch`, the leader epoch of the last record the
  fetcher holds, for the diverging epoch check (fetch.py, follower_fetch.py);
* the answer names each topic as the request did: by name up to v12, by id from v13;
* from v16 a partition refused because this broker does not lead it (or leads it in a newer
  epoch) names its current leader, and the answer lists the leaders' endpoints (KIP-951,
  leader_hints.py).

Kafka: `FetchRequest.fetchData(topicNames)`, `FetchRequest.replicaId()`, `FetchResponse.of`.

Rules: BROKER-67, BROKER-68, BROKER-69.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import FetchResponse
from kafka_ref.protocol.types import ZERO_UUID
from kafka_ref.server.handlers.leader_hints import LeaderHints
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import FileRecordsValue

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

MIN_VERSION_WITH_TOPIC_IDS = 13
MIN_VERSION_WITH_REPLICA_STATE = 15
MIN_VERSION_WITH_LEADER_HINTS = 16
NOT_THE_LEADER = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a fetch (Kafka: `FetchRequest.PartitionData` with its
    `TopicIdPartition`). `topic` is None for a topic id this broker does not know."""

    topic: str | None
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    leader_epoch: int  # the fetcher's current leader epoch, -1: not checked
    last_fetched_epoch: int = -1  # v12+: the epoch of its last record, -1: no check
    log_start_offset: int = -1  # v5+: a follower's log start offset, -1 from a consumer


def replica_id(request: Request) -> int:
    """The fetching replica's broker id, -1 for a consumer (Kafka: `FetchRequest.replicaId`)."""
    body = request.body
    if request.api_version >= MIN_VERSION_WITH_REPLICA_STATE:
        return body.replica_state.replica_id
    return body.replica_id


def fetch_partitions(apis: ApiContext, request: Request) -> list[FetchPartition]:
    """The requested partitions in request order, their topics named (v13+: by id)."""
    by_id = request.api_version >= MIN_VERSION_WITH_TOPIC_IDS
    partitions = []
    for t in request.body.topics:
        if by_id:
            meta = apis.controller.topic_by_id(t.topic_id)
            name, topic_id = (meta.name if meta else None), t.topic_id
        else:
            name, topic_id = t.topic, ZERO_UUID
        partitions.extend(
            FetchPartition(
                name,
                topic_id,
                p.partition,
                p.fetch_offset,
                p.partition_max_bytes,
                p.current_leader_epoch,
                p.last_fetched_epoch,
                p.log_start_offset,
            )
            for p in t.partitions
        )
    return partitions


def empty_partition(index: int, error: ErrorCode = ErrorCode.NO_ERROR) -> Any:
    return FetchResponse.PartitionData(
        partition_index=index,
        error_code=error,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        aborted_transactions=[],
        records=FileRecordsValue([]),
    )


def respond(
    apis: ApiContext,
    request: Request,
    answered: list[tuple[FetchPartition, Any]],
    error: ErrorCode = ErrorCode.NO_ERROR,
) -> Any:
    """The response, with leader hints from v16 (KIP-951, BROKER-69): a partition refused
    with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current leader, and the
    response lists those leaders' endpoints (Kafka: `handleFetchRequest`'s
    `processResponseCallback`)."""
    endpoints = []
    if request.api_version >= MIN_VERSION_WITH_LEADER_HINTS:
        hints = LeaderHints(apis, request)
        for fp, data in answered:
            if data.error_code in NOT_THE_LEADER and fp.topic is not None:
                leader_id, leader_epoch = hints.current_leader(fp.topic, fp.partition)
                data.current_leader = FetchResponse.LeaderIdAndEpoch(
                    leader_id=leader_id, leader_epoch=leader_epoch
                )
        endpoints = hints.node_endpoints(FetchResponse.NodeEndpoint)
    return build_response(answered, error, endpoints)


def build_response(
    answered: list[tuple[FetchPartition, Any]],
    error: ErrorCode = ErrorCode.NO_ERROR,
    node_endpoints: list[Any] | None = None,
) -> Any:
    """Group the partitions' answers by topic, in request order; session_id is always 0
    (BROKER-21). A topic is named by name and by id; the version on the wire keeps one."""
    topics: list[Any] = []
    for fp, data in answered:
        last = topics[-1] if topics else None
        if last is None or last.topic != fp.topic or last.topic_id != fp.topic_id:
            last = FetchResponse.FetchableTopicResponse(
                topic=fp.topic, topic_id=fp.topic_id, partitions=[]
            )
            topics.append(last)
        last.partitions.append(data)
    return FetchResponse(
        throttle_time_ms=0,
        error_code=error,
        session_id=0,
        responses=topics,
        node_endpoints=node_endpoints or [],
    )
