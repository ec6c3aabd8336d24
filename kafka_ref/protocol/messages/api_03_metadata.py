"""Metadata (API key 3): who is in the cluster, and who leads each partition.

A client knows one or two "bootstrap" addresses. Its first real request is Metadata, which
returns every broker (`node_id`, `host`, `port`, `rack`), the `controller_id`, and for each
requested topic its partitions with `leader_id`, `replica_nodes` and `isr_nodes`. From then on
the client sends produce and fetch requests straight to each partition's leader, and asks
again whenever it gets NOT_LEADER_OR_FOLLOWER or a connection breaks. `host`/`port` must be
addresses the *client* can reach (Kafka's advertised listeners).

Which topics: in v0 an empty `topics` array means "all topics"; from v1 on `topics` is
nullable, null means all and an empty array means none. From v4 the client says whether a
request for an unknown topic may create it (`allow_auto_topic_creation`, honoured only if the
broker's `auto.create.topics.enable` is on). While a new topic's leaders are being elected the
answer is LEADER_NOT_AVAILABLE (5), which clients retry.

Admin clients send CreateTopics and DeleteTopics to the controller, so `controller_id` (v1+)
must name a real broker (KafkaJS and kafka-python wait or fail on -1).

Version history (Kafka's JSON comments): v1 rack, controller id, is_internal, nullable topics;
v2 cluster_id; v3 throttle time; v4 allow_auto_topic_creation; v5 offline_replicas; v6 throttle
before response; v7 leader_epoch; v8 authorized operations; v9 flexible; v10 topic ids; v11
drops cluster authorized operations; v12 topic ids in requests; v13 top-level error code.
kafka-ref declares 0-13, all of Kafka 4.4's. v6 changes nothing on the wire; v7's
`leader_epoch` is what a client needs for KIP-320: librdkafka then sends its Fetch
`current_leader_epoch` and checks its position with OffsetForLeaderEpoch (key 23) after a
leader change. The epochs a broker reports never go backwards (CTRL-12). v8's authorized
operations come from the ACLs (BROKER-62); v10's topic ids and v12's lookups by id, BROKER-63.

Kafka's definitions: MetadataRequest.json, MetadataResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

MetadataRequest = Message(
    "MetadataRequest",
    api_key=3,
    valid_versions="0-13",
    flexible_versions="9+",
    fields=[
        Field(
            "Topics",
            "[]MetadataRequestTopic",
            "0+",
            nullable_versions="1+",
            about="The topics to fetch metadata for (v0: empty = all; v1+: null = all).",
            fields=[
                Field("TopicId", "uuid", "10+", about="The topic id."),
                Field(
                    "Name",
                    "string",
                    "0+",
                    nullable_versions="10+",
                    about="The topic name.",
                ),
            ],
        ),
        Field(
            "AllowAutoTopicCreation",
            "bool",
            "4+",
            default=True,
            about="Whether the broker may auto-create requested topics that do not exist.",
        ),
        Field(
            "IncludeClusterAuthorizedOperations",
            "bool",
            "8-10",
            about="Whether to include cluster authorized operations.",
        ),
        Field(
            "IncludeTopicAuthorizedOperations",
            "bool",
            "8+",
            about="Whether to include topic authorized operations.",
        ),
    ],
)

MetadataResponse = Message(
    "MetadataResponse",
    api_key=3,
    valid_versions="0-13",
    flexible_versions="9+",
    fields=[
        Field("ThrottleTimeMs", "int32", "3+", about="The quota throttle time in ms, or zero."),
        Field(
            "Brokers",
            "[]MetadataResponseBroker",
            "0+",
            about="A list of brokers present in the cluster.",
            fields=[
                Field("NodeId", "int32", "0+", about="The broker ID."),
                Field("Host", "string", "0+", about="The broker hostname."),
                Field("Port", "int32", "0+", about="The broker port."),
                Field(
                    "Rack",
                    "string",
                    "1+",
                    nullable_versions="1+",
                    default=None,
                    about="The rack of the broker, or null if it has not been assigned to a rack.",
                ),
            ],
        ),
        Field(
            "ClusterId",
            "string",
            "2+",
            nullable_versions="2+",
            default=None,
            about="The cluster ID that responding broker belongs to.",
        ),
        Field("ControllerId", "int32", "1+", default=-1, about="The ID of the controller broker."),
        Field(
            "Topics",
            "[]MetadataResponseTopic",
            "0+",
            about="Each topic in the response.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The topic error, or 0."),
                Field(
                    "Name",
                    "string",
                    "0+",
                    nullable_versions="12+",
                    about="The topic name (null for unknown topics queried by id).",
                ),
                Field("TopicId", "uuid", "10+", about="The topic id."),
                Field("IsInternal", "bool", "1+", default=False, about="True if internal."),
                Field(
                    "Partitions",
                    "[]MetadataResponsePartition",
                    "0+",
                    about="Each partition in the topic.",
                    fields=[
                        Field("ErrorCode", "int16", "0+", about="The partition error, or 0."),
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("LeaderId", "int32", "0+", about="The ID of the leader broker."),
                        Field(
                            "LeaderEpoch",
                            "int32",
                            "7+",
                            default=-1,
                            about="The leader epoch of this partition.",
                        ),
                        Field(
                            "ReplicaNodes",
                            "[]int32",
                            "0+",
                            about="The set of all nodes that host this partition.",
                        ),
                        Field(
                            "IsrNodes",
                            "[]int32",
                            "0+",
                            about="The nodes that are in sync with the leader.",
                        ),
                        Field(
                            "OfflineReplicas",
                            "[]int32",
                            "5+",
                            about="The set of offline replicas of this partition.",
                        ),
                    ],
                ),
                Field(
                    "TopicAuthorizedOperations",
                    "int32",
                    "8+",
                    default=-2147483648,
                    about="32-bit bitfield of the operations authorized on this topic.",
                ),
            ],
        ),
        Field(
            "ClusterAuthorizedOperations",
            "int32",
            "8-10",
            default=-2147483648,
            about="32-bit bitfield of the operations authorized on this cluster.",
        ),
        Field("ErrorCode", "int16", "13+", about="The top-level error code, or 0."),
    ],
)
