"""DescribeConfigs: every config of a topic or the broker, with its value and its source.

Kafka's configuration is layered. A topic's effective `segment.bytes` is the topic's own
override if it has one (source DYNAMIC_TOPIC_CONFIG), else the broker's `log.segment.bytes`
from server.properties (STATIC_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG).
DescribeConfigs (key 32; Kafka: `ConfigHelper.describeConfigs`) shows each layer:

* resource type TOPIC (2): *every* topic config of `TOPIC_CONFIGS` (not only the
  overrides: admin tools read-modify-write the full list) with its effective value, its
  source, `read_only` false, and with `include_synonyms` the whole chain of layers that
  define it, most specific first (BROKER-37);
* resource type BROKER (4), named by this broker's id: every broker config by its broker
  name (`log.segment.bytes`, `num.partitions`, ...), STATIC_BROKER_CONFIG when set in
  server.properties or on the command line, else DEFAULT_CONFIG; they are read-only, since
  kafka-ref has no dynamic broker configs (BROKER-38).

`configuration_keys` (null = all) filters the list. An unknown topic is
UNKNOWN_TOPIC_OR_PARTITION, another broker's id or an unsupported resource type
INVALID_REQUEST, per resource.

Rules: BROKER-37, BROKER-38.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import validate_topic_name
from kafka_ref.config import TOPIC_CONFIGS, LogConfig, broker_name
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import DescribeConfigsResponse
from kafka_ref.server.handlers.authz import Op, Res, require
from kafka_ref.server.kafka_config import PASSWORD_KEYS
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

TOPIC, BROKER = 2, 4  # Kafka's ConfigResource.Type
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5  # ConfigSource

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def config_string(value: Any) -> str | None:
    """A value the way Kafka prints it: true/false, lists comma-separated."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _topic_configs(apis: ApiContext, name: str, keys: set[str] | None, synonyms: bool) -> list:
    validate_topic_name(name)
    meta = apis.controller.topic(name)
    if meta is None:
        raise KafkaError(f"Topic {name} does not exist", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    broker_values = apis.controller.log_defaults.to_properties()
    effective = LogConfig.from_properties(meta.configs, apis.controller.log_defaults)
    values = effective.to_properties()
    overrides = apis.config.overrides
    entries = []
    for config in TOPIC_CONFIGS:
        if keys is not None and config not in keys:
            continue
        chain = []
        if config in meta.configs:
            chain.append(
                Synonym(name=config, value=meta.configs[config], source=DYNAMIC_TOPIC_CONFIG)
            )
        broker_key = broker_name(config)
        if broker_key in overrides:
            chain.append(
                Synonym(
                    name=broker_key,
                    value=config_string(broker_values[config]),
                    source=STATIC_BROKER_CONFIG,
                )
            )
        default = config_string(TOPIC_CONFIGS[config].default)
        chain.append(Synonym(name=broker_key, value=default, source=DEFAULT_CONFIG))
        entries.append(
            Entry(
                name=config,
                value=config_string(values[config]),
                read_only=False,
                config_source=chain[0].source,
                is_default=chain[0].source == DEFAULT_CONFIG,
                is_sensitive=False,
                synonyms=chain if synonyms else [],
            )
        )
    return entries


def _broker_configs(apis: ApiContext, name: str, keys: set[str] | None, synonyms: bool) -> list:
    if name not in ("", str(apis.broker_id)):
        raise KafkaError(
            f"Unexpected broker id, expected {apis.broker_id} or empty string, but received {name}",
            code=ErrorCode.INVALID_REQUEST,
        )
    entries = []
    for config, value, is_default in apis.config.describe():
        if keys is not None and config not in keys:
            continue
        source = DEFAULT_CONFIG if is_default else STATIC_BROKER_CONFIG
        text = config_string(value)
        entries.append(
            Entry(
                name=config,
                value=text,
                read_only=True,
                config_source=source,
                is_default=is_default,
                is_sensitive=config in PASSWORD_KEYS,  # its value is None: never shown
                synonyms=[Synonym(name=config, value=text, source=source)] if synonyms else [],
            )
        )
    return entries


def handle_describe_configs(apis: ApiContext, request: Request) -> Any:
    body = request.body
    synonyms = bool(body.include_synonyms)
    results = []
    for resource in body.resources:
        keys = None if resource.configuration_keys is None else set(resource.configuration_keys)
        result = DescribeConfigsResponse.DescribeConfigsResult(
            error_code=ErrorCode.NO_ERROR,
            error_message=None,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
            configs=[],
        )
        try:
            if resource.resource_type == TOPIC:
                require(apis, request, Op.DESCRIBE_CONFIGS, Res.TOPIC, resource.resource_name)
                result.configs = _topic_configs(apis, resource.resource_name, keys, synonyms)
            elif resource.resource_type == BROKER:
                require(apis, request, Op.DESCRIBE_CONFIGS, Res.CLUSTER)  # SEC-17
                result.configs = _broker_configs(apis, resource.resource_name, keys, synonyms)
            else:
                raise KafkaError(
                    f"Unsupported resource type {resource.resource_type}",
                    code=ErrorCode.INVALID_REQUEST,
                )
        except KafkaError as err:
            result.error_code = err.code
            result.error_message = str(err.args[0]) if err.args else err.code.name
        results.append(result)
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)
