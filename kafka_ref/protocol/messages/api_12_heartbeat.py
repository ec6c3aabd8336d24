"""Heartbeat (API key 12): a member tells its coordinator that it is alive.

Each member of a group sends a Heartbeat every `heartbeat.interval.ms` (a third of the
session timeout by default). A member the coordinator has not heard from for
`session.timeout.ms` is removed and the group rebalances. The answer is also the channel the
coordinator uses to tell a member that a rebalance has started: REBALANCE_IN_PROGRESS
means "send JoinGroup again".

Errors: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS
(14), INVALID_GROUP_ID (24), UNKNOWN_MEMBER_ID (25), ILLEGAL_GENERATION (22),
REBALANCE_IN_PROGRESS (27), FENCED_INSTANCE_ID (82, v3+).

Version history (Kafka's JSON comments): v1 throttle time; v2 = v1 (throttle before
response); v3 `group_instance_id` (KIP-345); v4 flexible. kafka-ref declares 0-4, as
Kafka 4.4 (v4 only changes the encoding, REBAL-26).

Kafka's definitions: HeartbeatRequest.json, HeartbeatResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

HeartbeatRequest = Message(
    "HeartbeatRequest",
    api_key=12,
    valid_versions="0-4",
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
    ],
)

HeartbeatResponse = Message(
    "HeartbeatResponse",
    api_key=12,
    valid_versions="0-4",
    flexible_versions="4+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
    ],
)
