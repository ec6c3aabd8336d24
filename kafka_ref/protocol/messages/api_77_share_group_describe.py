"""ShareGroupDescribe (API key 77): a share group (KIP-932), described.

A share group has what a KIP-848 consumer group has, less what its simpler protocol does
without: a group epoch, the target assignment's epoch, the assignor (`simple`), and per
member its epoch, its subscribed topic names and its assignment. There is no instance id
(no static membership), no regex and no target per member: a member's assignment is its
target, for nothing has to be revoked first. `kafka-share-groups.sh --describe` (the Java
admin client's `describeShareGroups`) asks it.

Errors: per group GROUP_AUTHORIZATION_FAILED (30), TOPIC_AUTHORIZATION_FAILED (29),
NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS (14),
INVALID_GROUP_ID (24), GROUP_ID_NOT_FOUND (69) for an unknown group or one of another
type, INVALID_REQUEST (42).

Version history (Kafka's JSON comments): v0 was the early access of Kafka 4.0, removed in
4.1; v1 is the first stable version (KIP-932). kafka-ref declares 1, as Kafka 4.4.

Kafka's definitions: ShareGroupDescribeRequest.json, ShareGroupDescribeResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message, StructSchema

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # Kafka: Integer.MIN_VALUE

TOPIC_PARTITIONS = StructSchema(
    "TopicPartitions",
    [
        Field("TopicId", "uuid", "0+", about="The topic id."),
        Field("TopicName", "string", "0+", about="The topic name."),
        Field("Partitions", "[]int32", "0+", about="The partitions."),
    ],
)
ASSIGNMENT = StructSchema(
    "Assignment",
    [
        Field(
            "TopicPartitions",
            "[]TopicPartitions",
            "0+",
            about="The assigned partitions.",
            fields=TOPIC_PARTITIONS,
        )
    ],
)

ShareGroupDescribeRequest = Message(
    "ShareGroupDescribeRequest",
    api_key=77,
    valid_versions="1",
    flexible_versions="0+",
    fields=[
        Field("GroupIds", "[]string", "0+", about="The groups to describe."),
        Field(
            "IncludeAuthorizedOperations",
            "bool",
            "0+",
            about="Whether to include the authorized operations.",
        ),
    ],
)

ShareGroupDescribeResponse = Message(
    "ShareGroupDescribeResponse",
    api_key=77,
    valid_versions="1",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Groups",
            "[]DescribedGroup",
            "0+",
            about="Each group.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    default=None,
                    about="The error message, or null.",
                ),
                Field("GroupId", "string", "0+", about="The group id."),
                Field("GroupState", "string", "0+", about="The group state, or ''."),
                Field("GroupEpoch", "int32", "0+", about="The group epoch."),
                Field("AssignmentEpoch", "int32", "0+", about="The target assignment's epoch."),
                Field("AssignorName", "string", "0+", about="The assignor in use."),
                Field(
                    "Members",
                    "[]Member",
                    "0+",
                    about="The members.",
                    fields=[
                        Field("MemberId", "string", "0+", about="The member id."),
                        Field(
                            "RackId",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The rack id, or null.",
                        ),
                        Field("MemberEpoch", "int32", "0+", about="The member epoch."),
                        Field("ClientId", "string", "0+", about="The client id."),
                        Field("ClientHost", "string", "0+", about="The client host."),
                        Field(
                            "SubscribedTopicNames",
                            "[]string",
                            "0+",
                            about="The subscribed topic names.",
                        ),
                        Field(
                            "Assignment",
                            "Assignment",
                            "0+",
                            about="The current assignment.",
                            fields=ASSIGNMENT,
                        ),
                    ],
                ),
                Field(
                    "AuthorizedOperations",
                    "int32",
                    "0+",
                    default=AUTHORIZED_OPERATIONS_OMITTED,
                    about="The authorized operations bit field.",
                ),
            ],
        ),
    ],
)
