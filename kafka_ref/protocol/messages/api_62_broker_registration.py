"""BrokerRegistration (API key 62, KIP-631): a broker joins a KRaft cluster.

In ZooKeeper mode a broker announces itself with an ephemeral znode (`/brokers/ids/N`). In
KRaft mode it sends BrokerRegistration to the active controller: its id, cluster id, an
incarnation id (unique to each process run), its listeners, the features and versions it
supports, and its rack. The controller writes a RegisterBrokerRecord to the metadata log and
answers with the broker's epoch; the broker starts fenced and is unfenced once its heartbeats
show it has caught up with the metadata log (BrokerHeartbeat).

Version history (Kafka's JSON comments): v0 flexible; v1 adds IsMigratingZkBroker (the
ZooKeeper-to-KRaft migration); v2 adds LogDirs (KIP-858); v3 PreviousBrokerEpoch (KIP-966);
v4 lets a feature's minimum supported version be 0.

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: BrokerRegistrationRequest.json, BrokerRegistrationResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

BrokerRegistrationRequest = Message(
    "BrokerRegistrationRequest",
    api_key=62,
    valid_versions="0-4",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("BrokerId", "int32", "0+", about="The broker ID."),
        Field("ClusterId", "string", "0+", about="The cluster id of the broker process."),
        Field("IncarnationId", "uuid", "0+", about="The incarnation id of the broker process."),
        Field(
            "Listeners",
            "[]Listener",
            "0+",
            about="The listeners of this broker.",
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
            about="The features on this broker (v0-3 omit those with minimum 0).",
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
        Field(
            "Rack",
            "string",
            "0+",
            nullable_versions="0+",
            about="The rack which this broker is in.",
        ),
        Field(
            "IsMigratingZkBroker",
            "bool",
            "1+",
            default=False,
            about="Whether the broker is configured for ZK migration.",
        ),
        Field(
            "LogDirs",
            "[]uuid",
            "2+",
            about="Log directories configured in this broker which are available.",
        ),
        Field(
            "PreviousBrokerEpoch",
            "int64",
            "3+",
            default=-1,
            about="The epoch before a clean shutdown.",
        ),
    ],
)

BrokerRegistrationResponse = Message(
    "BrokerRegistrationResponse",
    api_key=62,
    valid_versions="0-4",
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
            "BrokerEpoch",
            "int64",
            "0+",
            default=-1,
            about="The broker's assigned epoch, or -1 if none was assigned.",
        ),
    ],
)
