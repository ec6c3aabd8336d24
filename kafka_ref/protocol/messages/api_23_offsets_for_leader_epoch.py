"""OffsetsForLeaderEpoch (API key 23): where did a leader epoch end? (KIP-101, KIP-279).

A follower that becomes follower in a new leader epoch cannot trust the tail of its log:
the old leader may have written records that the new leader never had. Before fetching, it
asks the leader, for the latest epoch in its own leader-epoch cache: "where does epoch E
end in your log?" The leader answers with the largest epoch <= E it knows and the offset
where the next epoch starts (or its log end offset for its current epoch). The follower
truncates to the smaller of that offset and its own end of that epoch, and if the answered
epoch is older than the one it asked about, asks again for that one (KIP-279), until both
logs share a prefix (spec/hw-truncation.md, TRUNC-4..TRUNC-6). This replaces the pre-0.11
rule "truncate to your high watermark", which loses acknowledged writes (TRUNC-1).

Consumers use it too (KIP-320): after a leader change, a consumer with a leader epoch from
Metadata v7+ checks that its position is still on the leader's log (librdkafka does, after a
leader change).

Per partition the request gives `current_leader_epoch` (fencing: an older one is
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH) and the `leader_epoch` to look up.
The response gives the error code, `leader_epoch` and `end_offset` (-1, -1 when unknown).

Version history (Kafka's JSON comments): v1 adds leader_epoch to the response; v2 adds
current_leader_epoch and the throttle time; v3 adds replica_id (the follower's broker id;
-2 for a debug consumer); v4 is flexible. Kafka 4 removed v0-1. kafka-ref declares 2-4.

Kafka's definitions: OffsetForLeaderEpochRequest.json, OffsetForLeaderEpochResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

OffsetsForLeaderEpochRequest = Message(
    "OffsetForLeaderEpochRequest",
    api_key=23,
    valid_versions="2-4",
    flexible_versions="4+",
    fields=[
        Field(
            "ReplicaId",
            "int32",
            "3+",
            default=-2,
            about="The broker ID of the follower, of -1 if this request is from a consumer.",
        ),
        Field(
            "Topics",
            "[]OffsetForLeaderTopic",
            "0+",
            about="Each topic to get offsets for.",
            fields=[
                Field("Topic", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]OffsetForLeaderPartition",
                    "0+",
                    about="Each partition to get offsets for.",
                    fields=[
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field(
                            "CurrentLeaderEpoch",
                            "int32",
                            "2+",
                            default=-1,
                            about="An epoch used to fence consumers/replicas with old metadata.",
                        ),
                        Field(
                            "LeaderEpoch",
                            "int32",
                            "0+",
                            about="The epoch to look up an offset for.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

OffsetsForLeaderEpochResponse = Message(
    "OffsetForLeaderEpochResponse",
    api_key=23,
    valid_versions="2-4",
    flexible_versions="4+",
    fields=[
        Field("ThrottleTimeMs", "int32", "2+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]OffsetForLeaderTopicResult",
            "0+",
            about="Each topic we fetched offsets for.",
            fields=[
                Field("Topic", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]EpochEndOffset",
                    "0+",
                    about="Each partition in the topic we fetched offsets for.",
                    fields=[
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field(
                            "LeaderEpoch",
                            "int32",
                            "1+",
                            default=-1,
                            about="The leader epoch of the partition.",
                        ),
                        Field(
                            "EndOffset",
                            "int64",
                            "0+",
                            default=-1,
                            about="The end offset of the epoch.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)
