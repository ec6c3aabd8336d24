"""CreatePartitions (API key 37): add partitions to an existing topic (KIP-195).

A topic's partition count is its unit of parallelism: one consumer in a group reads a
partition at a time, so more consumers than partitions sit idle. CreatePartitions raises the
count; it can never lower it, because records with a key are placed by
`hash(key) % partitions`, and removing partitions would strand their data. Even adding
partitions changes where new records with a given key go, so ordering per key only holds
from that point on; that is why it is an explicit admin action and not automatic.

Per topic the request gives the new total `count` and, optionally, `assignments`: one entry
of broker ids per *new* partition (null lets the controller choose). `validate_only` checks
without doing it. Like the other topic admin APIs it goes to the controller.

Errors per topic: INVALID_PARTITIONS (37) for a count that is not larger than today's,
INVALID_REPLICA_ASSIGNMENT (39), UNKNOWN_TOPIC_OR_PARTITION (3), REASSIGNMENT_IN_PROGRESS
(60), each with an `error_message`.

Version history (Kafka's JSON comments): v1 = v0 (throttle before response); v2 is flexible;
v3 may return THROTTLING_QUOTA_EXCEEDED (KIP-599). kafka-ref declares 0-3, as Kafka 4.4; it
has no controller mutation quota, so never answers that error.

Kafka's definitions: CreatePartitionsRequest.json, CreatePartitionsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

CreatePartitionsRequest = Message(
    "CreatePartitionsRequest",
    api_key=37,
    valid_versions="0-3",
    flexible_versions="2+",
    listeners=("broker", "controller"),
    fields=[
        Field(
            "Topics",
            "[]CreatePartitionsTopic",
            "0+",
            about="Each topic that we want to create new partitions inside.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field("Count", "int32", "0+", about="The new partition count."),
                Field(
                    "Assignments",
                    "[]CreatePartitionsAssignment",
                    "0+",
                    nullable_versions="0+",
                    about="The new partition assignments, or null to let the controller choose.",
                    fields=[
                        Field("BrokerIds", "[]int32", "0+", about="The assigned broker IDs."),
                    ],
                ),
            ],
        ),
        Field("TimeoutMs", "int32", "0+", about="The time in ms to wait for the partitions."),
        Field(
            "ValidateOnly",
            "bool",
            "0+",
            about="If true, validate the request without increasing the number of partitions.",
        ),
    ],
)

CreatePartitionsResponse = Message(
    "CreatePartitionsResponse",
    api_key=37,
    valid_versions="0-3",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Results",
            "[]CreatePartitionsTopicResult",
            "0+",
            about="The partition creation results for each topic.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field("ErrorCode", "int16", "0+", about="The result error, or zero."),
                Field(
                    "ErrorMessage",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    default=None,
                    about="The result message, or null if there was no error.",
                ),
            ],
        ),
    ],
)
