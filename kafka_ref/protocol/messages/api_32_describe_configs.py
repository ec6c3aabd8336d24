"""DescribeConfigs (API key 32): read the configuration of topics and brokers (KIP-133).

Kafka's behaviour is set by configuration at several levels: broker defaults from
`server.properties`, cluster-wide dynamic broker configs, per-broker dynamic configs, and
per-topic overrides (`retention.ms`, `cleanup.policy`, `max.message.bytes`...). The value that
applies is the most specific one that is set. DescribeConfigs shows, for a *resource*, every
config key with the value in force and where it came from.

A resource is a `resource_type` plus `resource_name`: 2 = TOPIC (name = topic), 4 = BROKER
(name = broker id as a string, or "" for the cluster default), 8 = BROKER_LOGGER. A null
`configuration_keys` asks for all keys. Per config the answer has `value` (null for sensitive
ones like passwords), `read_only`, `is_sensitive` and, from v1, `config_source`:
1 DYNAMIC_TOPIC_CONFIG, 2 DYNAMIC_BROKER_CONFIG, 3 DYNAMIC_DEFAULT_BROKER_CONFIG,
4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG, 6 DYNAMIC_BROKER_LOGGER_CONFIG, plus the
`synonyms` (the same setting at the other levels) when `include_synonyms` is set.

A broker should return the full list including defaults: clients implement
"alter one key" as read-modify-write on top of this answer (AlterConfigs replaces the whole
set), and librdkafka's tests failed against a broker that returned an empty list.

Version history (Kafka's JSON comments): v1 adds include_synonyms, config_source and synonyms,
and drops is_default; v2 = v1 (throttle before response); v3 documentation and config types;
v4 flexible. v0 was removed in Kafka 4.0. kafka-ref declares 1-4, as Kafka 4.4 (BROKER-75).

Kafka's definitions: DescribeConfigsRequest.json, DescribeConfigsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeConfigsRequest = Message(
    "DescribeConfigsRequest",
    api_key=32,
    valid_versions="1-4",
    flexible_versions="4+",
    fields=[
        Field(
            "Resources",
            "[]DescribeConfigsResource",
            "0+",
            about="The resources whose configurations we want to describe.",
            fields=[
                Field("ResourceType", "int8", "0+", about="The resource type."),
                Field("ResourceName", "string", "0+", about="The resource name."),
                Field(
                    "ConfigurationKeys",
                    "[]string",
                    "0+",
                    nullable_versions="0+",
                    about="The configuration keys to list, or null to list all of them.",
                ),
            ],
        ),
        Field("IncludeSynonyms", "bool", "1+", default=False, about="Include all synonyms."),
        Field(
            "IncludeDocumentation",
            "bool",
            "3+",
            default=False,
            about="Include configuration documentation.",
        ),
    ],
)

DescribeConfigsResponse = Message(
    "DescribeConfigsResponse",
    api_key=32,
    valid_versions="1-4",
    flexible_versions="4+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Results",
            "[]DescribeConfigsResult",
            "0+",
            about="The results for each resource.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    about="The error message, or null if there was no error.",
                ),
                Field("ResourceType", "int8", "0+", about="The resource type."),
                Field("ResourceName", "string", "0+", about="The resource name."),
                Field(
                    "Configs",
                    "[]DescribeConfigsResourceResult",
                    "0+",
                    about="Each listed configuration.",
                    fields=[
                        Field("Name", "string", "0+", about="The configuration name."),
                        Field(
                            "Value",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="The configuration value.",
                        ),
                        Field("ReadOnly", "bool", "0+", about="True if read-only."),
                        Field(
                            "ConfigSource",
                            "int8",
                            "1+",
                            default=-1,
                            about="The configuration source.",
                        ),
                        Field("IsDefault", "bool", "0", about="True if the config is not set."),
                        Field("IsSensitive", "bool", "0+", about="True if sensitive."),
                        Field(
                            "Synonyms",
                            "[]DescribeConfigsSynonym",
                            "1+",
                            about="The synonyms for this configuration key.",
                            fields=[
                                Field("Name", "string", "1+", about="The synonym name."),
                                Field(
                                    "Value",
                                    "string",
                                    "1+",
                                    nullable_versions="0+",
                                    about="The synonym value.",
                                ),
                                Field("Source", "int8", "1+", about="The synonym source."),
                            ],
                        ),
                        Field(
                            "ConfigType",
                            "int8",
                            "3+",
                            default=0,
                            about="The configuration data type (BOOLEAN, STRING, INT, ...).",
                        ),
                        Field(
                            "Documentation",
                            "string",
                            "3+",
                            nullable_versions="0+",
                            about="The configuration documentation.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)
