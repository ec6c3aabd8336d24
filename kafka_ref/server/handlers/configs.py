"""DescribeConfigs: every config of a topic or the broker, with its value and its source.

Kafka's configuration is layered. A topic's effective `segment.bytes` is the topic's own
override if it has one (source DYNAMIC_TOPIC_CONFIG), else the broker's `log.segment.bytes`
as the broker's layers give it (server/dynamic_config.py): set dynamically for this broker
(DYNAMIC_BROKER_CONFIG) or for the cluster (DYNAMIC_DEFAULT_BROKER_CONFIG), in
server.properties (STATIC_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG).
DescribeConfigs (key 32; Kafka: `ConfigHelper.describeConfigs`) shows each layer:

* resource type TOPIC (2): *every* topic config of `TOPIC_CONFIGS` (not only the
  overrides: admin tools read-modify-write the full list) with its effective value, its
  source, `read_only` false, and with `include_synonyms` the whole chain of layers that
  define it, most specific first (BROKER-37);
* resource type BROKER (4), named by this broker's id: every broker config by its broker
  name (`log.segment.bytes`, `num.partitions`, ...) with the source of the layer in force;
  read-only unless it may change while the broker runs (BROKER-38, CONFIG-4); named ""
  (the cluster-wide default): only the dynamic defaults set for the cluster.

`configuration_keys` (null = all) filters the list. An unknown topic is
UNKNOWN_TOPIC_OR_PARTITION, another broker's id or an unsupported resource type
INVALID_REQUEST, per resource.

Rules: BROKER-37, BROKER-38, CONFIG-4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import validate_topic_name
from kafka_ref.config import TOPIC_CONFIGS, LogConfig, broker_name
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import DescribeConfigsResponse
from kafka_ref.server.broker_configs import PASSWORD_KEYS
from kafka_ref.server.dynamic_config import (
    DEFAULT_CONFIG,
    DYNAMIC_CONFIGS,
    SourcedValue,
)
from kafka_ref.server.handlers.authz import Op, Res, require
from kafka_ref.server.kafka_config import config_string
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

TOPIC, BROKER = 2, 4  # Kafka's ConfigResource.Type
DYNAMIC_TOPIC_CONFIG = 1  # ConfigSource; the broker's layers: dynamic_config.py

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _entry(name: str, value: str | None, chain: list, read_only: bool, synonyms: bool) -> Entry:
    """One config; its source is the first layer of its chain (DEFAULT_CONFIG if none)."""
    source = chain[0].source if chain else DEFAULT_CONFIG
    return Entry(
        name=name,
        value=value,
        read_only=read_only,
        config_source=source,
        is_default=source == DEFAULT_CONFIG,
        is_sensitive=name in PASSWORD_KEYS,  # its value is None: never shown
        synonyms=[Synonym(name=c.name, value=c.value, source=c.source) for c in chain]
        if synonyms
        else [],
    )


def _topic_configs(apis: ApiContext, name: str, keys: set[str] | None, synonyms: bool) -> list:
    validate_topic_name(name)
    meta = apis.controller.topic(name)
    if meta is None:
        raise KafkaError(f"Topic {name} does not exist", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    effective = LogConfig.from_properties(meta.configs, apis.controller.log_defaults)
    values = effective.to_properties()
    entries = []
    for config in TOPIC_CONFIGS:
        if keys is not None and config not in keys:
            continue
        default = broker_name(config)  # the broker's layers, if the broker has a default
        chain = apis.dynamic_config.chain(default) if default is not None else []
        if config in meta.configs:
            chain.insert(0, SourcedValue(config, meta.configs[config], DYNAMIC_TOPIC_CONFIG))
        entries.append(_entry(config, config_string(values[config]), chain, False, synonyms))
    return entries


def _broker_configs(apis: ApiContext, name: str, keys: set[str] | None, synonyms: bool) -> list:
    """This broker's configs (named by its id), or the cluster-wide dynamic defaults
    (named ""), as Kafka's `ZkAdminManager.describeConfigs` lists them (CONFIG-4)."""
    dynamic = apis.dynamic_config
    if name == "":
        return [
            _entry(config, value, dynamic.chain(config, per_broker=False), False, synonyms)
            for config, value in sorted(dynamic.default.items())
            if keys is None or config in keys
        ]
    if name != str(apis.broker_id):
        raise KafkaError(
            f"Unexpected broker id, expected {apis.broker_id} or empty string, but received {name}",
            code=ErrorCode.INVALID_REQUEST,
        )
    return [
        _entry(
            config,
            config_string(value),
            dynamic.chain(config),
            config not in DYNAMIC_CONFIGS,
            synonyms,
        )
        for config, value, _ in apis.config.describe()
        if keys is None or config in keys
    ]


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
