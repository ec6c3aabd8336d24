"""SyncGroup (API key 14): the leader hands out the assignment; every member receives its own.

The second round of a classic rebalance. After JoinGroup, the leader has run the assignor
on every member's subscription and sends the result: one `assignment` (opaque bytes; for
consumers a `ConsumerProtocolAssignment` listing topic partitions) per member. The other
members send SyncGroup with no assignments. The coordinator stores the assignment with the
group (in `__consumer_offsets`), moves the group to Stable and answers every member with
its own bytes. A member the leader left out gets empty bytes.

Followers that arrive before the leader wait (the request is parked) until the leader's
SyncGroup completes the round, or until a new rebalance cancels it.

Errors: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS
(14), INVALID_GROUP_ID (24), UNKNOWN_MEMBER_ID (25), ILLEGAL_GENERATION (22),
REBALANCE_IN_PROGRESS (27), FENCED_INSTANCE_ID (82, v3+), INCONSISTENT_GROUP_PROTOCOL (23,
v5+ when the protocol type or name disagree with the group's).

Version history (Kafka's JSON comments): v1 throttle time; v2 = v1 (throttle before
response); v3 `group_instance_id` (KIP-345); v4 flexible; v5 protocol type and name in
both directions (KIP-559). kafka-ref declares 0-5, as Kafka 4.4 (REBAL-19).

Kafka's definitions: SyncGroupRequest.json, SyncGroupResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

SyncGroupRequest = Message(
    "SyncGroupRequest",
    api_key=14,
    valid_versions="0-5",
    flexible_versions="4+",
    fields=[
        Field("GroupId", "string", "0+", about="The group id."),
        Field("GenerationId", "int32", "0+", about="The member's generation."),
        Field("MemberId", "string", "0+", about="The member id."),
        Field(
            "GroupInstanceId",
            "string",
            "3+",
            nullable_versions="3+",
            default=None,
            about="The static member's group.instance.id, or null.",
        ),
        Field(
            "ProtocolType",
            "string",
            "5+",
            nullable_versions="5+",
            default=None,
            about="The group's protocol type, checked by the coordinator (v5+).",
        ),
        Field(
            "ProtocolName",
            "string",
            "5+",
            nullable_versions="5+",
            default=None,
            about="The group's protocol name, checked by the coordinator (v5+).",
        ),
        Field(
            "Assignments",
            "[]SyncGroupRequestAssignment",
            "0+",
            about="The leader's assignment per member; empty from followers.",
            fields=[
                Field("MemberId", "string", "0+", about="The member to assign to."),
                Field("Assignment", "bytes", "0+", about="The member's assignment."),
            ],
        ),
    ],
)

SyncGroupResponse = Message(
    "SyncGroupResponse",
    api_key=14,
    valid_versions="0-5",
    flexible_versions="4+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field(
            "ProtocolType",
            "string",
            "5+",
            nullable_versions="5+",
            default=None,
            about="The group's protocol type (v5+).",
        ),
        Field(
            "ProtocolName",
            "string",
            "5+",
            nullable_versions="5+",
            default=None,
            about="The group's protocol name (v5+).",
        ),
        Field("Assignment", "bytes", "0+", about="This member's assignment."),
    ],
)
