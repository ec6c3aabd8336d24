"""WriteShareGroupState (API key 85): a share-partition's changes, made durable (KIP-932).

The leader of a partition sends it to the share coordinator whenever records of a share
group change state in a way that must survive it (acknowledged, released, archived, the
start offset moved): the new share-partition start offset (SPSO, -1 if unchanged) and the
state batches that changed, which the coordinator folds into what it holds (the newer
delivery wins an offset; batches below the SPSO are dropped) and appends to
`__share_group_state`; the answer comes once that append is committed. A write under a state
epoch or leader epoch older than the coordinator's is fenced.

Errors: per partition NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
COORDINATOR_LOAD_IN_PROGRESS (14), GROUP_ID_NOT_FOUND (69), UNKNOWN_TOPIC_OR_PARTITION (3),
FENCED_LEADER_EPOCH (74), FENCED_STATE_EPOCH (124), INVALID_REQUEST (42; also a
share-partition never initialized).

Version history: v0 the first version (KIP-932); v1 `DeliveryCompleteCount`, the offsets at
or above the SPSO whose delivery is complete (KIP-1226). kafka-ref declares 0-1, as Kafka 4.4.

Kafka's definitions: WriteShareGroupStateRequest.json, WriteShareGroupStateResponse.json.
"""

from kafka_ref.protocol.messages.api_84_read_share_group_state import STATE_BATCH
from kafka_ref.protocol.schema import Field, Message

WriteShareGroupStateRequest = Message(
    "WriteShareGroupStateRequest",
    api_key=85,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field("GroupId", "string", "0+", about="The group identifier."),
        Field(
            "Topics",
            "[]WriteStateData",
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
                        Field("StateEpoch", "int32", "0+", about="The state epoch."),
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                        Field("StartOffset", "int64", "0+", about="The SPSO, or -1."),
                        Field(
                            "DeliveryCompleteCount",
                            "int32",
                            "1+",
                            default=-1,
                            about="Offsets at or above the SPSO whose delivery is complete.",
                        ),
                        Field(
                            "StateBatches",
                            "[]StateBatch",
                            "0+",
                            about="The state batches for the share-partition.",
                            fields=STATE_BATCH,
                        ),
                    ],
                ),
            ],
        ),
    ],
)

WriteShareGroupStateResponse = Message(
    "WriteShareGroupStateResponse",
    api_key=85,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field(
            "Results",
            "[]WriteStateResult",
            "0+",
            about="The write results.",
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
                    ],
                ),
            ],
        ),
    ],
)
