"""AlterConfigs (API key 33) and IncrementalAlterConfigs (API key 44): change configs live.

A topic's configuration is its broker's defaults with the topic's *overrides* on top
(DescribeConfigs, key 32, shows both). These two requests change the overrides of topics
(resource type 2) while their logs are open; the new values apply to every replica of the
topic without a restart. On resource type 4 (BROKER) they change a broker's dynamic configs
(KIP-226): named by a broker id that broker's own layer, named "" the cluster's default.

* **AlterConfigs** (KIP-133) *replaces* the whole set of a resource's overrides with the
  one in the request: a key missing from the request loses its override. Tools therefore
  read-modify-write, which races with another tool doing the same.
* **IncrementalAlterConfigs** (KIP-339) changes only the keys it names, each with an
  operation: 0 SET, 1 DELETE (back to the default), 2 APPEND and 3 SUBTRACT (for list
  configs such as `cleanup.policy`). This is what `kafka-configs.sh --alter` and the
  clients' `incremental_alter_configs` send.

`validate_only` checks without changing anything. The answer has, per resource, an error
code and message (INVALID_CONFIG for an unknown key or a bad value, UNKNOWN_TOPIC_OR_PARTITION,
INVALID_REQUEST for an unsupported resource type or operation, and for a broker config that
may not change while the broker runs).

Version history (Kafka's JSON comments): AlterConfigs v1 = v0, v2 flexible;
IncrementalAlterConfigs v1 flexible. kafka-ref declares AlterConfigs 0-2 and
IncrementalAlterConfigs 0-1.

Kafka's definitions: AlterConfigsRequest.json, AlterConfigsResponse.json,
IncrementalAlterConfigsRequest.json, IncrementalAlterConfigsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message


def _request(name: str, api_key: int, versions: str, flexible: str, incremental: bool) -> Message:
    operation = (
        [Field("ConfigOperation", "int8", "0+", about="0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.")]
        if incremental
        else []
    )
    return Message(
        name,
        api_key=api_key,
        listeners=("broker", "controller"),
        valid_versions=versions,
        flexible_versions=flexible,
        fields=[
            Field(
                "Resources",
                "[]AlterConfigsResource",
                "0+",
                about="The updates for each resource.",
                fields=[
                    Field("ResourceType", "int8", "0+", about="The resource type."),
                    Field("ResourceName", "string", "0+", about="The resource name."),
                    Field(
                        "Configs",
                        "[]AlterableConfig",
                        "0+",
                        about="The configurations.",
                        fields=[
                            Field("Name", "string", "0+", about="The configuration key name."),
                            *operation,
                            Field(
                                "Value",
                                "string",
                                "0+",
                                nullable_versions="0+",
                                about="The value to set for the configuration key.",
                            ),
                        ],
                    ),
                ],
            ),
            Field("ValidateOnly", "bool", "0+", about="Validate only: change nothing."),
        ],
    )


def _response(name: str, api_key: int, versions: str, flexible: str) -> Message:
    return Message(
        name,
        api_key=api_key,
        valid_versions=versions,
        flexible_versions=flexible,
        fields=[
            Field("ThrottleTimeMs", "int32", "0+", default=0, about="Throttle time, or zero."),
            Field(
                "Responses",
                "[]AlterConfigsResourceResponse",
                "0+",
                about="The responses for each resource.",
                fields=[
                    Field("ErrorCode", "int16", "0+", about="The resource error code."),
                    Field(
                        "ErrorMessage",
                        "string",
                        "0+",
                        nullable_versions="0+",
                        default=None,
                        about="The resource error message, or null if there was no error.",
                    ),
                    Field("ResourceType", "int8", "0+", about="The resource type."),
                    Field("ResourceName", "string", "0+", about="The resource name."),
                ],
            ),
        ],
    )


AlterConfigsRequest = _request("AlterConfigsRequest", 33, "0-2", "2+", incremental=False)
AlterConfigsResponse = _response("AlterConfigsResponse", 33, "0-2", "2+")
IncrementalAlterConfigsRequest = _request(
    "IncrementalAlterConfigsRequest", 44, "0-1", "1+", incremental=True
)
IncrementalAlterConfigsResponse = _response("IncrementalAlterConfigsResponse", 44, "0-1", "1+")
