"""Configs in KRaft: IncrementalAlterConfigs as ConfigRecords, and the effective value of a
topic config (Kafka: `ConfigurationControlManager`).

A config lives in the image per resource, a topic (resource type 2) or a broker (type 4;
the name "" is the cluster-wide default of every broker), as the keys set on it; a
ConfigRecord sets one key, or deletes it when its value is null. IncrementalAlterConfigs
takes operations per key: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) to a list value,
and turns them into those records, one per key that changes. A topic's new configs must
parse as topic configs (INVALID_CONFIG); an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, a
broker resource that is not an id nor "" INVALID_REQUEST. A group (resource type 32,
KIP-848 and KIP-932) has its new set checked as a broker checks it, against the bounds
of the controller's own config (`validate_group_configs`, INVALID_CONFIG; CONFIG-13).
`validate_only` checks and writes nothing. AlterConfigs, the older request, names a
resource's whole set of keys: the keys it leaves out are deleted.

A topic config's effective value comes from the topic, else the cluster's dynamic default
(the broker resource ""), else the static config: that is how the controller learns a
topic's `min.insync.replicas` and `unclean.leader.election.enable` for its elections
(Kafka: `getTopicEffectiveMinIsr`, `uncleanLeaderElectionEnabledForTopic`).

Rules: KCTRL-10, KCTRL-19, CONFIG-13.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.group.group_configs import GROUP_RESOURCE, validate_group_configs
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.controller_config import ControllerConfig
from kafka_ref.metadata.controller.result import NONE, ApiError, ControllerResult
from kafka_ref.metadata.image import MetadataImage

TOPIC = 2
BROKER = 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@dataclass(frozen=True)
class AlterableConfig:
    name: str
    op: int
    value: str | None = None


@dataclass(frozen=True)
class AlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: Sequence[AlterableConfig]


def topic_config(image: MetadataImage, topic: str, key: str) -> str | None:
    """The topic's value of `key`, else the cluster's dynamic default, else None."""
    for resource in ((TOPIC, topic), (BROKER, "")):
        value = image.configs.get(resource, {}).get(key)
        if value is not None:
            return value
    return None


def min_insync_replicas(image: MetadataImage, config: ControllerConfig, topic: str) -> int:
    value = topic_config(image, topic, "min.insync.replicas")
    return config.log_defaults.min_insync_replicas if value is None else int(value)


def unclean_leader_election(image: MetadataImage, config: ControllerConfig, topic: str) -> bool:
    value = topic_config(image, topic, "unclean.leader.election.enable")
    if value is None:
        return config.log_defaults.unclean_leader_election_enable
    return value.strip().lower() == "true"


def _apply(current: Mapping[str, str], alterations: Sequence[AlterableConfig]) -> dict[str, str]:
    """The resource's keys after the operations (Kafka: `incrementalAlterConfigResource`)."""
    new = dict(current)
    for alteration in alterations:
        name, value = alteration.name, alteration.value
        if alteration.op == SET:
            if value is None:
                raise KafkaError(
                    f"Null value not supported for {name}", code=ErrorCode.INVALID_REQUEST
                )
            new[name] = value
        elif alteration.op == DELETE:
            new.pop(name, None)
        elif alteration.op in (APPEND, SUBTRACT):
            items = [v for v in new.get(name, "").split(",") if v]
            given = [v for v in (value or "").split(",") if v]
            if alteration.op == APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            new[name] = ",".join(items)
        else:
            raise KafkaError(f"Unknown operation {alteration.op}", code=ErrorCode.INVALID_REQUEST)
    return new


def _check(
    image: MetadataImage,
    config: ControllerConfig,
    resource: AlterConfigsResource,
    new: dict[str, str],
) -> None:
    if resource.resource_type == TOPIC:
        if image.topic_by_name(resource.resource_name) is None:
            raise KafkaError(
                f"The topic '{resource.resource_name}' does not exist.",
                code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            )
        # raises InvalidConfigError (INVALID_CONFIG) for an unknown key or a bad value
        LogConfig.from_properties(new, defaults=config.log_defaults).validate_values()
    elif resource.resource_type == BROKER:
        if resource.resource_name and not resource.resource_name.isdigit():
            raise KafkaError(
                f"Illegal broker resource name {resource.resource_name!r}",
                code=ErrorCode.INVALID_REQUEST,
            )
    elif resource.resource_type == GROUP_RESOURCE:
        if not resource.resource_name:
            raise KafkaError("Group name must not be empty", code=ErrorCode.INVALID_REQUEST)
        validate_group_configs(new, config.group_broker_values.__getitem__)
    else:
        raise KafkaError(
            f"Unsupported resource type {resource.resource_type}", code=ErrorCode.INVALID_REQUEST
        )


def incremental_alter_configs(
    image: MetadataImage,
    config: ControllerConfig,
    resources: Sequence[AlterConfigsResource],
    *,
    validate_only: bool = False,
) -> ControllerResult[list[tuple[AlterConfigsResource, ApiError]]]:
    """ConfigRecords for every key that changes; an error per resource that fails."""
    records: list[r.ConfigRecord] = []
    responses = []
    for resource in resources:
        key = (resource.resource_type, resource.resource_name)
        current = image.configs.get(key, {})
        try:
            new = _apply(current, resource.configs)
            _check(image, config, resource, new)
        except KafkaError as e:
            responses.append((resource, ApiError.of(e)))
            continue
        responses.append((resource, NONE))
        for name in sorted(set(current) | set(new)):
            if current.get(name) != new.get(name):
                records.append(
                    r.ConfigRecord(
                        resource_type=resource.resource_type,
                        resource_name=resource.resource_name,
                        name=name,
                        value=new.get(name),
                    )
                )
    return ControllerResult.of([] if validate_only else records, responses)


def legacy_alter_configs(
    image: MetadataImage,
    config: ControllerConfig,
    resources: Sequence[tuple[int, str, Mapping[str, str]]],
    *,
    validate_only: bool = False,
) -> ControllerResult[list[tuple[AlterConfigsResource, ApiError]]]:
    """AlterConfigs (KCTRL-19): each resource's keys become exactly the given ones, a key
    left out is deleted (Kafka: `legacyAlterConfigs`); then as IncrementalAlterConfigs."""
    incremental = []
    for resource_type, resource_name, configs in resources:
        current = image.configs.get((resource_type, resource_name), {})
        alterations = [AlterableConfig(name, SET, value) for name, value in configs.items()]
        alterations += [AlterableConfig(name, DELETE) for name in current if name not in configs]
        incremental.append(AlterConfigsResource(resource_type, resource_name, alterations))
    return incremental_alter_configs(image, config, incremental, validate_only=validate_only)
