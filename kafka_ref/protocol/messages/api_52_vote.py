"""Vote (API key 52, KIP-595): a candidate asks the other voters of the quorum for their vote.

KRaft keeps the cluster's metadata in one replicated log, `__cluster_metadata`, whose leader
the controllers elect among themselves with Raft's rules instead of ZooKeeper's. A voter that
hears from no leader within `controller.quorum.election.timeout.ms` becomes a candidate: it
bumps its epoch, votes for itself and sends Vote to every other voter with its epoch and the
epoch and offset of its log's last record. A voter grants at most one vote per epoch, and
only to a candidate whose log is at least as long as its own (Raft's election restriction),
so whoever wins a majority has every committed record. The response says whether the vote
was granted and, like every KRaft response, who the voter thinks leads and in which epoch.

Version history (Kafka's JSON comments): v0 flexible; v1 adds the voter key (VoterId and the
directory ids) and the leader's endpoints (KIP-853, dynamic quorums); v2 adds PreVote (KIP-996:
a candidate first asks whether it could win, without bumping the epoch, so a partitioned
voter that rejoins does not disrupt a working leader) and renames candidate to replica.

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: VoteRequest.json, VoteResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

VoteRequest = Message(
    "VoteRequest",
    api_key=52,
    valid_versions="0-2",
    flexible_versions="0+",
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
                            "ReplicaEpoch",
                            "int32",
                            "0+",
                            about="The epoch of the voter sending the request",
                        ),
                        Field(
                            "ReplicaId",
                            "int32",
                            "0+",
                            about="The replica id of the voter sending the request",
                        ),
                        Field(
                            "ReplicaDirectoryId",
                            "uuid",
                            "1+",
                            about="The directory id of the voter sending the request",
                        ),
                        Field(
                            "VoterDirectoryId",
                            "uuid",
                            "1+",
                            about="The directory id of the voter receiving the request",
                        ),
                        Field(
                            "LastOffsetEpoch",
                            "int32",
                            "0+",
                            about="The epoch of the last record written to the metadata log.",
                        ),
                        Field(
                            "LastOffset",
                            "int64",
                            "0+",
                            about="The sender's metadata log end offset.",
                        ),
                        Field(
                            "PreVote",
                            "bool",
                            "2+",
                            about="Whether this is a PreVote (not persisted).",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

VoteResponse = Message(
    "VoteResponse",
    api_key=52,
    valid_versions="0-2",
    flexible_versions="0+",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The top level error code."),
        Field(
            "Topics",
            "[]TopicData",
            "0+",
            about="The results for each topic.",
            fields=[
                Field("TopicName", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The results for each partition.",
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
                        Field(
                            "VoteGranted",
                            "bool",
                            "0+",
                            about="True if the vote was granted and false otherwise.",
                        ),
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
            about="Endpoints for all current-leaders enumerated in PartitionData.",
            fields=[
                Field("NodeId", "int32", "1+", about="The ID of the associated node."),
                Field("Host", "string", "1+", about="The node's hostname."),
                Field("Port", "uint16", "1+", about="The node's port."),
            ],
        ),
    ],
)
