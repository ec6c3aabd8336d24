"""ReadShareGroupState (API key 84): a share-partition's state, for its new leader (KIP-932).

The leader of a partition sends it to the share coordinator when it first serves a share
group on that partition (it became leader, or the group is new to it): the answer is the
state epoch, the share-partition start offset (SPSO) and the state batches above it, from
which the share-partition starts. The request carries the leader's epoch: a read under an
older epoch than the coordinator has seen is FENCED_LEADER_EPOCH, and a newer one is
recorded, fencing the previous leader's writes.

Errors: per partition NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_ID_NOT_FOUND (69), UNKNOWN_TOPIC_OR_PARTITION (3),
FENCED_LEADER_EPOCH (74), INVALID_REQUEST (42; also a share-partition never initialized).

Version history: v0 the first version (KIP-932). kafka-ref declares 0, as Kafka 4.4.

Kafka's definitions: ReadShareGroupStateRequest.json, ReadShareGroupStateResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ReadShareGroupStateRequest = Message(
    "ReadShareGroupStateRequest",
    api_key=84,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+", about="The group identifier."),
        Field(
            "Topics",
            "[]ReadStateData",
            "0+",
            about="The data for the topics.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic identifier."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The data for the partitions.",
                    fields=[
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                    ],
                ),
            ],
        ),
    ],
)

STATE_BATCH = [
    Field("FirstOffset", "int64", "0+", about="The first offset of this state batch."),
    Field("LastOffset", "int64", "0+", about="The last offset of this state batch."),
    Field("DeliveryState", "int8", "0+", about="0:Available, 2:Acked, 4:Archived."),
    Field("DeliveryCount", "int16", "0+", about="The delivery count."),
]

ReadShareGroupStateResponse = Message(
    "ReadShareGroupStateResponse",
    api_key=84,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Results",
            "[]ReadStateResult",
            "0+",
            about="The read results.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic identifier."),
                Field(
                    "Partitions",
                    "[]PartitionResult",
                    "0+",
                    about="The results for the partitions.",
                    fields=[
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The error message, or null.",
                        ),
                        Field("StateEpoch", "int32", "0+", about="The state epoch."),
                        Field("StartOffset", "int64", "0+", about="The SPSO, or -1."),
                        Field(
                            "StateBatches",
                            "[]StateBatch",
                            "0+",
                            about="The state batches.",
                            fields=STATE_BATCH,
                        ),
                    ],
                ),
            ],
        ),
    ],
)
