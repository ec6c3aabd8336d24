"""DescribeClientQuotas (API key 48): which quotas are set on which entities (KIP-546).

A quota entity is a list of (entity type, name): `user` and/or `client-id`, a null name
meaning the default (`<default>`). The request filters with *components*, one per entity
type, each matching an exact name (match type 0, with `match`), the default (1), or any
name (2); `strict` keeps only entities with no other entity types than the filter's. The
answer lists every matching entity with its quota keys and values (as float64); an
invalid filter (an unknown entity type, a type named twice) is INVALID_REQUEST for the
whole request.

Version history (Kafka's JSON comments): v1 flexible. kafka-ref declares 0-1.

Kafka's definitions: DescribeClientQuotasRequest.json, DescribeClientQuotasResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeClientQuotasRequest = Message(
    "DescribeClientQuotasRequest",
    api_key=48,
    valid_versions="0-1",
    flexible_versions="1+",
    fields=[
        Field(
            "Components",
            "[]ComponentData",
            "0+",
            about="Filter components to apply to quota entities.",
            fields=[
                Field("EntityType", "string", "0+", about="The entity type filtered on."),
                Field("MatchType", "int8", "0+", about="0 exact name, 1 default, 2 any name."),
                Field(
                    "Match",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    about="The name to match, or null if unused for the match type.",
                ),
            ],
        ),
        Field("Strict", "bool", "0+", about="Exclude entities with other entity types."),
    ],
)

DescribeClientQuotasResponse = Message(
    "DescribeClientQuotasResponse",
    api_key=48,
    valid_versions="0-1",
    flexible_versions="1+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The error message, or null.",
        ),
        Field(
            "Entries",
            "[]EntryData",
            "0+",
            nullable_versions="0+",
            about="A result entry.",
            fields=[
                Field(
                    "Entity",
                    "[]EntityData",
                    "0+",
                    about="The quota entity description.",
                    fields=[
                        Field("EntityType", "string", "0+", about="The entity type."),
                        Field(
                            "EntityName",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="The entity name, or null if the default.",
                        ),
                    ],
                ),
                Field(
                    "Values",
                    "[]ValueData",
                    "0+",
                    about="The quota values for the entity.",
                    fields=[
                        Field("Key", "string", "0+", about="The quota configuration key."),
                        Field("Value", "float64", "0+", about="The quota configuration value."),
                    ],
                ),
            ],
        ),
    ],
)
