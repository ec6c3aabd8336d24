"""StopReplica (API key 5): the controller tells a broker to stop replicating partitions,
and to delete them (ZooKeeper mode). Brokers send it; clients never do.

The controller sends it when a topic is deleted (`DeletePartition` true: the broker stops
fetching, forgets the partition and deletes its log) and, in Kafka, when a replica moves
away in a reassignment. Each partition names the leader epoch the controller knows (KIP-570),
so a StopReplica older than the partition's current leadership is refused for that
partition (FENCED_LEADER_EPOCH). The request carries the controller epoch and the
receiver's broker epoch, checked as LeaderAndIsr's are (CTRL-19, CTRL-20).

Version history (Kafka's JSON comments): v1 adds the broker epoch and groups partitions by
topic; v2 is the first flexible version; v3 moves DeletePartitions into each partition and
adds its leader epoch (KIP-570); v4 the KRaft controller flag (KIP-866). kafka-ref declares
and sends v3, the version with per-partition leader epochs.

Kafka's definitions: StopReplicaRequest.json, StopReplicaResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

StopReplicaRequest = Message(
    "StopReplicaRequest",
    api_key=5,
    valid_versions="3",
    flexible_versions="2+",
    fields=[
        Field("ControllerId", "int32", "0+", about="The controller id."),
        Field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
        Field("BrokerEpoch", "int64", "1+", default=-1, about="The broker epoch."),
        Field(
            "TopicStates",
            "[]StopReplicaTopicState",
            "3+",
            about="Each topic.",
            fields=[
                Field("TopicName", "string", "3+", about="The topic name."),
                Field(
                    "PartitionStates",
                    "[]StopReplicaPartitionState",
                    "3+",
                    about="The state of each partition.",
                    fields=[
                        Field("PartitionIndex", "int32", "3+", about="The partition index."),
                        Field("LeaderEpoch", "int32", "3+", default=-1, about="The leader epoch."),
                        Field(
                            "DeletePartition",
                            "bool",
                            "3+",
                            about="Whether this partition should be deleted.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

StopReplicaResponse = Message(
    "StopReplicaResponse",
    api_key=5,
    valid_versions="3",
    flexible_versions="2+",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The top-level error code."),
        Field(
            "PartitionErrors",
            "[]StopReplicaPartitionError",
            "0+",
            about="The responses for each partition.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field("PartitionIndex", "int32", "0+", about="The partition index."),
                Field("ErrorCode", "int16", "0+", about="The partition error code."),
            ],
        ),
    ],
)
