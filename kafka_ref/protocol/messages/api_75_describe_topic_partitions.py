"""DescribeTopicPartitions (API key 75): a topic's partitions, a page at a time (KIP-966).

Metadata answers for every partition of every topic asked, in one response. A cluster with
a topic of 100,000 partitions makes that one response very large. DescribeTopicPartitions
describes the same partitions (leader, leader epoch, replicas, ISR, offline replicas, and
KIP-966's eligible leader replicas) in pages: the request sets `response_partition_limit`
(capped by the broker's `max.request.partition.size.limit`), and when the page is full the
response carries `next_cursor`, the topic and partition to start from next. The client
sends the same request again with that `cursor` until no `next_cursor` comes back. Topics
are described in name order, so a cursor is just a (topic name, partition index) pair.

The Java AdminClient 4.x uses it for `describeTopics` (kafka-topics.sh --describe) and falls
back to Metadata only when a broker does not advertise it.

The request's `cursor` is the one nullable struct of the protocol's client APIs: an INT8
marker, -1 for null (types.NullableStruct). Only version 0 exists; it is flexible.

Kafka's definitions: DescribeTopicPartitionsRequest.json, DescribeTopicPartitionsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message


def _cursor(about: str) -> list[Field]:
    return [
        Field("TopicName", "string", "0+", about=f"The name of the {about} topic."),
        Field("PartitionIndex", "int32", "0+", about="The partition index to start with."),
    ]


DescribeTopicPartitionsRequest = Message(
    "DescribeTopicPartitionsRequest",
    api_key=75,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Topics",
            "[]TopicRequest",
            "0+",
            about="The topics to describe; empty means every topic.",
            fields=[Field("Name", "string", "0+", about="The topic name.")],
        ),
        Field(
            "ResponsePartitionLimit",
            "int32",
            "0+",
            default=2000,
            about="The maximum number of partitions included in the response.",
        ),
        Field(
            "Cursor",
            "Cursor",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The first topic and partition index to describe, or null.",
            fields=_cursor("first"),
        ),
    ],
)

DescribeTopicPartitionsResponse = Message(
    "DescribeTopicPartitionsResponse",
    api_key=75,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]DescribeTopicPartitionsResponseTopic",
            "0+",
            about="Each topic in the response.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The topic error, or 0."),
                Field(
                    "Name",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    about="The topic name.",
                ),
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field("IsInternal", "bool", "0+", default=False, about="True if internal."),
                Field(
                    "Partitions",
                    "[]DescribeTopicPartitionsResponsePartition",
                    "0+",
                    about="Each partition in the topic.",
                    fields=[
                        Field("ErrorCode", "int16", "0+", about="The partition error, or 0."),
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("LeaderId", "int32", "0+", about="The ID of the leader broker."),
                        Field(
                            "LeaderEpoch",
                            "int32",
                            "0+",
                            default=-1,
                            about="The leader epoch of this partition.",
                        ),
                        Field(
                            "ReplicaNodes",
                            "[]int32",
                            "0+",
                            about="The set of all nodes that host this partition.",
                        ),
                        Field(
                            "IsrNodes",
                            "[]int32",
                            "0+",
                            about="The nodes that are in sync with the leader.",
                        ),
                        Field(
                            "EligibleLeaderReplicas",
                            "[]int32",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The eligible leader replicas (KIP-966).",
                        ),
                        Field(
                            "LastKnownElr",
                            "[]int32",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The last known eligible leader replicas (KIP-966).",
                        ),
                        Field(
                            "OfflineReplicas",
                            "[]int32",
                            "0+",
                            about="The set of offline replicas of this partition.",
                        ),
                    ],
                ),
                Field(
                    "TopicAuthorizedOperations",
                    "int32",
                    "0+",
                    default=-2147483648,
                    about="32-bit bitfield of the operations authorized on this topic.",
                ),
            ],
        ),
        Field(
            "NextCursor",
            "Cursor",
            "0+",
            nullable_versions="0+",
            default=None,
            about="Where the next request starts, or null when this was the last page.",
            fields=_cursor("next"),
        ),
    ],
)
