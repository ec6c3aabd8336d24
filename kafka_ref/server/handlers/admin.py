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
  With `validate_only` nothing is created, but the answer is the same. From v5 a topic
  created (or validated) is also described: its partition count, its replication factor
  and every topic config with its value in force and source, as DescribeConfigs lists
  them, when the principal may DESCRIBE_CONFIGS the topic (else `topic_config_error_code`
  TOPIC_AUTHORIZATION_FAILED and none of them); v7 adds its topic id (BROKER-73).
* **DeleteTopics** (BROKER-34): unknown topics are UNKNOWN_TOPIC_OR_PARTITION; with
  `delete.topic.enable=false`, TOPIC_DELETION_DISABLED. The topic's logs are deleted. From
  v5 each result has an error message, from v6 a topic is named by its name *or* its id
  and each result carries both (BROKER-74): an id the cluster does not know is
  UNKNOWN_TOPIC_ID; neither, or both, is INVALID_REQUEST. A name or id given twice is
  answered once, INVALID_REQUEST (Kafka: `ControllerApis.deleteTopics`).
* **CreatePartitions** (BROKER-35): the count must grow (INVALID_PARTITIONS otherwise);
  explicit assignments must give one replica list per new partition, naming this broker.

kafka-ref has no controller mutation quota (KIP-599), so the versions that may answer
THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+) never do.

Rules: BROKER-30..BROKER-35, BROKER-73, BROKER-74.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import (
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    TopicMetadata,
)
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized, require
from kafka_ref.server.handlers.configs import Described, topic_config_entries
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


ZERO_UUID = uuid.UUID(int=0)


def _message(err: KafkaError) -> str:
    return str(err.args[0]) if err.args else err.code.name


def _describe_created(apis: ApiContext, request: Request, result: Any, meta: TopicMetadata) -> None:
    """CreateTopics v5+: what the new topic is, for a principal that may see its configs
    (Kafka: `ReplicationControlManager.createTopic`, its `authorizedToReturnConfigs`)."""
    result.topic_id = meta.topic_id
    if not authorized(apis, request, Op.DESCRIBE_CONFIGS, Res.TOPIC, meta.name):
        result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return
    result.num_partitions = meta.partitions
    result.replication_factor = meta.replication_factor
    result.configs = [
        CreateTopicsResponse.CreatableTopicConfigs(
            name=entry.name,
            value=entry.value,
            read_only=entry.read_only,
            config_source=entry.config_source,
            is_sensitive=entry.is_sensitive,
        )
        for entry in sorted(
            topic_config_entries(apis, meta.configs, None, Described()), key=lambda e: e.name
        )
    ]


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
            meta = apis.controller.create_topic(
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                {c.name: c.value for c in topic.configs},
                assignments=assignments or None,
                validate_only=body.validate_only,
            )
            _describe_created(apis, request, result, meta)
        except KafkaError as err:
            result.error_code, result.error_message = err.code, _message(err)
        results.append(result)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


def _deletions(request: Request) -> list[tuple[str | None, uuid.UUID]]:
    """The topics to delete in request order: (name, ZERO_UUID) before v6, (name or None,
    id or ZERO_UUID) from v6."""
    body = request.body
    if request.api_version < 6:
        return [(name, ZERO_UUID) for name in body.topic_names]
    return [(t.name, t.topic_id) for t in body.topics]


def handle_delete_topics(apis: ApiContext, request: Request) -> Any:
    asked = _deletions(request)
    names = Counter(n for n, i in asked if n is not None and i == ZERO_UUID)
    ids = Counter(i for n, i in asked if n is None and i != ZERO_UUID)
    name_of = {meta.topic_id: meta.name for meta in apis.controller.topics()}
    id_of = {name: topic_id for topic_id, name in name_of.items()}
    results = []
    for name, topic_id in dict.fromkeys(asked):  # a duplicate is answered once
        result = DeleteTopicsResponse.DeletableTopicResult(
            name=name, topic_id=topic_id, error_code=ErrorCode.NO_ERROR, error_message=None
        )
        try:
            if name is None and topic_id == ZERO_UUID:
                raise InvalidRequestError("Neither topic name nor id were specified.")
            if name is not None and topic_id != ZERO_UUID:
                raise InvalidRequestError("You may not specify both topic name and topic id.")
            if names[name] > 1:
                raise InvalidRequestError("Duplicate topic name.")
            if ids[topic_id] > 1:
                raise InvalidRequestError("Duplicate topic id.")
            if name is None:  # by id (v6+)
                if topic_id not in name_of:
                    raise KafkaError(
                        "This server does not host this topic ID.", code=ErrorCode.UNKNOWN_TOPIC_ID
                    )
                if authorized(apis, request, Op.DESCRIBE, Res.TOPIC, name_of[topic_id]):
                    result.name = name_of[topic_id]  # else the id's name stays unsaid
                require(apis, request, Op.DELETE, Res.TOPIC, name_of[topic_id])  # SEC-17
            else:
                require(apis, request, Op.DELETE, Res.TOPIC, name)
                result.topic_id = id_of.get(name, ZERO_UUID)
            apis.controller.delete_topic(result.name)
        except KafkaError as err:
            result.error_code, result.error_message = err.code, _message(err)
        results.append(result)
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
