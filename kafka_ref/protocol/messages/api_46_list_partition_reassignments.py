"""ListPartitionReassignments (API key 46, KIP-455): the reassignments in progress.

The controller answers, for each partition being reassigned (of the topics and partitions
asked, or all when the list is null), its current replicas (RS = ORS + TRS while it moves),
the replicas being added (TRS - ORS) and those to be removed (ORS - TRS) (CTRL-24).
`kafka-reassign-partitions.sh --verify` and `kafka-topics.sh --describe` use it. A broker
that is not the controller answers NOT_CONTROLLER.

Version history: v0 (Kafka 2.4), flexible.

Kafka's definitions: ListPartitionReassignmentsRequest.json,
ListPartitionReassignmentsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ListPartitionReassignmentsRequest = Message(
    "ListPartitionReassignmentsRequest",
    api_key=46,
    listeners=("broker", "controller"),
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("TimeoutMs", "int32", "0+", default=60000, about="The time in ms to wait."),
        Field(
            "Topics",
            "[]ListPartitionReassignmentsTopics",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The topics to list partition reassignments for, or null for everything.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field("PartitionIndexes", "[]int32", "0+", about="The partitions to list."),
            ],
        ),
    ],
)

ListPartitionReassignmentsResponse = Message(
    "ListPartitionReassignmentsResponse",
    api_key=46,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The top-level error code, or 0."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            about="The top-level error message, or null.",
        ),
        Field(
            "Topics",
            "[]OngoingTopicReassignment",
            "0+",
            about="The ongoing reassignments for each topic.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]OngoingPartitionReassignment",
                    "0+",
                    about="The ongoing reassignments for each partition.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("Replicas", "[]int32", "0+", about="The current replica set."),
                        Field("AddingReplicas", "[]int32", "0+", about="The replicas added."),
                        Field("RemovingReplicas", "[]int32", "0+", about="The replicas removed."),
                    ],
                ),
            ],
        ),
    ],
)
