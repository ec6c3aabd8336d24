"""UpdateRaftVoter (API key 82, KIP-853): a voter tells the leader its new endpoints.

A voter whose listeners or supported `kraft.version` range changed (after an upgrade or a
move) sends UpdateRaftVoter to the leader, which rewrites that voter's entry in the voter set.
The response names the current leader, with its endpoint, when the receiver is not it.

Version history: v0 only, flexible.

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: UpdateRaftVoterRequest.json, UpdateRaftVoterResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

UpdateRaftVoterRequest = Message(
    "UpdateRaftVoterRequest",
    api_key=82,
    valid_versions="0",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("ClusterId", "string", "0+", nullable_versions="0+", about="The cluster id."),
        Field(
            "CurrentLeaderEpoch",
            "int32",
            "0+",
            about="The current leader epoch, or -1 if unknown.",
        ),
        Field(
            "VoterId",
            "int32",
            "0+",
            about="The replica id of the voter getting updated in the topic partition.",
        ),
        Field(
            "VoterDirectoryId",
            "uuid",
            "0+",
            about="The directory id of the voter getting updated in the topic partition.",
        ),
        Field(
            "Listeners",
            "[]Listener",
            "0+",
            about="The endpoint that can be used to communicate with the leader.",
            fields=[
                Field("Name", "string", "0+", about="The name of the endpoint."),
                Field("Host", "string", "0+", about="The hostname."),
                Field("Port", "uint16", "0+", about="The port."),
            ],
        ),
        Field(
            "KRaftVersionFeature",
            "KRaftVersionFeature",
            "0+",
            about="The range of versions of the protocol that the replica supports.",
            fields=[
                Field(
                    "MinSupportedVersion",
                    "int16",
                    "0+",
                    about="The minimum supported KRaft protocol version.",
                ),
                Field(
                    "MaxSupportedVersion",
                    "int16",
                    "0+",
                    about="The maximum supported KRaft protocol version.",
                ),
            ],
        ),
    ],
)

UpdateRaftVoterResponse = Message(
    "UpdateRaftVoterResponse",
    api_key=82,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "ThrottleTimeMs",
            "int32",
            "0+",
            about="The quota throttle time in ms, or zero.",
        ),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
        Field(
            "CurrentLeader",
            "CurrentLeader",
            "0+",
            tagged_versions="0+",
            tag=0,
            about="Details of the current Raft cluster leader.",
            fields=[
                Field(
                    "LeaderId",
                    "int32",
                    "0+",
                    default=-1,
                    about="The replica id of the current leader or -1 if the leader is unknown.",
                ),
                Field(
                    "LeaderEpoch", "int32", "0+", default=-1, about="The latest known leader epoch."
                ),
                Field("Host", "string", "0+", about="The node's hostname."),
                Field("Port", "int32", "0+", about="The node's port."),
            ],
        ),
    ],
)
