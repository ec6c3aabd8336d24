"""ControllerRegistration (API key 70, KIP-919): a controller tells the quorum where it listens.

Every controller, voter or not, registers with the active controller: its id, incarnation
id, listeners and supported features. The active controller writes a
RegisterControllerRecord, so that brokers and admin clients can find the controllers
(DescribeCluster with EndpointType 2) and the quorum knows what every controller supports
before finalizing a feature level.

Version history: v0 only, flexible.

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: ControllerRegistrationRequest.json, ControllerRegistrationResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ControllerRegistrationRequest = Message(
    "ControllerRegistrationRequest",
    api_key=70,
    valid_versions="0",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("ControllerId", "int32", "0+", about="The ID of the controller to register."),
        Field(
            "IncarnationId",
            "uuid",
            "0+",
            about="The controller incarnation ID, which is unique to each process run.",
        ),
        Field(
            "ZkMigrationReady",
            "bool",
            "0+",
            about="Set if the required configurations for ZK migration are present.",
        ),
        Field(
            "Listeners",
            "[]Listener",
            "0+",
            about="The listeners of this controller.",
            fields=[
                Field("Name", "string", "0+", about="The name of the endpoint."),
                Field("Host", "string", "0+", about="The hostname."),
                Field("Port", "uint16", "0+", about="The port."),
                Field("SecurityProtocol", "int16", "0+", about="The security protocol."),
            ],
        ),
        Field(
            "Features",
            "[]Feature",
            "0+",
            about="The features on this controller.",
            fields=[
                Field("Name", "string", "0+", about="The feature name."),
                Field(
                    "MinSupportedVersion",
                    "int16",
                    "0+",
                    about="The minimum supported feature level.",
                ),
                Field(
                    "MaxSupportedVersion",
                    "int16",
                    "0+",
                    about="The maximum supported feature level.",
                ),
            ],
        ),
    ],
)

ControllerRegistrationResponse = Message(
    "ControllerRegistrationResponse",
    api_key=70,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "ThrottleTimeMs",
            "int32",
            "0+",
            about="The quota throttle time in ms, or zero.",
        ),
        Field("ErrorCode", "int16", "0+", about="The response error code."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            about="The response error message, or null if there was no error.",
        ),
    ],
)
