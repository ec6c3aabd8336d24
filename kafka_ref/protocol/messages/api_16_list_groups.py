"""ListGroups (API key 16): the groups a broker coordinates.

Each broker lists the groups whose `__consumer_offsets` partition it leads, with their
protocol type ("consumer" for consumer groups, "" for groups that only commit offsets). An
admin client asks every broker and merges the answers (`kafka-consumer-groups.sh --list`).

Errors: COORDINATOR_LOAD_IN_PROGRESS (14) while some partition is still loading (the groups
listed so far are still returned), COORDINATOR_NOT_AVAILABLE (15).

Version history (Kafka's JSON comments): v1 throttle time; v2 = v1 (throttle before
response); v3 flexible; v4 a states filter and each group's state (KIP-518); v5 a types
filter and each group's type (KIP-848). kafka-ref declares 0-5, as Kafka 4.4
(REBAL-24): every group is a "classic" one. kafka-python and aiokafka label their "v2"
class with API version 1; harmless, since v1 = v2.

Kafka's definitions: ListGroupsRequest.json, ListGroupsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ListGroupsRequest = Message(
    "ListGroupsRequest",
    api_key=16,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field(
            "StatesFilter",
            "[]string",
            "4+",
            about="The states of the groups to list; empty lists all (v4+).",
        ),
        Field(
            "TypesFilter",
            "[]string",
            "5+",
            about="The types of the groups to list; empty lists all (v5+).",
        ),
    ],
)

ListGroupsResponse = Message(
    "ListGroupsResponse",
    api_key=16,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field(
            "Groups",
            "[]ListedGroup",
            "0+",
            about="Each group.",
            fields=[
                Field("GroupId", "string", "0+", about="The group id."),
                Field("ProtocolType", "string", "0+", about="The protocol type, or ''."),
                Field("GroupState", "string", "4+", about="The group state (v4+)."),
                Field("GroupType", "string", "5+", about="The group type (v5+)."),
            ],
        ),
    ],
)
