"""DescribeProducers (API key 61): the producer state of partitions, for operators (KIP-664).

A partition's leader keeps, per producer id, its epoch, its last sequence and append time,
the coordinator epoch of its last marker and the first offset of its open transaction
(kafka_ref/log/producer_state.py). DescribeProducers shows that table, so that an operator
can find the producer whose open transaction holds a partition's LSO back (a "hanging
transaction", KIP-664).

Errors, per partition: NOT_LEADER_OR_FOLLOWER (6), UNKNOWN_TOPIC_OR_PARTITION (3).

Version history (Kafka's JSON comments): v0 only, flexible. kafka-ref declares 0.

Kafka's definitions: DescribeProducersRequest.json, DescribeProducersResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeProducersRequest = Message(
    "DescribeProducersRequest",
    api_key=61,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Topics",
            "[]TopicRequest",
            "0+",
            about="The topics to list producers for.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field("PartitionIndexes", "[]int32", "0+", about="The partition indexes."),
            ],
        ),
    ],
)

DescribeProducersResponse = Message(
    "DescribeProducersResponse",
    api_key=61,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]TopicResponse",
            "0+",
            about="Each topic in the response.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]PartitionResponse",
                    "0+",
                    about="Each partition in the response.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The error message, or null.",
                        ),
                        Field(
                            "ActiveProducers",
                            "[]ProducerState",
                            "0+",
                            about="The active producers of the partition.",
                            fields=[
                                Field("ProducerId", "int64", "0+", about="The producer id."),
                                Field("ProducerEpoch", "int32", "0+", about="Its epoch."),
                                Field(
                                    "LastSequence",
                                    "int32",
                                    "0+",
                                    default=-1,
                                    about="Its last sequence.",
                                ),
                                Field(
                                    "LastTimestamp",
                                    "int64",
                                    "0+",
                                    default=-1,
                                    about="When its last batch was appended.",
                                ),
                                Field(
                                    "CoordinatorEpoch",
                                    "int32",
                                    "0+",
                                    about="The coordinator epoch of its last marker.",
                                ),
                                Field(
                                    "CurrentTxnStartOffset",
                                    "int64",
                                    "0+",
                                    default=-1,
                                    about="The first offset of its open transaction.",
                                ),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ],
)
