"""The active controller's requests on the controller listener (Kafka: the `ControllerApis`
handlers that call `QuorumController`).

Each handler translates a request into a decision of the quorum controller (`submit`, which
appends the decision's records) and returns a future of the response body, set once the
records are committed (KCTRL-17). A controller that is not active answers NOT_CONTROLLER in
the response's error code; the broker then asks the controller the quorum names as leader.

* from the brokers: BrokerRegistration, BrokerHeartbeat (KCTRL-2..5), AlterPartition v2-3
  (by topic id, each ISR member with its broker epoch from v3: KCTRL-8), AllocateProducerIds
  (KCTRL-11), AssignReplicasToDirs (KCTRL-22);
* from admin clients, directly (`--bootstrap-controller`) or forwarded by a broker in an
  Envelope (controller_server.py): CreateTopics, DeleteTopics, CreatePartitions (KCTRL-6,
  KCTRL-7), UnregisterBroker; the rest of the administration is controller_admin_apis.py's
  (KCTRL-19), which answers through `when_committed` too.

Rules: KCTRL-17.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.metadata.controller import replication_control as rc
from kafka_ref.metadata.controller.cluster_control import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from kafka_ref.metadata.controller.quorum_controller import QuorumController
from kafka_ref.metadata.controller.result import ApiError, ControllerResult
from kafka_ref.metadata.image import Endpoint
from kafka_ref.protocol.messages import (
    AllocateProducerIdsResponse,
    AlterPartitionResponse,
    AssignReplicasToDirsResponse,
    BrokerHeartbeatResponse,
    BrokerRegistrationResponse,
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    UnregisterBrokerResponse,
)
from kafka_ref.server.active_controller import ActiveController
from kafka_ref.server.request_channel import Request

Decide = Callable[[QuorumController, int], ControllerResult]


def when_committed(
    active: ActiveController, decide: Decide, respond: Callable[[Any], Any], error: Callable
) -> asyncio.Future:
    """The response body, once `decide`'s records are committed; `error(code, message)`
    if the controller is not active or stops being active first."""
    body: asyncio.Future = asyncio.get_running_loop().create_future()

    def done(decided: asyncio.Future) -> None:
        failure = decided.exception()
        if isinstance(failure, KafkaError):
            body.set_result(error(failure.code, failure.args[0] if failure.args else None))
        elif failure is not None:
            body.set_exception(failure)
        else:
            body.set_result(respond(decided.result()))

    active.submit(decide).add_done_callback(done)
    return body


# ---------------------------------------------------------------------- the brokers
def broker_registration(active: ActiveController, request: Request) -> asyncio.Future:
    body = request.body
    features = {f.name: (f.min_supported_version, f.max_supported_version) for f in body.features}
    registration = BrokerRegistrationRequest(
        broker_id=body.broker_id,
        cluster_id=body.cluster_id,
        incarnation_id=body.incarnation_id,
        listeners=tuple(
            Endpoint(e.name, e.host, e.port, e.security_protocol) for e in body.listeners
        ),
        features=features,
        rack=body.rack,
        log_dirs=tuple(body.log_dirs or ()),
        previous_broker_epoch=body.previous_broker_epoch,
    )

    def respond(reply: Any) -> Any:
        return BrokerRegistrationResponse(
            throttle_time_ms=0, error_code=reply.error.code, broker_epoch=reply.broker_epoch
        )

    return when_committed(
        active,
        lambda controller, now_ms: controller.register_broker(registration, now_ms),
        respond,
        lambda code, _message: BrokerRegistrationResponse(throttle_time_ms=0, error_code=code),
    )


def broker_heartbeat(active: ActiveController, request: Request) -> asyncio.Future:
    body = request.body
    heartbeat = BrokerHeartbeatRequest(
        broker_id=body.broker_id,
        broker_epoch=body.broker_epoch,
        current_metadata_offset=body.current_metadata_offset,
        want_fence=body.want_fence,
        want_shut_down=body.want_shut_down,
        offline_log_dirs=tuple(body.offline_log_dirs or ()),
    )

    def respond(reply: Any) -> Any:
        return BrokerHeartbeatResponse(
            throttle_time_ms=0,
            error_code=reply.error.code,
            is_caught_up=reply.is_caught_up,
            is_fenced=reply.is_fenced,
            should_shut_down=reply.should_shut_down,
        )

    return when_committed(
        active,
        lambda controller, now_ms: controller.broker_heartbeat(heartbeat, now_ms),
        respond,
        lambda code, _message: BrokerHeartbeatResponse(throttle_time_ms=0, error_code=code),
    )


def unregister_broker(active: ActiveController, request: Request) -> asyncio.Future:
    broker_id = request.body.broker_id
    return when_committed(
        active,
        lambda controller, now_ms: controller.unregister_broker(broker_id),
        lambda error: UnregisterBrokerResponse(
            throttle_time_ms=0, error_code=error.code, error_message=error.message
        ),
        lambda code, message: UnregisterBrokerResponse(
            throttle_time_ms=0, error_code=code, error_message=message
        ),
    )


def alter_partition(active: ActiveController, request: Request) -> Any:
    body = request.body
    if request.api_version < 2:  # by topic name: ZooKeeper mode's, on the broker listener
        return AlterPartitionResponse(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION)
    topics = {
        t.topic_id: [
            rc.AlterPartitionData(
                partition_index=p.partition_index,
                leader_epoch=p.leader_epoch,
                partition_epoch=p.partition_epoch,
                new_isr=(
                    [(b.broker_id, b.broker_epoch) for b in p.new_isr_with_epochs]
                    if request.api_version >= 3
                    else [(b, -1) for b in p.new_isr]
                ),
                leader_recovery_state=p.leader_recovery_state,
            )
            for p in t.partitions
        ]
        for t in body.topics
    }

    def respond(results: Any) -> Any:
        if isinstance(results, ApiError):
            return AlterPartitionResponse(throttle_time_ms=0, error_code=results.code)
        return AlterPartitionResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.NO_ERROR,
            topics=[
                AlterPartitionResponse.TopicData(
                    topic_id=topic_id,
                    partitions=[
                        AlterPartitionResponse.PartitionData(
                            partition_index=p.partition_index,
                            error_code=p.error.code,
                            leader_id=p.leader_id,
                            leader_epoch=p.leader_epoch,
                            isr=list(p.isr),
                            leader_recovery_state=p.leader_recovery_state,
                            partition_epoch=p.partition_epoch,
                        )
                        for p in partitions
                    ],
                )
                for topic_id, partitions in results.items()
            ],
        )

    return when_committed(
        active,
        lambda controller, now_ms: controller.alter_partition(
            body.broker_id, body.broker_epoch, topics
        ),
        respond,
        lambda code, _message: AlterPartitionResponse(throttle_time_ms=0, error_code=code),
    )


def allocate_producer_ids(active: ActiveController, request: Request) -> asyncio.Future:
    body = request.body

    def respond(block: Any) -> Any:
        return AllocateProducerIdsResponse(
            throttle_time_ms=0,
            error_code=block.error.code,
            producer_id_start=block.first_producer_id,
            producer_id_len=block.size,
        )

    return when_committed(
        active,
        lambda controller, now_ms: controller.allocate_producer_ids(
            body.broker_id, body.broker_epoch
        ),
        respond,
        lambda code, _message: AllocateProducerIdsResponse(throttle_time_ms=0, error_code=code),
    )


def assign_replicas_to_dirs(active: ActiveController, request: Request) -> asyncio.Future:
    body = request.body
    assignments: dict = {}
    for d in body.directories:
        topics = assignments.setdefault(d.id, {})
        for t in d.topics:
            topics.setdefault(t.topic_id, []).extend(p.partition_index for p in t.partitions)

    def respond(results: Any) -> Any:
        if isinstance(results, ApiError):
            return AssignReplicasToDirsResponse(throttle_time_ms=0, error_code=results.code)
        response = AssignReplicasToDirsResponse
        return response(
            throttle_time_ms=0,
            error_code=ErrorCode.NO_ERROR,
            directories=[
                response.DirectoryData(
                    id=directory,
                    topics=[
                        response.TopicData(
                            topic_id=topic_id,
                            partitions=[
                                response.PartitionData(partition_index=i, error_code=code)
                                for i, code in errors.items()
                            ],
                        )
                        for topic_id, errors in topics.items()
                    ],
                )
                for directory, topics in results.items()
            ],
        )

    return when_committed(
        active,
        lambda controller, now_ms: controller.assign_replicas_to_dirs(
            body.broker_id, body.broker_epoch, assignments
        ),
        respond,
        lambda code, _message: AssignReplicasToDirsResponse(throttle_time_ms=0, error_code=code),
    )


# ---------------------------------------------------------------------- topics
def create_topics(active: ActiveController, request: Request) -> asyncio.Future:
    body = request.body
    topics = [
        rc.CreatableTopic(
            name=t.name,
            num_partitions=t.num_partitions,
            replication_factor=t.replication_factor,
            assignments={a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
            configs={c.name: c.value for c in t.configs},
        )
        for t in body.topics
    ]

    def result(name: str, code: ErrorCode, message: str | None) -> Any:
        return CreateTopicsResponse.CreatableTopicResult(
            name=name, error_code=code, error_message=message
        )

    def respond(results: Any) -> Any:
        answers = []
        for found in results:
            answer = result(found.name, found.error.code, found.error.message)
            if found.error.ok and found.topic_id is not None:
                answer.topic_id = found.topic_id
                answer.num_partitions = found.num_partitions
                answer.replication_factor = found.replication_factor
            answers.append(answer)
        return CreateTopicsResponse(throttle_time_ms=0, topics=answers)

    return when_committed(
        active,
        lambda controller, now_ms: controller.create_topics(
            topics, validate_only=body.validate_only
        ),
        respond,
        lambda code, message: CreateTopicsResponse(
            throttle_time_ms=0, topics=[result(t.name, code, message) for t in topics]
        ),
    )


def _deleted_names(active: ActiveController, request: Request) -> list[tuple[str | None, Any]]:
    """(name, topic id) of each topic a DeleteTopics names, by name or (v6+) by id."""
    if request.api_version < 6:
        return [(name, None) for name in request.body.topic_names]
    image = active.controller.image
    found = []
    for topic in request.body.topics:
        if topic.name is not None:
            found.append((topic.name, None))
        else:
            known = image.topics.get(topic.topic_id)
            found.append((known.name if known else None, topic.topic_id))
    return found


def delete_topics(active: ActiveController, request: Request) -> asyncio.Future:
    asked = _deleted_names(active, request)
    names = [name for name, _ in asked if name is not None]

    def result(name: str | None, topic_id: Any, code: ErrorCode, message: str | None) -> Any:
        answer = DeleteTopicsResponse.DeletableTopicResult(
            name=name, error_code=code, error_message=message
        )
        if topic_id is not None:
            answer.topic_id = topic_id
        return answer

    def respond(results: Any) -> Any:
        by_name = dict(results)
        answers = []
        for name, topic_id in asked:
            if name is None:
                answers.append(
                    result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "Unknown topic id.")
                )
                continue
            error = by_name[name]
            answers.append(result(name, topic_id, error.code, error.message))
        return DeleteTopicsResponse(throttle_time_ms=0, responses=answers)

    return when_committed(
        active,
        lambda controller, now_ms: controller.delete_topics(names),
        respond,
        lambda code, message: DeleteTopicsResponse(
            throttle_time_ms=0, responses=[result(n, i, code, message) for n, i in asked]
        ),
    )


def create_partitions(active: ActiveController, request: Request) -> asyncio.Future:
    body = request.body
    topics = [
        rc.CreatePartitionsTopic(
            name=t.name,
            count=t.count,
            assignments=(
                [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
            ),
        )
        for t in body.topics
    ]

    def result(name: str, code: ErrorCode, message: str | None) -> Any:
        return CreatePartitionsResponse.CreatePartitionsTopicResult(
            name=name, error_code=code, error_message=message
        )

    return when_committed(
        active,
        lambda controller, now_ms: controller.create_partitions(
            topics, validate_only=body.validate_only
        ),
        lambda results: CreatePartitionsResponse(
            throttle_time_ms=0,
            results=[result(name, e.code, e.message) for name, e in results],
        ),
        lambda code, message: CreatePartitionsResponse(
            throttle_time_ms=0, results=[result(t.name, code, message) for t in topics]
        ),
    )
