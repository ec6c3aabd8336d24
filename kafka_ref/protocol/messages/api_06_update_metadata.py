"""UpdateMetadata (API key 6): the controller gives every broker the partition states it
answers Metadata with (ZooKeeper mode). Brokers send it; clients never do.

Each broker answers Metadata from its metadata cache (Kafka: `ZkMetadataCache`), and in
ZooKeeper mode the controller fills it: after every decision it sends UpdateMetadata with
the new states to every live broker, and a broker that registers gets the states of every
partition at once (CTRL-21). A partition state is the leader, leader epoch, ISR, state
znode version, replicas and the replicas on brokers that are not live; the request also
lists the live brokers with their endpoints. The controller epoch and broker epoch are
checked as in LeaderAndIsr (CTRL-19, CTRL-20), and a partition state older than the one in
the cache (lower leader epoch) is ignored (CTRL-5, CTRL-12).

Version history (Kafka's JSON comments): v1 lists several endpoints per broker; v2 adds the
rack; v3 the listener name; v4 the offline replicas; v5 the broker epoch and groups the
partitions by topic; v6 is the first flexible version; v7 adds topic ids (KIP-516); v8 the
KRaft controller flag (KIP-866). kafka-ref declares and sends v6.

Kafka's definitions: UpdateMetadataRequest.json, UpdateMetadataResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

UpdateMetadataRequest = Message(
    "UpdateMetadataRequest",
    api_key=6,
    valid_versions="6",
    flexible_versions="6+",
    fields=[
        Field("ControllerId", "int32", "0+", about="The controller id."),
        Field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
        Field("BrokerEpoch", "int64", "5+", default=-1, about="The broker epoch."),
        Field(
            "TopicStates",
            "[]UpdateMetadataTopicState",
            "5+",
            about="Each topic that we would like to update.",
            fields=[
                Field("TopicName", "string", "5+", about="The topic name."),
                Field(
                    "PartitionStates",
                    "[]UpdateMetadataPartitionState",
                    "5+",
                    about="The partitions that we would like to update.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
                        Field("Leader", "int32", "0+", about="The partition leader's ID."),
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                        Field("Isr", "[]int32", "0+", about="The in-sync replica IDs."),
                        Field("ZkVersion", "int32", "0+", about="The ZooKeeper version."),
                        Field("Replicas", "[]int32", "0+", about="All the replicas."),
                        Field("OfflineReplicas", "[]int32", "4+", about="The offline replicas."),
                    ],
                ),
            ],
        ),
        Field(
            "LiveBrokers",
            "[]UpdateMetadataBroker",
            "0+",
            about="The live brokers.",
            fields=[
                Field("Id", "int32", "0+", about="The broker id."),
                Field(
                    "Endpoints",
                    "[]UpdateMetadataEndpoint",
                    "1+",
                    about="The broker endpoints.",
                    fields=[
                        Field("Port", "int32", "1+", about="The port of this endpoint."),
                        Field("Host", "string", "1+", about="The hostname of this endpoint."),
                        Field("Listener", "string", "3+", about="The listener name."),
                        Field("SecurityProtocol", "int16", "1+", about="The security protocol."),
                    ],
                ),
                Field(
                    "Rack",
                    "string",
                    "2+",
                    nullable_versions="0+",
                    default=None,
                    about="The rack which this broker belongs to.",
                ),
            ],
        ),
    ],
)

UpdateMetadataResponse = Message(
    "UpdateMetadataResponse",
    api_key=6,
    valid_versions="6",
    flexible_versions="6+",
    fields=[Field("ErrorCode", "int16", "0+", about="The error code, or 0 if none.")],
)
