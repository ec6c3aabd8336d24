"""The quorum's messages as Kafka's requests (Kafka: `RaftUtil`, the request builders of
`KafkaRaftClient`).

The core (messages.py) speaks of one partition, the metadata log's, with plain values.
On the wire each message is a Kafka request shaped for many topics and partitions, as
every Kafka API is: VoteRequest's `Topics[].Partitions[]`, FetchRequest's `Topics[]` by
topic id. A voter only ever sends and reads the one partition `__cluster_metadata-0`,
whose topic id is fixed, `AAAAAAAAAAAAAAAAAAAAAQ` (Kafka: `Topic.CLUSTER_METADATA_TOPIC_ID`,
the UUID 0...01), so this module only wraps and unwraps that one partition.

A request that names another partition, or none, is a request this node cannot serve:
`InvalidRaftRequestError` names what is wrong, and the caller answers Kafka's error for it
(INVALID_REQUEST). Versions sent are the newest both sides have in Kafka 4.4: Vote v2 (with
KIP-996's PreVote), BeginQuorumEpoch v1, EndQuorumEpoch v1, Fetch v17 (whose answer may
carry a SnapshotId, KIP-630), and FetchSnapshot v1 (by topic name, as Kafka sends it).

Rules: RAFT-14.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from kafka_ref.raft import messages as raft
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC

METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka: Topic.CLUSTER_METADATA_TOPIC_ID
METADATA_PARTITION = 0
VERSIONS = {
    ApiKey.VOTE: 2,
    ApiKey.BEGIN_QUORUM_EPOCH: 1,
    ApiKey.END_QUORUM_EPOCH: 1,
    ApiKey.FETCH: 17,
    ApiKey.FETCH_SNAPSHOT: 1,
}
FETCH_MAX_WAIT_MS = 0  # the core backs off after an empty answer (quorum_config.py)


class InvalidRaftRequestError(ValueError):
    """A quorum request this node cannot read: not the metadata partition, or not one."""


def is_request(message: raft.RaftMessage) -> bool:
    return isinstance(message, raft.RaftRequest)


def request_source(request: raft.RaftRequest) -> int:
    """The node that sent `request`: the candidate, the leader, or the fetching replica."""
    if isinstance(request, raft.VoteRequest):
        return request.candidate_id
    if isinstance(request, (raft.BeginQuorumEpochRequest, raft.EndQuorumEpochRequest)):
        return request.leader_id
    return request.replica_id


def _only_partition(topics: list, topic_of) -> Any:
    """The one partition of the metadata topic in `topics`."""
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise InvalidRaftRequestError("a quorum request names exactly one partition")
    if topic_of(topics[0]) not in (METADATA_TOPIC, METADATA_TOPIC_ID):
        raise InvalidRaftRequestError(f"{topic_of(topics[0])} is not {METADATA_TOPIC}")
    partition = topics[0].partitions[0]
    index = next(
        (
            getattr(partition, name)
            for name in ("partition_index", "partition", "index")
            if hasattr(partition, name)
        ),
        None,
    )
    if index != METADATA_PARTITION:
        raise InvalidRaftRequestError(f"{METADATA_TOPIC} has no partition {index}")
    return partition


# ---------------------------------------------------------------------- requests
def request_to_wire(request: raft.RaftRequest) -> tuple[int, int, Any]:
    """(api key, version, body) of a request the core sends."""
    if isinstance(request, raft.VoteRequest):
        partition = VoteRequest.PartitionData(
            partition_index=METADATA_PARTITION,
            replica_epoch=request.candidate_epoch,
            replica_id=request.candidate_id,
            last_offset_epoch=request.last_offset_epoch,
            last_offset=request.last_offset,
            pre_vote=request.pre_vote,
        )
        body = VoteRequest(
            cluster_id=request.cluster_id or None,
            voter_id=request.voter_id,
            topics=[VoteRequest.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
        )
        return ApiKey.VOTE, VERSIONS[ApiKey.VOTE], body
    if isinstance(request, raft.BeginQuorumEpochRequest):
        partition = BeginQuorumEpochRequest.PartitionData(
            partition_index=METADATA_PARTITION,
            leader_id=request.leader_id,
            leader_epoch=request.leader_epoch,
        )
        body = BeginQuorumEpochRequest(
            cluster_id=request.cluster_id or None,
            voter_id=request.voter_id,
            topics=[
                BeginQuorumEpochRequest.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])
            ],
        )
        return ApiKey.BEGIN_QUORUM_EPOCH, VERSIONS[ApiKey.BEGIN_QUORUM_EPOCH], body
    if isinstance(request, raft.FetchSnapshotRequest):
        body = _fetch_snapshot_request_to_wire(request)
        return ApiKey.FETCH_SNAPSHOT, VERSIONS[ApiKey.FETCH_SNAPSHOT], body
    if isinstance(request, raft.EndQuorumEpochRequest):
        partition = EndQuorumEpochRequest.PartitionData(
            partition_index=METADATA_PARTITION,
            leader_id=request.leader_id,
            leader_epoch=request.leader_epoch,
            preferred_candidates=[
                EndQuorumEpochRequest.ReplicaInfo(candidate_id=c)
                for c in request.preferred_successors
            ],
        )
        body = EndQuorumEpochRequest(
            cluster_id=request.cluster_id or None,
            topics=[
                EndQuorumEpochRequest.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])
            ],
        )
        return ApiKey.END_QUORUM_EPOCH, VERSIONS[ApiKey.END_QUORUM_EPOCH], body
    assert isinstance(request, raft.FetchRequest), request
    partition = FetchRequest.FetchPartition(
        partition=METADATA_PARTITION,
        current_leader_epoch=request.current_leader_epoch,
        fetch_offset=request.fetch_offset,
        last_fetched_epoch=request.last_fetched_epoch,
        partition_max_bytes=request.max_bytes,
    )
    if request.replica_directory_id is not None:
        partition.replica_directory_id = request.replica_directory_id
    body = FetchRequest(
        cluster_id=request.cluster_id or None,
        replica_state=FetchRequest.ReplicaState(replica_id=request.replica_id, replica_epoch=-1),
        max_wait_ms=FETCH_MAX_WAIT_MS,
        min_bytes=0,
        max_bytes=request.max_bytes,
        topics=[FetchRequest.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=[partition])],
    )
    return ApiKey.FETCH, VERSIONS[ApiKey.FETCH], body


def _fetch_snapshot_request_to_wire(request: raft.FetchSnapshotRequest) -> Any:
    partition = FetchSnapshotRequest.PartitionSnapshot(
        partition=METADATA_PARTITION,
        current_leader_epoch=request.current_leader_epoch,
        snapshot_id=FetchSnapshotRequest.SnapshotId(
            end_offset=request.snapshot_id.offset, epoch=request.snapshot_id.epoch
        ),
        position=request.position,
    )
    return FetchSnapshotRequest(
        cluster_id=request.cluster_id or None,
        replica_id=request.replica_id,
        max_bytes=request.max_bytes,
        topics=[FetchSnapshotRequest.TopicSnapshot(name=METADATA_TOPIC, partitions=[partition])],
    )


def request_from_wire(api_key: int, body: Any) -> raft.RaftRequest:
    """The core's request value of a quorum request that arrived."""
    cluster_id = body.cluster_id or ""
    if api_key == ApiKey.VOTE:
        p = _only_partition(body.topics, lambda t: t.topic_name)
        return raft.VoteRequest(
            cluster_id,
            body.voter_id,
            p.replica_epoch,
            p.replica_id,
            p.last_offset_epoch,
            p.last_offset,
            p.pre_vote,
        )
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        p = _only_partition(body.topics, lambda t: t.topic_name)
        return raft.BeginQuorumEpochRequest(cluster_id, body.voter_id, p.leader_id, p.leader_epoch)
    if api_key == ApiKey.END_QUORUM_EPOCH:
        p = _only_partition(body.topics, lambda t: t.topic_name)
        successors = tuple(c.candidate_id for c in p.preferred_candidates or ()) or tuple(
            p.preferred_successors or ()
        )
        return raft.EndQuorumEpochRequest(cluster_id, p.leader_id, p.leader_epoch, successors)
    if api_key == ApiKey.FETCH:
        p = _only_partition(body.topics, lambda t: t.topic_id or t.topic)
        replica_id = body.replica_state.replica_id if body.replica_state else body.replica_id
        directory_id = p.replica_directory_id
        return raft.FetchRequest(
            cluster_id,
            replica_id,
            p.current_leader_epoch,
            p.fetch_offset,
            p.last_fetched_epoch,
            p.partition_max_bytes,
            replica_directory_id=directory_id if directory_id and directory_id.int else None,
        )
    if api_key == ApiKey.FETCH_SNAPSHOT:
        p = _only_partition(body.topics, lambda t: t.name)
        snapshot_id = raft.OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset)
        return raft.FetchSnapshotRequest(
            cluster_id,
            body.replica_id,
            p.current_leader_epoch,
            snapshot_id,
            p.position,
            body.max_bytes,
        )
    raise InvalidRaftRequestError(f"api key {api_key} is not a quorum request")


# ---------------------------------------------------------------------- responses
def response_to_wire(response: raft.RaftResponse, version: int) -> Any:
    """The body answering a quorum request, from the core's response value."""
    if isinstance(response, raft.VoteResponse):
        partition = VoteResponse.PartitionData(
            partition_index=METADATA_PARTITION,
            error_code=response.error_code,
            leader_id=response.leader_id,
            leader_epoch=response.leader_epoch,
            vote_granted=response.vote_granted,
        )
        return VoteResponse(
            error_code=ErrorCode.NO_ERROR,
            topics=[VoteResponse.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
        )
    if isinstance(response, raft.BeginQuorumEpochResponse):
        partition = BeginQuorumEpochResponse.PartitionData(
            partition_index=METADATA_PARTITION,
            error_code=response.error_code,
            leader_id=response.leader_id,
            leader_epoch=response.leader_epoch,
        )
        return BeginQuorumEpochResponse(
            error_code=ErrorCode.NO_ERROR,
            topics=[
                BeginQuorumEpochResponse.TopicData(
                    topic_name=METADATA_TOPIC, partitions=[partition]
                )
            ],
        )
    if isinstance(response, raft.EndQuorumEpochResponse):
        partition = EndQuorumEpochResponse.PartitionData(
            partition_index=METADATA_PARTITION,
            error_code=response.error_code,
            leader_id=response.leader_id,
            leader_epoch=response.leader_epoch,
        )
        return EndQuorumEpochResponse(
            error_code=ErrorCode.NO_ERROR,
            topics=[
                EndQuorumEpochResponse.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])
            ],
        )
    if isinstance(response, raft.FetchSnapshotResponse):
        snapshot_id = response.snapshot_id or raft.OffsetAndEpoch(-1, -1)
        partition = FetchSnapshotResponse.PartitionSnapshot(
            index=METADATA_PARTITION,
            error_code=response.error_code,
            snapshot_id=FetchSnapshotResponse.SnapshotId(
                end_offset=snapshot_id.offset, epoch=snapshot_id.epoch
            ),
            current_leader=FetchSnapshotResponse.LeaderIdAndEpoch(
                leader_id=response.leader_id, leader_epoch=response.leader_epoch
            ),
            size=response.size,
            position=response.position,
            unaligned_records=response.unaligned_records,
        )
        return FetchSnapshotResponse(
            error_code=ErrorCode.NO_ERROR,
            topics=[
                FetchSnapshotResponse.TopicSnapshot(name=METADATA_TOPIC, partitions=[partition])
            ],
        )
    assert isinstance(response, raft.FetchResponse), response
    data = FetchResponse.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=response.error_code,
        high_watermark=response.high_watermark,
        records=response.records,
        current_leader=FetchResponse.LeaderIdAndEpoch(
            leader_id=response.leader_id, leader_epoch=response.leader_epoch
        ),
    )
    if response.diverging_epoch is not None:
        data.diverging_epoch = FetchResponse.EpochEndOffset(
            epoch=response.diverging_epoch.epoch, end_offset=response.diverging_epoch.offset
        )
    if response.snapshot_id is not None:
        data.snapshot_id = FetchResponse.SnapshotId(
            end_offset=response.snapshot_id.offset, epoch=response.snapshot_id.epoch
        )
    return FetchResponse(
        error_code=ErrorCode.NO_ERROR,
        responses=[
            FetchResponse.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=[data])
        ],
    )


def response_from_wire(api_key: int, body: Any, correlation_id: int) -> raft.RaftResponse:
    """The core's response value of an answer from a peer; `correlation_id` is the core's
    own id of the request it answers (the wire's is the connection's)."""
    if body.error_code != ErrorCode.NO_ERROR:  # the whole request refused
        return _refused(api_key, ErrorCode(body.error_code), correlation_id)
    if api_key == ApiKey.FETCH:
        p = _only_partition(body.responses, lambda t: t.topic_id or t.topic)
        diverging = snapshot_id = None
        if p.diverging_epoch is not None and p.diverging_epoch.epoch >= 0:
            diverging = raft.OffsetAndEpoch(p.diverging_epoch.epoch, p.diverging_epoch.end_offset)
        if p.snapshot_id is not None and p.snapshot_id.end_offset >= 0:
            snapshot_id = raft.OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset)
        return raft.FetchResponse(
            ErrorCode(p.error_code),
            p.current_leader.leader_id,
            p.current_leader.leader_epoch,
            p.high_watermark,
            bytes(p.records or b""),
            diverging,
            correlation_id,
            snapshot_id,
        )
    if api_key == ApiKey.FETCH_SNAPSHOT:
        p = _only_partition(body.topics, lambda t: t.name)
        snapshot_id = raft.OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset)
        leader = p.current_leader
        return raft.FetchSnapshotResponse(
            ErrorCode(p.error_code),
            leader.leader_id if leader else raft.NO_LEADER,
            leader.leader_epoch if leader else -1,
            snapshot_id,
            p.size,
            p.position,
            bytes(p.unaligned_records or b""),
            correlation_id,
        )
    p = _only_partition(body.topics, lambda t: t.topic_name)
    error = ErrorCode(p.error_code)
    if api_key == ApiKey.VOTE:
        return raft.VoteResponse(error, p.leader_id, p.leader_epoch, p.vote_granted, correlation_id)
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return raft.BeginQuorumEpochResponse(error, p.leader_id, p.leader_epoch, correlation_id)
    assert api_key == ApiKey.END_QUORUM_EPOCH, api_key
    return raft.EndQuorumEpochResponse(error, p.leader_id, p.leader_epoch, correlation_id)


def _refused(api_key: int, error: ErrorCode, correlation_id: int) -> raft.RaftResponse:
    """A response value for a request refused as a whole: no leader known, no epoch."""
    no = raft.NO_LEADER
    if api_key == ApiKey.VOTE:
        return raft.VoteResponse(error, no, -1, False, correlation_id)
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        return raft.BeginQuorumEpochResponse(error, no, -1, correlation_id)
    if api_key == ApiKey.END_QUORUM_EPOCH:
        return raft.EndQuorumEpochResponse(error, no, -1, correlation_id)
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return raft.FetchSnapshotResponse(error, no, -1, correlation_id=correlation_id)
    return raft.FetchResponse(error, no, -1, correlation_id=correlation_id)
