"""AlterClientQuotas (API key 49): set or remove quotas on entities (KIP-546).

Each entry names a quota entity (a list of (type, name), `user` and/or `client-id`, a null
name for the default) and operations: set `key` to `value`, or remove `key`. The keys are
`producer_byte_rate`, `consumer_byte_rate` and `request_percentage`. Each entry gets its
own error: INVALID_REQUEST for an unknown entity type or key, or a value that is not
positive (or not whole, for a byte rate). `validate_only` checks and changes nothing.

Version history (Kafka's JSON comments): v1 flexible. kafka-ref declares 0-1.

Kafka's definitions: AlterClientQuotasRequest.json, AlterClientQuotasResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message


def _entity(about: str) -> Field:
    return Field(
        "Entity",
        "[]EntityData",
        "0+",
        about=about,
        fields=[
            Field("EntityType", "string", "0+", about="The entity type."),
            Field(
                "EntityName",
                "string",
                "0+",
                nullable_versions="0+",
                about="The name of the entity, or null if the default.",
            ),
        ],
    )


AlterClientQuotasRequest = Message(
    "AlterClientQuotasRequest",
    api_key=49,
    listeners=("broker", "controller"),
    valid_versions="0-1",
    flexible_versions="1+",
    fields=[
        Field(
            "Entries",
            "[]EntryData",
            "0+",
            about="The quota configuration entries to alter.",
            fields=[
                _entity("The quota entity to alter."),
                Field(
                    "Ops",
                    "[]OpData",
                    "0+",
                    about="An individual quota configuration entry to alter.",
                    fields=[
                        Field("Key", "string", "0+", about="The quota configuration key."),
                        Field("Value", "float64", "0+", about="The value to set."),
                        Field("Remove", "bool", "0+", about="Remove the key, otherwise set."),
                    ],
                ),
            ],
        ),
        Field("ValidateOnly", "bool", "0+", about="Validate only: change nothing."),
    ],
)

AlterClientQuotasResponse = Message(
    "AlterClientQuotasResponse",
    api_key=49,
    valid_versions="0-1",
    flexible_versions="1+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Entries",
            "[]EntryData",
            "0+",
            about="The result per entry.",
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
                _entity("The quota entity altered."),
            ],
        ),
    ],
)
