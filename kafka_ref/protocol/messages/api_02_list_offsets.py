"""ListOffsets (API key 2): find an offset in a partition by time or by position.

A consumer that has no committed position (or whose position fell out of the log) needs a
starting offset: `auto.offset.reset=earliest` asks for the log start, `latest` for the log
end. Seeking by time (`offsets_for_times`, kcat -Q) asks for the first offset whose record
timestamp is at or after a given time. ListOffsets answers all three with one field,
`timestamp`, that doubles as a selector:

* -2 (EARLIEST_TIMESTAMP): the log start offset;
* -1 (LATEST_TIMESTAMP): the log end offset, i.e. the high watermark, or the last stable
  offset (LSO) when `isolation_level` is READ_COMMITTED (v2+);
* a real timestamp in ms: the first offset with timestamp >= it, found through the time index;
* newer versions add -3 (max timestamp, v7), -4 (local log start, v8), -5 (last tiered
  offset, v9) and -6 (earliest pending upload, v11).

The response gives per partition `timestamp` and `offset` (-1/-1 when no record qualifies)
and, from v4, the `leader_epoch` of that offset. v0 returned an array of offsets
(`max_num_offsets`, `old_style_offsets`); that shape was dropped in v1 and v0 itself was
removed in Kafka 4.0.

`replica_id` is -1 for consumers; followers (and Kafka's own tools) use their broker id.

Version history: v1 single offset with its timestamp; v2 isolation_level and throttle time;
v3 = v2; v4 current_leader_epoch (fencing, KIP-320) and leader_epoch; v5 OFFSET_NOT_AVAILABLE;
v6 flexible; v7-v9 and v11 the targets -3..-6; v10 timeout_ms for tiered storage. kafka-ref
declares 1-11, all of Kafka 4.4's (BROKER-70, BROKER-71; librdkafka needs v1 in range to
enable offsets-for-times).

Kafka's definitions: ListOffsetsRequest.json, ListOffsetsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ListOffsetsRequest = Message(
    "ListOffsetsRequest",
    api_key=2,
    valid_versions="1-11",
    flexible_versions="6+",
    fields=[
        Field("ReplicaId", "int32", "0+", about="The requester's broker ID, or -1 for a consumer."),
        Field(
            "IsolationLevel",
            "int8",
            "2+",
            about="0 = READ_UNCOMMITTED (latest = high watermark), 1 = READ_COMMITTED (LSO).",
        ),
        Field(
            "Topics",
            "[]ListOffsetsTopic",
            "0+",
            about="Each topic in the request.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]ListOffsetsPartition",
                    "0+",
                    about="Each partition in the request.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "CurrentLeaderEpoch",
                            "int32",
                            "4+",
                            default=-1,
                            about="The current leader epoch.",
                        ),
                        Field("Timestamp", "int64", "0+", about="The time, or -1/-2 selectors."),
                        Field(
                            "MaxNumOffsets",
                            "int32",
                            "0",
                            default=1,
                            about="The maximum number of offsets to report (v0 only).",
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "TimeoutMs",
            "int32",
            "10+",
            about="The timeout for reading from remote (tiered) storage, in ms.",
        ),
    ],
)

ListOffsetsResponse = Message(
    "ListOffsetsResponse",
    api_key=2,
    valid_versions="1-11",
    flexible_versions="6+",
    fields=[
        Field("ThrottleTimeMs", "int32", "2+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]ListOffsetsTopicResponse",
            "0+",
            about="Each topic in the response.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]ListOffsetsPartitionResponse",
                    "0+",
                    about="Each partition in the response.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The partition error code, or 0."),
                        Field("OldStyleOffsets", "[]int64", "0", about="The result offsets (v0)."),
                        Field(
                            "Timestamp",
                            "int64",
                            "1+",
                            default=-1,
                            about="The timestamp associated with the returned offset.",
                        ),
                        Field("Offset", "int64", "1+", default=-1, about="The returned offset."),
                        Field(
                            "LeaderEpoch",
                            "int32",
                            "4+",
                            default=-1,
                            about="The leader epoch associated with the returned offset.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)
