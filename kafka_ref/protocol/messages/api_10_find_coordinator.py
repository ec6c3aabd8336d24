"""FindCoordinator (API key 10): which broker coordinates this group (or transaction)?

Every consumer group has one *group coordinator*: the broker that leads the partition of
`__consumer_offsets` the group id hashes to (`abs(groupId.hashCode) %
offsets.topic.num.partitions`). It keeps the group's membership and stores its committed
offsets in that partition, so that they move with the partition's leadership. A consumer
asks any broker "who coordinates group G?" and then sends JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit and OffsetFetch to the answer. Transactional producers do the
same with `key_type` 1 to find their transaction coordinator (`__transaction_state`).

The first FindCoordinator for a group creates `__consumer_offsets` if it does not exist
yet (Kafka: `KafkaApis.getOrCreateInternalTopic`), and answers COORDINATOR_NOT_AVAILABLE
until the topic's partitions have leaders; clients retry.

Errors: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), INVALID_REQUEST (42, an
unknown key type), GROUP_AUTHORIZATION_FAILED (30), TRANSACTIONAL_ID_AUTHORIZATION_FAILED
(53). With an error, node id is -1, host "" and port -1.

Version history (Kafka's JSON comments): v1 `key_type` in the request, throttle time and
error message in the response; v2 = v1 (throttle before response); v3 flexible; v4 a batch
of keys (`coordinator_keys`, KIP-699) with one result per key; v5 TRANSACTION_ABORTABLE
(KIP-890); v6 share groups (KIP-932). kafka-ref declares 0-6, as
Kafka 4.4 (librdkafka turns on its group coordinator feature only if v0 is advertised,
before 2.11.1): from v4 each key of the batch is answered alone (REBAL-25); key type 2
(a share-partition's key `group:topicId:partition`) answers the leader of its
`__share_group_state` partition, the share coordinator (SHARE-70).

Kafka's definitions: FindCoordinatorRequest.json, FindCoordinatorResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE = 0, 1, 2

FindCoordinatorRequest = Message(
    "FindCoordinatorRequest",
    api_key=10,
    valid_versions="0-6",
    flexible_versions="3+",
    fields=[
        Field("Key", "string", "0-3", about="The coordinator key: a group id or transactional id."),
        Field(
            "KeyType",
            "int8",
            "1+",
            default=0,
            about="The key type: 0 group, 1 transaction, 2 share group.",
        ),
        Field("CoordinatorKeys", "[]string", "4+", about="The coordinator keys (v4+)."),
    ],
)

FindCoordinatorResponse = Message(
    "FindCoordinatorResponse",
    api_key=10,
    valid_versions="0-6",
    flexible_versions="3+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0-3", about="The error code, or 0."),
        Field(
            "ErrorMessage",
            "string",
            "1-3",
            nullable_versions="1-3",
            about="The error message, or null.",
        ),
        Field("NodeId", "int32", "0-3", about="The coordinator's node id, or -1."),
        Field("Host", "string", "0-3", about="The coordinator's host."),
        Field("Port", "int32", "0-3", about="The coordinator's port."),
        Field(
            "Coordinators",
            "[]Coordinator",
            "4+",
            about="One result per requested key (v4+).",
            fields=[
                Field("Key", "string", "4+", about="The coordinator key."),
                Field("NodeId", "int32", "4+", about="The coordinator's node id, or -1."),
                Field("Host", "string", "4+", about="The coordinator's host."),
                Field("Port", "int32", "4+", about="The coordinator's port."),
                Field("ErrorCode", "int16", "4+", about="The error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "4+",
                    nullable_versions="4+",
                    about="The error message, or null.",
                ),
            ],
        ),
    ],
)
