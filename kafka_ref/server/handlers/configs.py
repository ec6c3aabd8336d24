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
  (the cluster-wide default): only the dynamic defaults set for the cluster;
* resource type GROUP (32), named by a group id (KIP-848, KIP-932; Kafka:
  `ConfigHelper.createGroupConfigEntry`): every group config of `GROUP_CONFIGS`
  (group/group_configs.py) with the group's own value (source GROUP_CONFIG, 8), else the
  value of the broker config it overrides and that config's source (STATIC_BROKER_CONFIG,
  DEFAULT_CONFIG, ...), else Kafka's default; never read-only. A group need not exist to
  be described; an empty name is INVALID_REQUEST (CONFIG-12).

`configuration_keys` (null = all) filters the list. An unknown topic is
UNKNOWN_TOPIC_OR_PARTITION, another broker's id or an unsupported resource type
INVALID_REQUEST, per resource.

From v3 every entry also says its type (`config_type`: Kafka's `ConfigDef.Type` as
DescribeConfigsResponse numbers it, 1 BOOLEAN .. 9 PASSWORD) and, when the request sets
`include_documentation`, the key's one line of documentation; null otherwise (BROKER-75).

CreateTopics v5+ answers a new topic's configs with the same entries (`topic_config_entries`,
BROKER-73).

Rules: BROKER-37, BROKER-38, BROKER-73, BROKER-75, CONFIG-4, CONFIG-12.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import validate_topic_name
from kafka_ref.config import TOPIC_CONFIGS, ConfigDef, LogConfig, broker_name
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.group.group_configs import (
    GROUP_CONFIG_SOURCE,
    GROUP_CONFIGS,
    GROUP_RESOURCE,
    broker_value,
)
from kafka_ref.protocol.messages import DescribeConfigsResponse
from kafka_ref.server.broker_configs import BROKER_CONFIGS, PASSWORD_KEYS
from kafka_ref.server.dynamic_config import (
    DEFAULT_CONFIG,
    KAFKA_DYNAMIC_CONFIGS,
    SourcedValue,
)
from kafka_ref.server.handlers.authz import Op, Res, require
from kafka_ref.server.kafka_config import config_string
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

TOPIC, BROKER = 2, 4  # Kafka's ConfigResource.Type
DYNAMIC_TOPIC_CONFIG = 1  # ConfigSource; the broker's layers: dynamic_config.py
# Kafka's ConfigDef.Type as DescribeConfigsResponse numbers it (`ConfigType`): UNKNOWN 0,
# BOOLEAN 1, STRING 2, INT 3, SHORT 4, LONG 5, DOUBLE 6, LIST 7, CLASS 8, PASSWORD 9.
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7}
PASSWORD_TYPE = 9

Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


@dataclasses.dataclass(frozen=True)
class Described:
    """What a request asks to see of each config: its synonyms (v1+), its documentation
    (v3+); the resource's definitions give each key's type and documentation."""

    synonyms: bool = False
    documentation: bool = False


def config_type(definition: ConfigDef | None) -> int:
    """The `config_type` of a key (v3+): UNKNOWN (0) for a key without a definition."""
    if definition is None:
        return 0
    return PASSWORD_TYPE if definition.name in PASSWORD_KEYS else CONFIG_TYPES[definition.type]


def _entry(
    definition: ConfigDef | None,
    name: str,
    value: str | None,
    chain: list,
    read_only: bool,
    described: Described,
) -> Entry:
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
        if described.synonyms
        else [],
        config_type=config_type(definition),
        documentation=definition.doc if described.documentation and definition else None,
    )


def topic_config_entries(
    apis: ApiContext, configs: dict[str, str], keys: set[str] | None, described: Described
) -> list[Entry]:
    """Every topic config (or those in `keys`) of a topic whose overrides are `configs`:
    its value in force and the layer it comes from (BROKER-37; CreateTopics v5+ too)."""
    effective = LogConfig.from_properties(configs, apis.controller.log_defaults)
    values = effective.to_properties()
    entries = []
    for config, definition in TOPIC_CONFIGS.items():
        if keys is not None and config not in keys:
            continue
        default = broker_name(config)  # the broker's layers, if the broker has a default
        chain = apis.dynamic_config.chain(default) if default is not None else []
        if config in configs:
            chain.insert(0, SourcedValue(config, configs[config], DYNAMIC_TOPIC_CONFIG))
        value = config_string(values[config])
        entries.append(_entry(definition, config, value, chain, False, described))
    return entries


def _topic_configs(apis: ApiContext, name: str, keys: set[str] | None, described: Described):
    validate_topic_name(name)
    meta = apis.controller.topic(name)
    if meta is None:
        raise KafkaError(f"Topic {name} does not exist", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return topic_config_entries(apis, meta.configs, keys, described)


def _broker_configs(apis: ApiContext, name: str, keys: set[str] | None, described: Described):
    """This broker's configs (named by its id), or the cluster-wide dynamic defaults
    (named ""), as Kafka's `ZkAdminManager.describeConfigs` lists them (CONFIG-4)."""
    dynamic = apis.dynamic_config
    if name == "":
        return [
            _entry(
                BROKER_CONFIGS.get(config),
                config,
                value,
                dynamic.chain(config, per_broker=False),
                False,
                described,
            )
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
            BROKER_CONFIGS[config],
            config,
            config_string(value),
            dynamic.chain(config),
            config not in KAFKA_DYNAMIC_CONFIGS,
            described,
        )
        for config, value, _ in apis.config.describe()
        if keys is None or config in keys
    ]


def group_name(name: str | None) -> str:
    """The group a GROUP resource names; an empty name is INVALID_REQUEST (Kafka's words)."""
    if not name:
        raise KafkaError("Group name must not be empty", code=ErrorCode.INVALID_REQUEST)
    return name


def _group_configs(apis: ApiContext, name: str, keys: set[str] | None, described: Described):
    """Every group config of the group: its own value, else its broker synonym's (CONFIG-12)."""
    stored = apis.controller.group_configs(group_name(name))
    broker = apis.config.__getitem__
    entries = []
    for config, key in GROUP_CONFIGS.items():
        if keys is not None and config not in keys:
            continue
        if key.synonym:
            chain = apis.dynamic_config.chain(key.synonym)
        else:  # Kafka's default is the key's only synonym
            default = config_string(key.definition.default)
            chain = [SourcedValue(config, default, DEFAULT_CONFIG)]
        if config in stored:
            value = stored[config]
            chain.insert(0, SourcedValue(config, value, GROUP_CONFIG_SOURCE))
        else:
            value = config_string(broker_value(config, broker))
        entries.append(_entry(key.definition, config, value, chain, False, described))
    return entries


def handle_describe_configs(apis: ApiContext, request: Request) -> Any:
    body = request.body
    described = Described(bool(body.include_synonyms), bool(body.include_documentation))
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
                result.configs = _topic_configs(apis, resource.resource_name, keys, described)
            elif resource.resource_type == BROKER:
                require(apis, request, Op.DESCRIBE_CONFIGS, Res.CLUSTER)  # SEC-17
                result.configs = _broker_configs(apis, resource.resource_name, keys, described)
            elif resource.resource_type == GROUP_RESOURCE:
                name = resource.resource_name
                require(apis, request, Op.DESCRIBE_CONFIGS, Res.GROUP, name)
                result.configs = _group_configs(apis, name, keys, described)
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
