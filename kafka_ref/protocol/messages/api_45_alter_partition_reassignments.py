"""AlterPartitionReassignments (API key 45, KIP-455): move partitions to other brokers.

An admin client (`kafka-reassign-partitions.sh --execute`, `AdminClient.
alterPartitionReassignments`) sends the controller, per partition, the *target replicas*
(TRS) or null to cancel the partition's pending reassignment. The controller checks the
target (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (39) for an empty list, a
duplicate or a broker that is not registered; NO_REASSIGNMENT_IN_PROGRESS for a cancel with
nothing to cancel), records it in ZooKeeper and answers at once: the data moves afterwards,
as the new replicas catch up (CTRL-24..CTRL-26). A broker that is not the controller
answers NOT_CONTROLLER.

Before KIP-455 the tool wrote `/admin/reassign_partitions` and the controller watched it;
that znode allowed one batch at a time and no cancel.

Version history (Kafka's JSON comments): v0 (Kafka 2.4), flexible; v1 adds
AllowReplicationFactorChange (KIP-860): false refuses a target whose number of replicas
differs from the partition's (INVALID_REPLICATION_FACTOR, CTRL-33); v0 always allows it.
kafka-ref declares 0-1, as Kafka 4.4.

Kafka's definitions: AlterPartitionReassignmentsRequest.json,
AlterPartitionReassignmentsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AlterPartitionReassignmentsRequest = Message(
    "AlterPartitionReassignmentsRequest",
    api_key=45,
    listeners=("broker", "controller"),
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field("TimeoutMs", "int32", "0+", default=60000, about="The time in ms to wait."),
        Field(
            "AllowReplicationFactorChange",
            "bool",
            "1+",
            default=True,
            about="Whether a partition's replication factor may change (KIP-860).",
        ),
        Field(
            "Topics",
            "[]ReassignableTopic",
            "0+",
            about="The topics to reassign.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]ReassignablePartition",
                    "0+",
                    about="The partitions to reassign.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "Replicas",
                            "[]int32",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The replicas to place the partition on, or null to cancel.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

AlterPartitionReassignmentsResponse = Message(
    "AlterPartitionReassignmentsResponse",
    api_key=45,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The throttle time in ms, or zero."),
        Field(
            "AllowReplicationFactorChange",
            "bool",
            "1+",
            default=True,
            about="Whether changing a replication factor was allowed (KIP-860).",
        ),
        Field("ErrorCode", "int16", "0+", about="The top-level error code, or 0."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            about="The top-level error message, or null.",
        ),
        Field(
            "Responses",
            "[]ReassignableTopicResponse",
            "0+",
            about="The responses to topics to reassign.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]ReassignablePartitionResponse",
                    "0+",
                    about="The responses to partitions to reassign.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="The error message, or null.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)
