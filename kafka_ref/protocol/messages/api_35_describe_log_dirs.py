"""DescribeLogDirs (API key 35): a broker's log directories and the partitions in each.

A broker with several `log.dirs` (Kafka's "JBOD", DUR-13) places each partition in one of
them. DescribeLogDirs (KIP-113) tells an operator where: per directory its path, an error
code (a directory that failed is KAFKA_STORAGE_ERROR), and per partition the size of its
segments, its *offset lag* (how far its log end offset is past the high watermark: what
the followers or the consumers have not got yet) and whether it is a *future* log being
moved in by AlterReplicaLogDirs. Since v4 each directory also says the total and the
usable bytes of its volume. `kafka-log-dirs.sh --describe` prints this answer as JSON.

Topics null asks for every partition; an empty list for none.

Version history (Kafka's JSON comments): v1 is v0 (KIP-896 removed v0), v2 flexible, v3
adds the top-level error code, v4 the volume's TotalBytes and UsableBytes (KIP-827), v5
IsCordoned (KIP-1066: a directory named in `cordoned.log.dirs` takes no new partitions).
kafka-ref declares 1-5, as Kafka 4.4 (BROKER-76).

Kafka's definitions: DescribeLogDirsRequest.json, DescribeLogDirsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeLogDirsRequest = Message(
    "DescribeLogDirsRequest",
    api_key=35,
    valid_versions="1-5",
    flexible_versions="2+",
    fields=[
        Field(
            "Topics",
            "[]DescribableLogDirTopic",
            "0+",
            nullable_versions="0+",
            about="Each topic to describe, or null for all topics.",
            fields=[
                Field("Topic", "string", "0+", about="The topic name."),
                Field("Partitions", "[]int32", "0+", about="The partition indexes."),
            ],
        ),
    ],
)

DescribeLogDirsResponse = Message(
    "DescribeLogDirsResponse",
    api_key=35,
    valid_versions="1-5",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "3+", default=0, about="The error code, or 0."),
        Field(
            "Results",
            "[]DescribeLogDirsResult",
            "0+",
            about="The log directories.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field("LogDir", "string", "0+", about="The absolute log directory path."),
                Field(
                    "Topics",
                    "[]DescribeLogDirsTopic",
                    "0+",
                    about="The topics.",
                    fields=[
                        Field("Name", "string", "0+", about="The topic name."),
                        Field(
                            "Partitions",
                            "[]DescribeLogDirsPartition",
                            "0+",
                            about="The partitions.",
                            fields=[
                                Field("PartitionIndex", "int32", "0+", about="The partition."),
                                Field(
                                    "PartitionSize",
                                    "int64",
                                    "0+",
                                    about="The size of its segments in bytes.",
                                ),
                                Field(
                                    "OffsetLag",
                                    "int64",
                                    "0+",
                                    about="Its log end offset minus its high watermark.",
                                ),
                                Field(
                                    "IsFutureKey",
                                    "bool",
                                    "0+",
                                    about="Whether it is a future log (AlterReplicaLogDirs).",
                                ),
                            ],
                        ),
                    ],
                ),
                Field(
                    "TotalBytes",
                    "int64",
                    "4+",
                    default=-1,
                    about="The total size in bytes of the directory's volume.",
                ),
                Field(
                    "UsableBytes",
                    "int64",
                    "4+",
                    default=-1,
                    about="The usable size in bytes of the directory's volume.",
                ),
                Field(
                    "IsCordoned",
                    "bool",
                    "5+",
                    default=False,
                    about="Whether the directory is cordoned (KIP-1066).",
                ),
            ],
        ),
    ],
)
