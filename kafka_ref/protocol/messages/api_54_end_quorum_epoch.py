"""EndQuorumEpoch (API key 54, KIP-595): a leader resigns and says who should follow it.

A leader that shuts down gracefully does not leave the voters to wait out an election
timeout: it sends EndQuorumEpoch with its epoch and an ordered list of preferred successors
(the voters whose logs are most caught up), and those start an election at once, the first
one sooner than the others.

Version history (Kafka's JSON comments): v0 is not flexible; v1 is flexible, replaces the
preferred successors (ids) with preferred candidates (id and directory id) and adds the
leader's endpoints (KIP-853).

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: EndQuorumEpochRequest.json, EndQuorumEpochResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

EndQuorumEpochRequest = Message(
    "EndQuorumEpochRequest",
    api_key=54,
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
                            "LeaderId",
                            "int32",
                            "0+",
                            about="The current leader ID that is resigning.",
                        ),
                        Field("LeaderEpoch", "int32", "0+", about="The current epoch."),
                        Field(
                            "PreferredSuccessors",
                            "[]int32",
                            "0",
                            about="A sorted list of preferred successors to start the election.",
                        ),
                        Field(
                            "PreferredCandidates",
                            "[]ReplicaInfo",
                            "1+",
                            about="A sorted list of preferred candidates to start the election.",
                            fields=[
                                Field(
                                    "CandidateId",
                                    "int32",
                                    "1+",
                                    about="The ID of the candidate replica.",
                                ),
                                Field(
                                    "CandidateDirectoryId",
                                    "uuid",
                                    "1+",
                                    about="The directory ID of the candidate replica.",
                                ),
                            ],
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

EndQuorumEpochResponse = Message(
    "EndQuorumEpochResponse",
    api_key=54,
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
                        Field("ErrorCode", "int16", "0+", about="The partition level error code."),
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
