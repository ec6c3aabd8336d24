"""CreateTopics, DeleteTopics, CreatePartitions: topic administration through the controller.

Admin clients (`AdminClient.create_topics`, `kafka-topics.sh --create`) send these to the
controller (Metadata's `controller_id`). The handlers call `apis.controller`, which is the
embedded controller on a single broker and the broker's ZooKeeper view in a cluster
(`ClusterMetadataApi`): there the same checks run, replicas are placed over the live
brokers (CTRL-8) and the topic is written to ZooKeeper for the controller to bring online
(CTRL-9); any broker can take the request. Each handler validates per topic and answers per
topic, so one bad topic does not fail the others (Kafka: `ControllerApis.createTopics`,
`ReplicationControlManager`):

* **CreateTopics** (BROKER-30..BROKER-33): a name listed twice is INVALID_REQUEST; an
  illegal name INVALID_TOPIC_EXCEPTION; an existing one TOPIC_ALREADY_EXISTS;
  `num_partitions` and `replication_factor` of -1 mean the broker defaults
  (`num.partitions`, `default.replication.factor`) in *every* version, since kafka-python
  and KafkaJS send -1 even where Kafka's JSON says v4+ (KIP-464); a non-positive count is
  INVALID_PARTITIONS; a replication factor above the number of brokers (1) is
  INVALID_REPLICATION_FACTOR; an unknown config name or a bad value is INVALID_CONFIG.
  With `validate_only` nothing is created, but the answer is the same.
* **DeleteTopics** (BROKER-34): unknown topics are UNKNOWN_TOPIC_OR_PARTITION; with
  `delete.topic.enable=false`, TOPIC_DELETION_DISABLED. The topic's logs are deleted.
* **CreatePartitions** (BROKER-35): the count must grow (INVALID_PARTITIONS otherwise);
  explicit assignments must give one replica list per new partition, naming this broker.

Rules: BROKER-30..BROKER-35.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import InvalidReplicaAssignmentError, InvalidRequestError
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized, require
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


def _message(err: KafkaError) -> str:
    return str(err.args[0]) if err.args else err.code.name


def handle_create_topics(apis: ApiContext, request: Request) -> Any:
    body = request.body
    counts = Counter(t.name for t in body.topics)
    results = []
    for topic in body.topics:
        result = CreateTopicsResponse.CreatableTopicResult(
            name=topic.name, error_code=ErrorCode.NO_ERROR, error_message=None
        )
        try:
            if counts[topic.name] > 1:
                raise InvalidRequestError("Duplicate topic name in the request.")
            if not authorized(apis, request, Op.CREATE, Res.CLUSTER):  # SEC-17
                require(apis, request, Op.CREATE, Res.TOPIC, topic.name)
            assignments = {}
            for a in topic.assignments:
                if a.partition_index in assignments:
                    raise InvalidReplicaAssignmentError(
                        f"Partition {a.partition_index} is assigned twice."
                    )
                assignments[a.partition_index] = list(a.broker_ids)
            apis.controller.create_topic(
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                {c.name: c.value for c in topic.configs},
                assignments=assignments or None,
                validate_only=body.validate_only,
            )
        except KafkaError as err:
            result.error_code, result.error_message = err.code, _message(err)
        results.append(result)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


def handle_delete_topics(apis: ApiContext, request: Request) -> Any:
    names = request.body.topic_names
    counts = Counter(names)
    results = []
    for name in names:
        code = ErrorCode.NO_ERROR
        try:
            if counts[name] > 1:
                raise InvalidRequestError("Duplicate topic name.")
            require(apis, request, Op.DELETE, Res.TOPIC, name)  # SEC-17
            apis.controller.delete_topic(name)
        except KafkaError as err:
            code = err.code
        results.append(DeleteTopicsResponse.DeletableTopicResult(name=name, error_code=code))
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


def handle_create_partitions(apis: ApiContext, request: Request) -> Any:
    body = request.body
    counts = Counter(t.name for t in body.topics)
    results = []
    for topic in body.topics:
        result = CreatePartitionsResponse.CreatePartitionsTopicResult(
            name=topic.name, error_code=ErrorCode.NO_ERROR, error_message=None
        )
        try:
            if counts[topic.name] > 1:
                raise InvalidRequestError("Duplicate topic name.")
            require(apis, request, Op.ALTER, Res.TOPIC, topic.name)  # SEC-17
            assignments = None
            if topic.assignments is not None:
                assignments = [list(a.broker_ids) for a in topic.assignments]
            apis.controller.create_partitions(
                topic.name, topic.count, assignments=assignments, validate_only=body.validate_only
            )
        except KafkaError as err:
            result.error_code, result.error_message = err.code, _message(err)
        results.append(result)
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)
