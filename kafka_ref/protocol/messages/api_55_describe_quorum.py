"""DescribeQuorum (API key 55, KIP-595): the state of the metadata quorum, for operators.

`kafka-metadata-quorum.sh describe --status` sends it: the leader of `__cluster_metadata`
answers with its id and epoch, the high watermark, and for every voter and observer (a
broker replicating the log without a vote) its log end offset and, from v1, when it last
fetched and when it was last caught up: how far each replica lags.

Version history (Kafka's JSON comments): v0 flexible; v1 adds LastFetchTimestamp and
LastCaughtUpTimestamp (KIP-836); v2 adds error messages, the replicas' directory ids and the
voters' listeners (`Nodes`, KIP-853). The request is the same at every version. `ReplicaState`
is one of Kafka's common structs, shared by CurrentVoters and Observers.

Kafka's brokers also accept it and forward it to the controllers; kafka-ref's broker does not
yet, so it is declared for the controller listener only (PROTO-21).

Kafka's definitions: DescribeQuorumRequest.json, DescribeQuorumResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message, StructSchema

# One of Kafka's `commonStructs`: the voters and the observers are described alike.
REPLICA_STATE = StructSchema(
    "ReplicaState",
    [
        Field("ReplicaId", "int32", "0+", about="The ID of the replica."),
        Field("ReplicaDirectoryId", "uuid", "2+", about="The directory ID of the replica."),
        Field("LogEndOffset", "int64", "0+", about="Its last known log end offset, or -1."),
        Field(
            "LastFetchTimestamp",
            "int64",
            "1+",
            default=-1,
            about="The leader's wall clock time of the replica's last fetch, or -1.",
        ),
        Field(
            "LastCaughtUpTimestamp",
            "int64",
            "1+",
            default=-1,
            about="The leader's append time of the offset the replica last fetched up to, or -1.",
        ),
    ],
)

DescribeQuorumRequest = Message(
    "DescribeQuorumRequest",
    api_key=55,
    valid_versions="0-2",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field(
            "Topics",
            "[]TopicData",
            "0+",
            about="The topics to describe.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The partitions to describe.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                    ],
                ),
            ],
        ),
    ],
)

DescribeQuorumResponse = Message(
    "DescribeQuorumResponse",
    api_key=55,
    valid_versions="0-2",
    flexible_versions="0+",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The top level error code."),
        Field(
            "ErrorMessage",
            "string",
            "2+",
            nullable_versions="2+",
            about="The error message, or null if there was no error.",
        ),
        Field(
            "Topics",
            "[]TopicData",
            "0+",
            about="The response from the describe quorum API.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The partition data.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The partition error code."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "2+",
                            nullable_versions="2+",
                            about="The error message, or null if there was no error.",
                        ),
                        Field(
                            "LeaderId",
                            "int32",
                            "0+",
                            about="The current leader's ID, or -1 if unknown.",
                        ),
                        Field("LeaderEpoch", "int32", "0+", about="The latest known leader epoch."),
                        Field("HighWatermark", "int64", "0+", about="The high water mark."),
                        Field(
                            "CurrentVoters",
                            "[]ReplicaState",
                            "0+",
                            about="The current voters of the partition.",
                            fields=REPLICA_STATE,
                        ),
                        Field(
                            "Observers",
                            "[]ReplicaState",
                            "0+",
                            about="The observers of the partition.",
                            fields=REPLICA_STATE,
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "Nodes",
            "[]Node",
            "2+",
            about="The nodes in the quorum.",
            fields=[
                Field("NodeId", "int32", "2+", about="The ID of the associated node."),
                Field(
                    "Listeners",
                    "[]Listener",
                    "2+",
                    about="The listeners of this controller.",
                    fields=[
                        Field("Name", "string", "2+", about="The name of the endpoint."),
                        Field("Host", "string", "2+", about="The hostname."),
                        Field("Port", "uint16", "2+", about="The port."),
                    ],
                ),
            ],
        ),
    ],
)
