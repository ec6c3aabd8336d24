"""BeginQuorumEpoch (API key 53, KIP-595): a new leader tells the voters it has won.

A candidate that collects a majority of votes becomes the leader of its epoch. Raft's
followers would learn that from the leader's first append; KRaft's followers *pull* (they
Fetch from the leader, as Kafka's replicas always have), so the new leader sends
BeginQuorumEpoch to every voter to say "I lead epoch N" and they start fetching from it.
The leader repeats it to voters that do not fetch, until they do.

Version history (Kafka's JSON comments): v0 is not flexible; v1 is flexible and adds the
receiving voter's key and the leader's endpoints (KIP-853), so a voter learns where to fetch
without static configuration.

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: BeginQuorumEpochRequest.json, BeginQuorumEpochResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

BeginQuorumEpochRequest = Message(
    "BeginQuorumEpochRequest",
    api_key=53,
    valid_versions="0-1",
    flexible_versions="1+",
    listeners=("controller",),
    fields=[
        Field(
            "ClusterId",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The cluster id.",
        ),
        Field(
            "VoterId",
            "int32",
            "1+",
            default=-1,
            about="The replica id of the voter receiving the request.",
        ),
        Field(
            "Topics",
            "[]TopicData",
            "0+",
            about="The topics.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The partitions.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "VoterDirectoryId",
                            "uuid",
                            "1+",
                            about="The directory id of the receiving replica.",
                        ),
                        Field(
                            "LeaderId", "int32", "0+", about="The ID of the newly elected leader."
                        ),
                        Field(
                            "LeaderEpoch",
                            "int32",
                            "0+",
                            about="The epoch of the newly elected leader.",
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "LeaderEndpoints",
            "[]LeaderEndpoint",
            "1+",
            about="Endpoints for the leader.",
            fields=[
                Field("Name", "string", "1+", about="The name of the endpoint."),
                Field("Host", "string", "1+", about="The node's hostname."),
                Field("Port", "uint16", "1+", about="The node's port."),
            ],
        ),
    ],
)

BeginQuorumEpochResponse = Message(
    "BeginQuorumEpochResponse",
    api_key=53,
    valid_versions="0-1",
    flexible_versions="1+",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The top level error code."),
        Field(
            "Topics",
            "[]TopicData",
            "0+",
            about="The topic data.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The partition data.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "ErrorCode", "int16", "0+", about="The error code for this partition."
                        ),
                        Field(
                            "LeaderId",
                            "int32",
                            "0+",
                            about="The current leader's ID, or -1 if unknown.",
                        ),
                        Field("LeaderEpoch", "int32", "0+", about="The latest known leader epoch."),
                    ],
                ),
            ],
        ),
        Field(
            "NodeEndpoints",
            "[]NodeEndpoint",
            "1+",
            tagged_versions="1+",
            tag=0,
            about="Endpoints for all leaders enumerated in PartitionData.",
            fields=[
                Field("NodeId", "int32", "1+", about="The ID of the associated node."),
                Field("Host", "string", "1+", about="The node's hostname."),
                Field("Port", "uint16", "1+", about="The node's port."),
            ],
        ),
    ],
)
