"""DeleteGroups (API key 42): remove empty groups and their committed offsets (KIP-229).

A group that nobody uses any more keeps its committed offsets until they expire
(`offsets.retention.minutes` after the group became empty). An admin can delete it at once:
the coordinator writes tombstones for the group's metadata and every committed offset to
`__consumer_offsets`, so compaction removes them, and forgets the group. Only a group
without members can be deleted.

Errors, per group: NON_EMPTY_GROUP (68), GROUP_ID_NOT_FOUND (69), INVALID_GROUP_ID (24),
COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS (14),
GROUP_AUTHORIZATION_FAILED (30).

Version history (Kafka's JSON comments): v1 = v0 (throttle before response); v2 flexible.
v3 an error message per group, which
Kafka leaves null. kafka-ref declares 0-3, as Kafka 4.4.

Kafka's definitions: DeleteGroupsRequest.json, DeleteGroupsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DeleteGroupsRequest = Message(
    "DeleteGroupsRequest",
    api_key=42,
    valid_versions="0-3",
    flexible_versions="2+",
    fields=[Field("GroupsNames", "[]string", "0+", about="The ids of the groups to delete.")],
)

DeleteGroupsResponse = Message(
    "DeleteGroupsResponse",
    api_key=42,
    valid_versions="0-3",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Results",
            "[]DeletableGroupResult",
            "0+",
            about="The result per group.",
            fields=[
                Field("GroupId", "string", "0+", about="The group id."),
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "3+",
                    nullable_versions="3+",
                    default=None,
                    about="The error message, or null (v3+).",
                ),
            ],
        ),
    ],
)
