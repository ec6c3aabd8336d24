"""JoinGroup (API key 11): a consumer joins a group and takes part in a rebalance.

The classic group protocol splits a group's work in two rounds. In JoinGroup every member
tells the coordinator which *protocols* it supports (for consumers: assignor names such as
"range" or "cooperative-sticky", each with metadata bytes holding the member's
subscription). The coordinator waits until every known member has (re)joined, or the
rebalance timeout passes, picks a protocol all members support, bumps the *generation id*
and answers everyone at once. One member, the *leader*, also receives every member's
metadata, runs the assignor and sends the result with SyncGroup; the others get an empty
member list. So the broker never needs to understand a subscription: the assignor runs in
a client.

A new member sends an empty `member_id`. From v4 the coordinator answers it at once with
MEMBER_ID_REQUIRED and a fresh member id, and the member joins again with it (KIP-394), so a
client that times out and retries does not leave a ghost member behind. From v5 a
`group_instance_id` makes a member *static* (KIP-345): it keeps its place across restarts.

The response waits (the request is parked) until the rebalance completes, which is why
clients send JoinGroup with a long request timeout (rebalance timeout + a margin).

Errors: COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS
(14), INVALID_GROUP_ID (24), INCONSISTENT_GROUP_PROTOCOL (23, no protocol in common or a
different protocol type), UNKNOWN_MEMBER_ID (25), INVALID_SESSION_TIMEOUT (26, outside
`group.min/max.session.timeout.ms`), MEMBER_ID_REQUIRED (79, v4+), GROUP_MAX_SIZE_REACHED
(81), FENCED_INSTANCE_ID (82, v5+).

Version history (Kafka's JSON comments): v1 `rebalance_timeout_ms` (v0 uses the session
timeout for both); v2 throttle time; v3 = v2; v4 the second join with an assigned member id;
v5 `group_instance_id`; v6 flexible; v7 the protocol type in the response (KIP-559); v8 a
`reason`; v9 `skip_assignment`. kafka-ref declares 0-9, as Kafka
4.4: v7's protocol type in the answer (REBAL-19), v8's reason, logged (REBAL-20), v9's
SkipAssignment for a static leader that rejoins a Stable group (REBAL-21).

Kafka's definitions: JoinGroupRequest.json, JoinGroupResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

JoinGroupRequest = Message(
    "JoinGroupRequest",
    api_key=11,
    valid_versions="0-9",
    flexible_versions="6+",
    fields=[
        Field("GroupId", "string", "0+", about="The group id."),
        Field(
            "SessionTimeoutMs",
            "int32",
            "0+",
            about="The member is dead if the coordinator hears no heartbeat for this many ms.",
        ),
        Field(
            "RebalanceTimeoutMs",
            "int32",
            "1+",
            default=-1,
            about="How long the coordinator waits for members to rejoin (v0: the session timeout).",
        ),
        Field("MemberId", "string", "0+", about="The member id, or '' for a new member."),
        Field(
            "GroupInstanceId",
            "string",
            "5+",
            nullable_versions="5+",
            default=None,
            about="The static member's group.instance.id, or null.",
        ),
        Field("ProtocolType", "string", "0+", about="The class of protocols, e.g. 'consumer'."),
        Field(
            "Protocols",
            "[]JoinGroupRequestProtocol",
            "0+",
            about="The protocols the member supports, in order of preference.",
            fields=[
                Field("Name", "string", "0+", about="The protocol name, e.g. 'range'."),
                Field("Metadata", "bytes", "0+", about="The protocol metadata (subscription)."),
            ],
        ),
        Field(
            "Reason",
            "string",
            "8+",
            nullable_versions="8+",
            default=None,
            about="Why the member (re)joins (KIP-800).",
        ),
    ],
)

JoinGroupResponse = Message(
    "JoinGroupResponse",
    api_key=11,
    valid_versions="0-9",
    flexible_versions="6+",
    fields=[
        Field("ThrottleTimeMs", "int32", "2+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field("GenerationId", "int32", "0+", default=-1, about="The new generation id."),
        Field(
            "ProtocolType",
            "string",
            "7+",
            nullable_versions="7+",
            default=None,
            about="The group's protocol type (v7+).",
        ),
        Field(
            "ProtocolName",
            "string",
            "0+",
            nullable_versions="7+",
            about="The protocol the coordinator chose.",
        ),
        Field("Leader", "string", "0+", about="The member id of the group leader."),
        Field(
            "SkipAssignment",
            "bool",
            "9+",
            default=False,
            about="True if the leader must skip running the assignment (v9+).",
        ),
        Field("MemberId", "string", "0+", about="The member id the coordinator assigned."),
        Field(
            "Members",
            "[]JoinGroupResponseMember",
            "0+",
            about="Every member and its metadata: for the leader only.",
            fields=[
                Field("MemberId", "string", "0+", about="The member id."),
                Field(
                    "GroupInstanceId",
                    "string",
                    "5+",
                    nullable_versions="5+",
                    default=None,
                    about="The member's group.instance.id, or null.",
                ),
                Field("Metadata", "bytes", "0+", about="The member's protocol metadata."),
            ],
        ),
    ],
)
