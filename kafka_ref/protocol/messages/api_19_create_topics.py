"""CreateTopics (API key 19): the admin API that creates topics (KIP-4).

Before KIP-4, creating a topic meant writing to ZooKeeper directly (kafka-topics.sh --zookeeper).
Since Kafka 0.10.1 any client asks a broker, which forwards the work to the *controller*: the
one broker that owns cluster metadata, assigns replicas and elects leaders. Clients therefore
send CreateTopics to the controller named in the Metadata response.

Per topic the request gives either `num_partitions` + `replication_factor` (the broker
spreads the replicas) or explicit `assignments` (partition -> broker ids), plus topic-level
`configs` overrides (`cleanup.policy`, `retention.ms`, ...). `timeout_ms` bounds how long the
broker waits for the new topic to exist; `validate_only` (v1+) checks without creating.

-1 for `num_partitions` or `replication_factor` means "the broker's default"
(`num.partitions`, `default.replication.factor`). KIP-464 made that official in v4, but
kafka-python and KafkaJS send -1 in every version, so a broker should accept it everywhere.

The response has a per-topic error (TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_TOPIC_EXCEPTION, INVALID_CONFIG...) with an
`error_message` (v1+). From v5 it also echoes the resulting partitions, replication factor
and configs; v7 returns the new topic id.

Version history (Kafka's JSON comments): v1 validate_only and error messages; v2 throttle
time; v3 throttle before response; v4 optional partitions/replication factor (KIP-464); v5
flexible plus configs in the response (KIP-525); v6 THROTTLING_QUOTA_EXCEEDED (KIP-599); v7
topic ids. Versions 0-1 were removed in Kafka 4.0. kafka-ref declares 2-7, as Kafka 4.4
(BROKER-73); it has no controller mutation quota, so never THROTTLING_QUOTA_EXCEEDED.

Kafka's definitions: CreateTopicsRequest.json, CreateTopicsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

CreateTopicsRequest = Message(
    "CreateTopicsRequest",
    api_key=19,
    valid_versions="2-7",
    flexible_versions="5+",
    listeners=("broker", "controller"),
    fields=[
        Field(
            "Topics",
            "[]CreatableTopic",
            "0+",
            about="The topics to create.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "NumPartitions",
                    "int32",
                    "0+",
                    about="The number of partitions, or -1 for assignments or the default.",
                ),
                Field(
                    "ReplicationFactor",
                    "int16",
                    "0+",
                    about="The replication factor, or -1 for assignments or the default.",
                ),
                Field(
                    "Assignments",
                    "[]CreatableReplicaAssignment",
                    "0+",
                    about="The manual partition assignment, or empty for automatic.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("BrokerIds", "[]int32", "0+", about="The brokers to place it on."),
                    ],
                ),
                Field(
                    "Configs",
                    "[]CreatableTopicConfig",
                    "0+",
                    about="The custom topic configurations to set.",
                    fields=[
                        Field("Name", "string", "0+", about="The configuration name."),
                        Field(
                            "Value",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="The configuration value.",
                        ),
                    ],
                ),
            ],
        ),
        Field("timeoutMs", "int32", "0+", default=60000, about="How long to wait in ms."),
        Field(
            "validateOnly",
            "bool",
            "1+",
            default=False,
            about="If true, check that the topics can be created, but do not create them.",
        ),
    ],
)

CreateTopicsResponse = Message(
    "CreateTopicsResponse",
    api_key=19,
    valid_versions="2-7",
    flexible_versions="5+",
    fields=[
        Field("ThrottleTimeMs", "int32", "2+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]CreatableTopicResult",
            "0+",
            about="Results for each topic we tried to create.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field("TopicId", "uuid", "7+", about="The unique topic ID."),
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "1+",
                    nullable_versions="0+",
                    about="The error message, or null if there was no error.",
                ),
                Field(
                    "TopicConfigErrorCode",
                    "int16",
                    "5+",
                    tagged_versions="5+",
                    tag=0,
                    about="Optional topic config error returned if configs are not returned.",
                ),
                Field(
                    "NumPartitions",
                    "int32",
                    "5+",
                    default=-1,
                    about="Number of partitions of the topic.",
                ),
                Field(
                    "ReplicationFactor",
                    "int16",
                    "5+",
                    default=-1,
                    about="Replication factor of the topic.",
                ),
                Field(
                    "Configs",
                    "[]CreatableTopicConfigs",
                    "5+",
                    nullable_versions="5+",
                    about="Configuration of the topic.",
                    fields=[
                        Field("Name", "string", "5+", about="The configuration name."),
                        Field(
                            "Value",
                            "string",
                            "5+",
                            nullable_versions="5+",
                            about="The configuration value.",
                        ),
                        Field("ReadOnly", "bool", "5+", about="True if read-only."),
                        Field(
                            "ConfigSource",
                            "int8",
                            "5+",
                            default=-1,
                            about="The configuration source.",
                        ),
                        Field("IsSensitive", "bool", "5+", about="True if sensitive."),
                    ],
                ),
            ],
        ),
    ],
)
