"""UnregisterBroker (API key 64, KIP-631): an administrator removes a broker for good.

A KRaft broker that is shut down stays registered (fenced) so that it can come back with its
partitions. When it will not come back, `kafka-cluster.sh unregister` (Admin
`unregisterBroker`) asks the controller to remove its registration.

Version history: v0 only, flexible.

Kafka's brokers also accept it and forward it to the controllers; kafka-ref's broker does not
yet, so it is declared for the controller listener only (PROTO-21).

Kafka's definitions: UnregisterBrokerRequest.json, UnregisterBrokerResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

UnregisterBrokerRequest = Message(
    "UnregisterBrokerRequest",
    api_key=64,
    valid_versions="0",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("BrokerId", "int32", "0+", about="The broker ID to unregister."),
    ],
)

UnregisterBrokerResponse = Message(
    "UnregisterBrokerResponse",
    api_key=64,
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
            about="The top-level error message, or `null` if there was no top-level error.",
        ),
    ],
)
