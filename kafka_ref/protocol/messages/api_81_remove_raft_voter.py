"""RemoveRaftVoter (API key 81, KIP-853): remove a controller from the voters of a quorum.

The reverse of AddRaftVoter: the leader appends a voter set without the voter named by id
and directory id (the directory id tells a replaced disk from the same replica), and answers
once the new set is committed. A leader that removes itself resigns once it is.

Version history: v0 only, flexible.

Kafka's brokers also accept it and forward it to the controllers; kafka-ref's broker does not
yet, so it is declared for the controller listener only (PROTO-21).

Kafka's definitions: RemoveRaftVoterRequest.json, RemoveRaftVoterResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

RemoveRaftVoterRequest = Message(
    "RemoveRaftVoterRequest",
    api_key=81,
    valid_versions="0",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field(
            "ClusterId",
            "string",
            "0+",
            nullable_versions="0+",
            about="The cluster id of the request.",
        ),
        Field(
            "VoterId",
            "int32",
            "0+",
            about="The replica id of the voter getting removed from the topic partition.",
        ),
        Field(
            "VoterDirectoryId",
            "uuid",
            "0+",
            about="The directory id of the voter getting removed from the topic partition.",
        ),
    ],
)

RemoveRaftVoterResponse = Message(
    "RemoveRaftVoterResponse",
    api_key=81,
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
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            about="The error message, or null if there was no error.",
        ),
    ],
)
