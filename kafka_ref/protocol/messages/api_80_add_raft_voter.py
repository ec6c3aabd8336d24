"""AddRaftVoter (API key 80, KIP-853): add a controller to the voters of a dynamic quorum.

With `controller.quorum.bootstrap.servers` instead of a static `controller.quorum.voters`,
the voter set is itself in the metadata log (VotersRecord) and changes one voter at a time.
An observer controller that has caught up is made a voter with AddRaftVoter (its id,
directory id and listeners); the leader appends the new voter set and answers once it is
committed by a majority of the *new* set.

Version history (Kafka's JSON comments): v0 flexible; v1 adds AckWhenCommitted (false:
answer once the leader has written the new set, before it is committed).

Kafka's brokers also accept it and forward it to the controllers; kafka-ref's broker does not
yet, so it is declared for the controller listener only (PROTO-21).

Kafka's definitions: AddRaftVoterRequest.json, AddRaftVoterResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AddRaftVoterRequest = Message(
    "AddRaftVoterRequest",
    api_key=80,
    valid_versions="0-1",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("ClusterId", "string", "0+", nullable_versions="0+", about="The cluster id."),
        Field(
            "TimeoutMs",
            "int32",
            "0+",
            about="The maximum time to wait for the request to complete before returning.",
        ),
        Field(
            "VoterId",
            "int32",
            "0+",
            about="The replica id of the voter getting added to the topic partition.",
        ),
        Field(
            "VoterDirectoryId",
            "uuid",
            "0+",
            about="The directory id of the voter getting added to the topic partition.",
        ),
        Field(
            "Listeners",
            "[]Listener",
            "0+",
            about="The endpoints that can be used to communicate with the voter.",
            fields=[
                Field("Name", "string", "0+", about="The name of the endpoint."),
                Field("Host", "string", "0+", about="The hostname."),
                Field("Port", "uint16", "0+", about="The port."),
            ],
        ),
        Field(
            "AckWhenCommitted",
            "bool",
            "1+",
            default=True,
            about="Answer once the new voter set is committed, not written.",
        ),
    ],
)

AddRaftVoterResponse = Message(
    "AddRaftVoterResponse",
    api_key=80,
    valid_versions="0-1",
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
