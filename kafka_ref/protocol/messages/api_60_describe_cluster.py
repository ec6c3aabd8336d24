"""DescribeCluster (API key 60): the cluster id, the controller and the brokers (KIP-700).

Admin clients used to learn the cluster from a Metadata request for no topics. KIP-700 gave
them their own request, which the admin clients of Kafka 2.8+ and librdkafka
(`describe_cluster`) send: it answers the cluster id, the controller id and every live
broker with its advertised endpoint and rack, and, when asked, the operations the caller
may perform on the cluster (KIP-430's bitfield of ACL operation codes, as the authorizer
answers; -2147483648 when not asked for; SEC-26).

Version history (Kafka's JSON comments): v0 flexible; v1 adds EndpointType (KIP-919: 1 the
brokers, 2 the controllers of a KRaft quorum); v2 adds IncludeFencedBrokers and IsFenced
(KIP-1073). kafka-ref declares 0-2, as Kafka 4.4 (BROKER-50): it describes brokers only, and
none of them is ever fenced.

Kafka's definitions: DescribeClusterRequest.json, DescribeClusterResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeClusterRequest = Message(
    "DescribeClusterRequest",
    api_key=60,
    valid_versions="0-2",
    flexible_versions="0+",
    listeners=("broker", "controller"),
    fields=[
        Field(
            "IncludeClusterAuthorizedOperations",
            "bool",
            "0+",
            about="Whether to include cluster authorized operations.",
        ),
        Field("EndpointType", "int8", "1+", default=1, about="1=brokers, 2=controllers."),
        Field("IncludeFencedBrokers", "bool", "2+", about="Whether to include fenced brokers."),
    ],
)

DescribeClusterResponse = Message(
    "DescribeClusterResponse",
    api_key=60,
    valid_versions="0-2",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", default=0, about="Throttle time, or zero."),
        Field("ErrorCode", "int16", "0+", about="The top-level error code, or 0."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The top-level error message, or null.",
        ),
        Field("EndpointType", "int8", "1+", default=1, about="1=brokers, 2=controllers."),
        Field("ClusterId", "string", "0+", about="The cluster ID."),
        Field("ControllerId", "int32", "0+", default=-1, about="The ID of the controller."),
        Field(
            "Brokers",
            "[]DescribeClusterBroker",
            "0+",
            about="Each broker in the response.",
            fields=[
                Field("BrokerId", "int32", "0+", about="The broker ID."),
                Field("Host", "string", "0+", about="The broker hostname."),
                Field("Port", "int32", "0+", about="The broker port."),
                Field(
                    "Rack",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    default=None,
                    about="The rack of the broker, or null.",
                ),
                Field("IsFenced", "bool", "2+", about="Whether the broker is fenced."),
            ],
        ),
        Field(
            "ClusterAuthorizedOperations",
            "int32",
            "0+",
            default=-2147483648,
            about="32-bit bitfield of the operations authorized on the cluster.",
        ),
    ],
)
