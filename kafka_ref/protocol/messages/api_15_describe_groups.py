"""DescribeGroups (API key 15): the state, protocol and members of groups.

Admin tools ask a group's coordinator what the group looks like: its state ("Empty",
"PreparingRebalance", "CompletingRebalance", "Stable", "Dead"), its protocol type
("consumer") and chosen protocol ("range"), and per member its id, client id, client host
and, while the group is Stable, its metadata and assignment bytes. `kafka-consumer-groups.sh
--describe --members` and every admin client's `describe_consumer_groups` use it.

An unknown group is not an error before v6: it is described as state "Dead" with no
members (v6 answers GROUP_ID_NOT_FOUND, KIP-1043).

Errors, per group: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16),
COORDINATOR_LOAD_IN_PROGRESS (14), INVALID_GROUP_ID (24), GROUP_AUTHORIZATION_FAILED (30),
GROUP_ID_NOT_FOUND (69, v6+).

Version history (Kafka's JSON comments): v1 throttle time; v2 = v1 (throttle before
response); v3 authorized operations; v4 group instance ids of members; v5 flexible; v6
GROUP_ID_NOT_FOUND and an error message. kafka-ref declares 0-6, as Kafka
4.4 (REBAL-23): v3's authorized operations, every one a group supports without an
authorizer; v4's instance ids; v6's GROUP_ID_NOT_FOUND.

Kafka's definitions: DescribeGroupsRequest.json, DescribeGroupsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeGroupsRequest = Message(
    "DescribeGroupsRequest",
    api_key=15,
    valid_versions="0-6",
    flexible_versions="5+",
    fields=[
        Field("Groups", "[]string", "0+", about="The ids of the groups to describe."),
        Field(
            "IncludeAuthorizedOperations",
            "bool",
            "3+",
            about="Whether to include the authorized operations (v3+).",
        ),
    ],
)

DescribeGroupsResponse = Message(
    "DescribeGroupsResponse",
    api_key=15,
    valid_versions="0-6",
    flexible_versions="5+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field(
            "Groups",
            "[]DescribedGroup",
            "0+",
            about="Each described group.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "6+",
                    nullable_versions="6+",
                    default=None,
                    about="The error message, or null (v6+).",
                ),
                Field("GroupId", "string", "0+", about="The group id."),
                Field("GroupState", "string", "0+", about="The group state, e.g. 'Stable'."),
                Field("ProtocolType", "string", "0+", about="The protocol type, or ''."),
                Field(
                    "ProtocolData",
                    "string",
                    "0+",
                    about="The chosen protocol (only while Stable), or ''.",
                ),
                Field(
                    "Members",
                    "[]DescribedGroupMember",
                    "0+",
                    about="The group's members (none when Dead).",
                    fields=[
                        Field("MemberId", "string", "0+", about="The member id."),
                        Field(
                            "GroupInstanceId",
                            "string",
                            "4+",
                            nullable_versions="4+",
                            default=None,
                            about="The member's group.instance.id, or null (v4+).",
                        ),
                        Field("ClientId", "string", "0+", about="The client id of its join."),
                        Field("ClientHost", "string", "0+", about="The client's host."),
                        Field(
                            "MemberMetadata",
                            "bytes",
                            "0+",
                            about="Its metadata for the chosen protocol (while Stable).",
                        ),
                        Field(
                            "MemberAssignment",
                            "bytes",
                            "0+",
                            about="Its assignment from the leader (while Stable).",
                        ),
                    ],
                ),
                Field(
                    "AuthorizedOperations",
                    "int32",
                    "3+",
                    default=-2147483648,
                    about="A bitfield of the authorized operations (v3+).",
                ),
            ],
        ),
    ],
)
