"""LeaveGroup (API key 13): a member leaves its group at once.

A consumer that closes cleanly sends LeaveGroup, so the group rebalances right away instead
of waiting a whole session timeout for the member to be declared dead. Its partitions go to
the remaining members in the next generation.

Errors: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS
(14), INVALID_GROUP_ID (24), UNKNOWN_MEMBER_ID (25); from v3 also per member, with
FENCED_INSTANCE_ID (82).

Version history (Kafka's JSON comments): v1 throttle time; v2 = v1 (throttle before
response); v3 a batch of members, each by member id and `group_instance_id` (KIP-345: an
admin can remove static members); v4 flexible; v5 a `reason` per member (KIP-800).
kafka-ref declares 0-5, as Kafka 4.4: from v3 a batch of members, each answered alone
(REBAL-22); v5's reason is logged (REBAL-20).

Kafka's definitions: LeaveGroupRequest.json, LeaveGroupResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

LeaveGroupRequest = Message(
    "LeaveGroupRequest",
    api_key=13,
    valid_versions="0-5",
    flexible_versions="4+",
    fields=[
        Field("GroupId", "string", "0+", about="The id of the group to leave."),
        Field("MemberId", "string", "0-2", about="The member id to remove (v0-v2)."),
        Field(
            "Members",
            "[]MemberIdentity",
            "3+",
            about="The members leaving (v3+).",
            fields=[
                Field("MemberId", "string", "3+", about="The member id to remove."),
                Field(
                    "GroupInstanceId",
                    "string",
                    "3+",
                    nullable_versions="3+",
                    default=None,
                    about="The group.instance.id to remove, or null.",
                ),
                Field(
                    "Reason",
                    "string",
                    "5+",
                    nullable_versions="5+",
                    default=None,
                    about="Why the member left (KIP-800).",
                ),
            ],
        ),
    ],
)

LeaveGroupResponse = Message(
    "LeaveGroupResponse",
    api_key=13,
    valid_versions="0-5",
    flexible_versions="4+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field(
            "Members",
            "[]MemberResponse",
            "3+",
            about="The result per leaving member (v3+).",
            fields=[
                Field("MemberId", "string", "3+", about="The member id."),
                Field(
                    "GroupInstanceId",
                    "string",
                    "3+",
                    nullable_versions="3+",
                    about="The group.instance.id, or null.",
                ),
                Field("ErrorCode", "int16", "3+", about="The error code, or 0."),
            ],
        ),
    ],
)
