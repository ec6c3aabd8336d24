"""BrokerHeartbeat (API key 63, KIP-631): a registered broker says it is alive.

A KRaft broker sends a heartbeat to the active controller every
`broker.heartbeat.interval.ms` with its broker epoch and the metadata offset it has
reached. The controller answers whether the broker has caught up (IsCaughtUp), whether it is
fenced (IsFenced: a fenced broker leads no partition) and whether it may finish a controlled
shutdown (ShouldShutDown). A broker whose heartbeats stop for `broker.session.timeout.ms` is
fenced: the session that ZooKeeper's ephemeral znode used to be.

Version history (Kafka's JSON comments): v0 flexible; v1 adds the tagged OfflineLogDirs
(KIP-858); v2 the tagged CordonedLogDirs. The response is the same at every version.

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: BrokerHeartbeatRequest.json, BrokerHeartbeatResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

BrokerHeartbeatRequest = Message(
    "BrokerHeartbeatRequest",
    api_key=63,
    valid_versions="0-2",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("BrokerId", "int32", "0+", about="The broker ID."),
        Field("BrokerEpoch", "int64", "0+", default=-1, about="The broker epoch."),
        Field(
            "CurrentMetadataOffset",
            "int64",
            "0+",
            about="The highest metadata offset which the broker has reached.",
        ),
        Field(
            "WantFence",
            "bool",
            "0+",
            about="True if the broker wants to be fenced, false otherwise.",
        ),
        Field(
            "WantShutDown",
            "bool",
            "0+",
            about="True if the broker wants to be shut down, false otherwise.",
        ),
        Field(
            "OfflineLogDirs",
            "[]uuid",
            "1+",
            tagged_versions="1+",
            tag=0,
            about="Log directories that failed and went offline.",
        ),
        Field(
            "CordonedLogDirs",
            "[]uuid",
            "2+",
            nullable_versions="2+",
            default=None,
            tagged_versions="2+",
            tag=1,
            about="The cordoned log directories; null before RECOVERY.",
        ),
    ],
)

BrokerHeartbeatResponse = Message(
    "BrokerHeartbeatResponse",
    api_key=63,
    valid_versions="0-2",
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
            "IsCaughtUp",
            "bool",
            "0+",
            default=False,
            about="True if the broker has approximately caught up with the latest metadata.",
        ),
        Field("IsFenced", "bool", "0+", default=True, about="True if the broker is fenced."),
        Field(
            "ShouldShutDown",
            "bool",
            "0+",
            about="True if the broker should proceed with its shutdown.",
        ),
    ],
)
