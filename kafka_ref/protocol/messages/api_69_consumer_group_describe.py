"""ConsumerGroupDescribe (API key 69): a consumer group of the KIP-848 protocol, described.

DescribeGroups describes a classic group: its generation, its protocol and each member's
opaque metadata and assignment bytes. A group of the consumer protocol has none of these;
it has a group epoch, a target assignment and its epoch, the server-side assignor, and per
member its epoch, its subscription (names or a regex) and two assignments: the partitions
it owns now and the ones it is moving towards. ConsumerGroupDescribe answers these, with
topic ids and names. `kafka-consumer-groups.sh --describe` (the Java admin client's
`describeConsumerGroups`) asks it first and falls back to DescribeGroups for a classic group
(GROUP_ID_NOT_FOUND here).

Errors: per group GROUP_AUTHORIZATION_FAILED (30), NOT_COORDINATOR (16),
COORDINATOR_NOT_AVAILABLE (15), COORDINATOR_LOAD_IN_PROGRESS (14), INVALID_GROUP_ID (24),
GROUP_ID_NOT_FOUND (69) for an unknown group or one of the classic protocol.

Version history (Kafka's JSON comments): v0 the first version (KIP-848); v1 each member's
`MemberType` (KIP-1099: -1 unknown, 0 classic, 1 consumer). kafka-ref declares 0-1, as
Kafka 4.4 (CGRP-1).

Kafka's definitions: ConsumerGroupDescribeRequest.json, ConsumerGroupDescribeResponse.json.
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

ConsumerGroupDescribeRequest = Message(
    "ConsumerGroupDescribeRequest",
    api_key=69,
    valid_versions="0-1",
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

ConsumerGroupDescribeResponse = Message(
    "ConsumerGroupDescribeResponse",
    api_key=69,
    valid_versions="0-1",
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
                            "InstanceId",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The instance id, or null.",
                        ),
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
                            "SubscribedTopicRegex",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The subscribed regex, or null.",
                        ),
                        Field(
                            "Assignment",
                            "Assignment",
                            "0+",
                            about="The current assignment.",
                            fields=ASSIGNMENT,
                        ),
                        Field(
                            "TargetAssignment",
                            "Assignment",
                            "0+",
                            about="The target assignment.",
                            fields=ASSIGNMENT,
                        ),
                        Field(
                            "MemberType",
                            "int8",
                            "1+",
                            default=-1,
                            about="-1 unknown, 0 classic, 1 consumer (v1+).",
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
