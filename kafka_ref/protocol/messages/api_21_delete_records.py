"""DeleteRecords (API key 21): move a partition's log start offset forward (KIP-107).

Kafka never deletes single records. Retention deletes whole old *segments*, and compaction
rewrites segments keeping the last value per key. DeleteRecords is the third way: an admin
says "everything before offset N in this partition may go". The leader raises the partition's
*log start offset* (Kafka's `Log.logStartOffset`, the low watermark) to N at once; reads below
it fail with OFFSET_OUT_OF_RANGE from then on, and the segments wholly below it are deleted
later by the retention thread. Stream processors use it to purge repartition topics they have
fully consumed.

Per partition the request gives the new start `offset`; -1 means "up to the high watermark",
i.e. delete everything committed so far. An offset above the high watermark is
OFFSET_OUT_OF_RANGE (1). The request goes to each partition's leader, and `timeout_ms`
bounds how long the leader waits for the followers to learn the new low watermark.

The response gives per partition the resulting `low_watermark` (the new log start offset)
and an error code (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE,
POLICY_VIOLATION for compacted topics...).

Version history (Kafka's JSON comments): v1 = v0 (throttle before response); v2 is flexible.
kafka-ref declares 0-2, as Kafka 4.4.

Kafka's definitions: DeleteRecordsRequest.json, DeleteRecordsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DeleteRecordsRequest = Message(
    "DeleteRecordsRequest",
    api_key=21,
    valid_versions="0-2",
    flexible_versions="2+",
    fields=[
        Field(
            "Topics",
            "[]DeleteRecordsTopic",
            "0+",
            about="Each topic that we want to delete records from.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]DeleteRecordsPartition",
                    "0+",
                    about="Each partition that we want to delete records from.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "Offset",
                            "int64",
                            "0+",
                            about="The deletion offset; -1 truncates to the high watermark.",
                        ),
                    ],
                ),
            ],
        ),
        Field("TimeoutMs", "int32", "0+", about="How long to wait for the deletion, in ms."),
    ],
)

DeleteRecordsResponse = Message(
    "DeleteRecordsResponse",
    api_key=21,
    valid_versions="0-2",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]DeleteRecordsTopicResult",
            "0+",
            about="Each topic that we wanted to delete records from.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]DeleteRecordsPartitionResult",
                    "0+",
                    about="Each partition that we wanted to delete records from.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("LowWatermark", "int64", "0+", about="The new low water mark."),
                        Field("ErrorCode", "int16", "0+", about="The deletion error, or 0."),
                    ],
                ),
            ],
        ),
    ],
)
