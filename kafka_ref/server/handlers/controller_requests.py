"""The controller's requests to a broker, and a leader's to the controller (ZooKeeper mode):
LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6) and AlterPartition (56).

**Epochs fence the controller's requests.** Every request from the controller carries its
controller epoch and the broker epoch of the registration it was meant for (KIP-380).
`fence` refuses, as Kafka's broker does:

* a broker epoch older than this broker's own (STALE_BROKER_EPOCH, CTRL-20): the request
  was meant for an earlier registration, before a restart or an expired session. A newer
  one is accepted: the broker has registered again and the controller read the new
  registration before this broker's own ZooKeeper client returned it (Kafka:
  `KafkaApis.isBrokerEpochStale`);
* a controller epoch older than the newest this broker has seen (STALE_CONTROLLER_EPOCH,
  CTRL-19): a deposed controller that wakes up from a long pause and sends what it decided
  before it was deposed changes nothing here (Kafka: `ReplicaManager.becomeLeaderOrFollower`,
  `maybeUpdateMetadataCache`, `stopReplicas`).

A request that passes raises the controller epoch this broker knows. Then, per partition,
a state older than the applied one is ignored: LeaderAndIsr with an older leader epoch is
STALE_CONTROLLER_EPOCH for that partition (CTRL-5), StopReplica with one is
FENCED_LEADER_EPOCH, and UpdateMetadata keeps the newer state in the cache (CTRL-12).
UpdateMetadata's live brokers, with every listener's endpoint, become the brokers this one
knows (CTRL-31).

**AlterPartition** arrives at the controller's broker from a partition leader: the
controller decides on its own thread (KafkaController.alter_partition) and the answer goes
back when it is written (CTRL-22). A broker that is not the active controller answers
NOT_CONTROLLER, and the leader asks again.

All four need CLUSTER_ACTION on the cluster when authorization is on: only brokers send
them (SEC-17). A broker that is not in a ZooKeeper cluster has no controller to hear from
and answers INVALID_REQUEST.

A LeaderAndIsr for a partition of a failed log directory answers KAFKA_STORAGE_ERROR for it:
the controller's answer to a log dir event reads these to know the offline replicas
(CTRL-30).

Rules: CTRL-5, CTRL-19, CTRL-20, CTRL-21, CTRL-22, CTRL-30, CTRL-31.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import PartitionState
from kafka_ref.cluster.zk_metadata import ZkClusterMetadata
from kafka_ref.errors import ErrorCode, KafkaStorageError
from kafka_ref.protocol.messages import (
    AlterPartitionResponse,
    LeaderAndIsrResponse,
    StopReplicaResponse,
    UpdateMetadataResponse,
)
from kafka_ref.security.listeners import SECURITY_PROTOCOLS, EndPoint
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

logger = logging.getLogger("kafka_ref.server.handlers.controller_requests")


def fence(
    own_broker_epoch: int, known_controller_epoch: int, broker_epoch: int, controller_epoch: int
) -> ErrorCode:
    """Whether a controller's request may be applied here (CTRL-19, CTRL-20); -1 as the
    request's broker epoch means "not checked" (controllers before KIP-380)."""
    if broker_epoch != -1 and broker_epoch < own_broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH
    if controller_epoch < known_controller_epoch:
        return ErrorCode.STALE_CONTROLLER_EPOCH
    return ErrorCode.NO_ERROR


def _admit(apis: ApiContext, request: Request) -> tuple[ErrorCode, ZkClusterMetadata | None]:
    """The checks every controller request passes before its partitions are looked at."""
    metadata, body = apis.controller, request.body
    if not authorized(apis, request, Op.CLUSTER_ACTION, Res.CLUSTER):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    if not isinstance(metadata, ZkClusterMetadata):
        return ErrorCode.INVALID_REQUEST, None
    error = fence(
        metadata.broker_epoch, metadata.controller_epoch, body.broker_epoch, body.controller_epoch
    )
    if error != ErrorCode.NO_ERROR:
        logger.warning(
            "refusing %s from controller %d (controller epoch %d, broker epoch %d; here %d"
            " and %d): %s",
            type(body).__name__,
            body.controller_id,
            body.controller_epoch,
            body.broker_epoch,
            metadata.controller_epoch,
            metadata.broker_epoch,
            error.name,
        )
        return error, None
    metadata.controller_epoch = body.controller_epoch
    return ErrorCode.NO_ERROR, metadata


def _states(body: Any) -> list[PartitionState]:
    return [
        PartitionState(
            topic.topic_name,
            p.partition_index,
            p.leader,
            p.leader_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            p.controller_epoch,
            p.zk_version,
        )
        for topic in body.topic_states
        for p in topic.partition_states
    ]


def _live_brokers(body: Any) -> list[tuple[int, tuple[EndPoint, ...], str | None]] | None:
    """UpdateMetadata's live brokers: each with every listener's endpoint, and its rack; None
    if a broker has no endpoint or one names an unknown security protocol."""
    brokers = []
    for broker in body.live_brokers:
        if not broker.endpoints or any(
            not 0 <= e.security_protocol < len(SECURITY_PROTOCOLS) for e in broker.endpoints
        ):
            return None
        endpoints = tuple(
            EndPoint(e.listener, SECURITY_PROTOCOLS[e.security_protocol], e.host, e.port)
            for e in broker.endpoints
        )
        brokers.append((broker.id, endpoints, broker.rack))
    return brokers


def handle_leader_and_isr(apis: ApiContext, request: Request) -> Any:
    error, metadata = _admit(apis, request)
    if metadata is None:
        return LeaderAndIsrResponse(error_code=error, partition_errors=[])
    errors = []
    for state in _states(request.body):
        errors.append(
            LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                topic_name=state.topic,
                partition_index=state.partition,
                error_code=_become(apis, metadata, state),
            )
        )
    return LeaderAndIsrResponse(error_code=ErrorCode.NO_ERROR, partition_errors=errors)


def _become(apis: ApiContext, metadata: ZkClusterMetadata, state: PartitionState) -> ErrorCode:
    """One partition of a LeaderAndIsr: lead or follow it, unless the state is older."""
    if apis.broker_id not in state.replicas:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition = apis.replica_manager.partitions.get((state.topic, state.partition))
    if partition is not None and state.leader_epoch < partition.leader_epoch:
        logger.warning(
            "ignoring LeaderAndIsr of %s-%d: leader epoch %d is older than the applied %d",
            state.topic,
            state.partition,
            state.leader_epoch,
            partition.leader_epoch,
        )
        return ErrorCode.STALE_CONTROLLER_EPOCH
    metadata.learn_topic(state.topic)  # its logs open with its config (CTRL-15)
    metadata.update_metadata([state])
    error = ErrorCode.NO_ERROR
    for listener in metadata.listeners:  # the coordinators hear of it even if the log cannot
        try:
            listener.on_partition_state(state)
        except (OSError, KafkaStorageError) as err:  # an offline log dir (DUR-16, CTRL-30)
            logger.warning("cannot apply %s: %s", state, err)
            error = ErrorCode.KAFKA_STORAGE_ERROR
    return error


def handle_update_metadata(apis: ApiContext, request: Request) -> Any:
    error, metadata = _admit(apis, request)
    if metadata is not None:
        brokers = _live_brokers(request.body)
        if brokers is None:  # nothing of it is applied
            logger.warning("refusing UpdateMetadata with a live broker it cannot reach")
            return UpdateMetadataResponse(error_code=ErrorCode.INVALID_REQUEST)
        states = _states(request.body)
        for topic in {s.topic for s in states}:
            metadata.learn_topic(topic)
        metadata.update_metadata(states, request.body.controller_id)
        metadata.update_live_brokers(brokers)
    return UpdateMetadataResponse(error_code=error)


def handle_stop_replica(apis: ApiContext, request: Request) -> Any:
    error, metadata = _admit(apis, request)
    if metadata is None:
        return StopReplicaResponse(error_code=error, partition_errors=[])
    errors = []
    for topic in request.body.topic_states:
        for p in topic.partition_states:
            tp = (topic.topic_name, p.partition_index)
            partition = apis.replica_manager.partitions.get(tp)
            code = ErrorCode.NO_ERROR
            if partition is not None and 0 <= p.leader_epoch < partition.leader_epoch:
                code = ErrorCode.FENCED_LEADER_EPOCH  # the controller has moved on (KIP-570)
            else:
                apis.replica_manager.stop_replica(tp, p.delete_partition)
            errors.append(
                StopReplicaResponse.StopReplicaPartitionError(
                    topic_name=tp[0], partition_index=tp[1], error_code=code
                )
            )
    return StopReplicaResponse(error_code=ErrorCode.NO_ERROR, partition_errors=errors)


def handle_alter_partition(apis: ApiContext, request: Request) -> Any:
    """On the controller's broker: decided on the controller's thread, answered when done."""
    body = request.body
    controller = apis.kafka_controller
    if not authorized(apis, request, Op.CLUSTER_ACTION, Res.CLUSTER):
        return _alter_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
    if controller is None or not controller.active:
        return _alter_response(ErrorCode.NOT_CONTROLLER, {})
    if request.api_version > 0:  # topic ids (v2+) are KRaft's, on the controller listener
        return _alter_response(ErrorCode.UNSUPPORTED_VERSION, {})
    items = [
        (t.topic_name, p.partition_index, p.leader_epoch, tuple(p.new_isr), p.partition_epoch)
        for t in body.topics
        for p in t.partitions
    ]
    loop = asyncio.get_running_loop()

    def reply(error: ErrorCode, results: dict) -> None:  # on the controller's thread
        loop.call_soon_threadsafe(apis.send, request, _alter_response(error, results))

    controller.alter_partition(body.broker_id, body.broker_epoch, items, reply)
    return DEFERRED


def _alter_response(error: ErrorCode, results: dict) -> Any:
    topics: dict[str, list[Any]] = {}
    for (topic, partition), (code, state) in sorted(results.items()):
        topics.setdefault(topic, []).append(
            AlterPartitionResponse.PartitionData(
                partition_index=partition,
                error_code=code,
                leader_id=state.leader if state else -1,
                leader_epoch=state.leader_epoch if state else -1,
                isr=list(state.isr) if state else [],
                partition_epoch=state.zk_version if state else -1,
            )
        )
    return AlterPartitionResponse(
        throttle_time_ms=0,
        error_code=error,
        topics=[
            AlterPartitionResponse.TopicData(topic_name=t, partitions=p) for t, p in topics.items()
        ],
    )
