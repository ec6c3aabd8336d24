"""AlterConfigs and IncrementalAlterConfigs: change a topic's config overrides while it runs.

A topic's config is the broker's defaults with the topic's *overrides* on top. These two
requests compute the topic's new set of overrides and hand it to the controller
(`alter_topic_configs`, cluster/topic_requests.py), which checks every key and value
(INVALID_CONFIG), stores the set (the metadata file, or `/config/topics/<topic>` in
ZooKeeper) and makes every broker apply it to the topic's live logs (CTRL-15):

* **AlterConfigs** (key 33): the request's configs *are* the new set; a key it leaves out
  loses its override, a null value is no override (CONFIG-1).
* **IncrementalAlterConfigs** (key 44, KIP-339): each config names an operation on the
  current set (CONFIG-2): 0 SET the value; 1 DELETE the override (back to the default);
  2 APPEND and 3 SUBTRACT items of a list config (`cleanup.policy`), starting from its
  value in force; on another type they are INVALID_CONFIG. A key named twice in one
  resource is INVALID_REQUEST.

Resource type 2 is a topic; type 4 (BROKER) is a dynamic broker config (KIP-226,
server/dynamic_config.py): named by this broker's id, its own layer, named "" the
cluster-wide default. The operations apply the same way to the layer's stored set; the
result must pass Kafka's checks of dynamic broker configs (dynamic_config.py: no key Kafka
cannot update dynamically, stores only per listener, per-broker keys not at the cluster
default, values of their type), else the resource is INVALID_REQUEST with Kafka's message,
as is another broker's id (CONFIG-5, CONFIG-9). The controller stores the set (the metadata
file, or `/config/brokers/<id|<default>>` in ZooKeeper) and every broker applies what it
can (CONFIG-6, CONFIG-10). Type 32 (GROUP, KIP-848 and KIP-932) is a group's configs,
named by its id: the operations apply to the group's stored set, which must pass
`validate_group_configs` (group/group_configs.py: known keys, values of their type within
the broker's bounds, else INVALID_CONFIG in Kafka's words); the controller stores it (the
metadata file, or `/config/groups/<group>` in ZooKeeper) and every broker reads it from
there (CONFIG-13). Any other type is INVALID_REQUEST. `validate_only` checks and
changes nothing. Each resource gets its own error code and message.

A **KRaft broker** stores nothing itself: `forward` looks at the request first, as Kafka's
`ConfigAdminManager.preprocess` does, and answers here a resource named twice, a key named
twice in a resource, a null value to set, an unknown resource type, a broker resource
naming another broker, and a broker config that fails the dynamic config checks (all
INVALID_REQUEST); the other resources go to the active controller in a request of their
own, and the two answers merge in the request's order (KBROKER-18). A group's configs go
to the active controller, which checks them with its own bounds and writes ConfigRecords
of resource type 32 (CONFIG-13).

Rules: CONFIG-1, CONFIG-2, CONFIG-5, CONFIG-6, CONFIG-9, CONFIG-10, CONFIG-13, CTRL-15,
KBROKER-18.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka_ref.config import TOPIC_CONFIGS
from kafka_ref.errors import ErrorCode, InvalidConfigError, KafkaError
from kafka_ref.group.group_configs import GROUP_CONFIGS, GROUP_RESOURCE, validate_group_configs
from kafka_ref.protocol.messages import (
    APIS,
    AlterConfigsResponse,
    ApiKey,
    IncrementalAlterConfigsResponse,
)
from kafka_ref.server.broker_configs import BROKER_CONFIGS
from kafka_ref.server.dynamic_config import DEFAULT_ENTITY
from kafka_ref.server.handlers.authz import Op, Res, require
from kafka_ref.server.handlers.configs import BROKER, TOPIC, group_name
from kafka_ref.server.kafka_config import config_string
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # Kafka's AlterConfigOp.OpType


def _request_error(message: str) -> KafkaError:
    return KafkaError(message, code=ErrorCode.INVALID_REQUEST)


def replaced(current: dict[str, str], configs: list[Any]) -> dict[str, str]:
    """AlterConfigs: the request's configs are the whole new set of overrides."""
    return {c.name: c.value for c in configs if c.value is not None}


def incremental(apis: ApiContext, resource: Any, current: dict[str, str], configs: list) -> dict:
    """IncrementalAlterConfigs: each operation applied to the current overrides in turn."""
    names = [c.name for c in configs]
    if len(names) != len(set(names)):
        raise _request_error("Error due to duplicate config keys")
    broker = resource.resource_type == BROKER
    group = resource.resource_type == GROUP_RESOURCE
    new = dict(current)
    for config in configs:
        if group:  # an unknown key is refused with the whole new set (validate_group_configs)
            key = GROUP_CONFIGS.get(config.name)
            definition = key.definition if key is not None else None
        else:
            definition = (BROKER_CONFIGS if broker else TOPIC_CONFIGS).get(config.name)
        if definition is None and not (broker or group):
            raise InvalidConfigError(f"Unknown topic config name: {config.name}")
        op = config.config_operation
        if op == SET:
            if config.value is None:
                raise InvalidConfigError(f"Null value not supported for : {config.name}")
            new[config.name] = config.value
        elif op == DELETE:
            new.pop(config.name, None)
        elif op in (APPEND, SUBTRACT):
            if definition is None or definition.type != "list":
                raise InvalidConfigError(
                    f"Config value append/subtract is not allowed for config key: {config.name}"
                )
            items = list(_in_force(apis, resource, config.name))
            given = [v.strip() for v in (config.value or "").split(",") if v.strip()]
            if op == APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            new[config.name] = config_string(items)
        else:
            raise _request_error(f"Unknown config operation {op} for {config.name}")
    return new


def _in_force(apis: ApiContext, resource: Any, name: str) -> Any:
    """A list config's value in force, where APPEND and SUBTRACT start."""
    if resource.resource_type == BROKER:
        return apis.config[name]
    topic = resource.resource_name
    in_force = apis.controller.log_config(topic) or apis.controller.log_defaults
    return in_force.to_properties()[name]


def _broker_entity(apis: ApiContext, name: str) -> str:
    """The layer a BROKER resource names: "" the cluster default, else this broker's id
    (Kafka: `ZkAdminManager.getBrokerId`)."""
    if not name:
        return DEFAULT_ENTITY
    try:
        broker_id = int(name)
    except ValueError:
        raise _request_error(f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != apis.broker_id:
        raise _request_error(
            f"Unexpected broker id, expected {apis.broker_id}, but received {name}"
        )
    return name


def _alter_broker(apis: ApiContext, resource: Any, plan: Callable, validate_only: bool) -> None:
    """A dynamic broker config (CONFIG-5, CONFIG-6): check the layer's new set, store it."""
    entity = _broker_entity(apis, resource.resource_name)
    new = plan(apis, resource, apis.controller.broker_configs(entity), resource.configs)
    apis.dynamic_config.validate(entity, new)  # INVALID_REQUEST in Kafka's words
    if not validate_only:
        apis.controller.alter_broker_configs(entity, new)


def _alter_group(apis: ApiContext, resource: Any, plan: Callable, validate_only: bool) -> None:
    """A group's configs (CONFIG-13): the group's new set, checked, then stored."""
    group_id = group_name(resource.resource_name)
    new = plan(apis, resource, apis.controller.group_configs(group_id), resource.configs)
    validate_group_configs(new, apis.config.__getitem__)  # INVALID_CONFIG in Kafka's words
    if not validate_only:
        apis.controller.alter_group_configs(group_id, new)


def _alter(apis: ApiContext, request: Request, response: Any, plan: Callable) -> Any:
    body = request.body
    results = []
    for resource in body.resources:
        code, message = ErrorCode.NO_ERROR, None
        try:
            if resource.resource_type == BROKER:
                require(apis, request, Op.ALTER_CONFIGS, Res.CLUSTER)  # SEC-17
                _alter_broker(apis, resource, plan, body.validate_only)
            elif resource.resource_type == GROUP_RESOURCE:
                require(apis, request, Op.ALTER_CONFIGS, Res.GROUP, resource.resource_name)
                _alter_group(apis, resource, plan, body.validate_only)
            elif resource.resource_type != TOPIC:
                raise _request_error(f"Unsupported resource type {resource.resource_type}")
            else:
                name = resource.resource_name
                require(apis, request, Op.ALTER_CONFIGS, Res.TOPIC, name)
                meta = apis.controller.topic(name)
                current = dict(meta.configs) if meta is not None else {}
                new = plan(apis, resource, current, resource.configs)
                apis.controller.alter_topic_configs(name, new, validate_only=body.validate_only)
        except KafkaError as err:
            code, message = err.code, str(err.args[0]) if err.args else err.code.name
        results.append(
            response.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return response(throttle_time_ms=0, responses=results)


def handle_alter_configs(apis: ApiContext, request: Request) -> Any:
    return _alter(
        apis, request, AlterConfigsResponse, lambda _a, _t, cur, cfgs: replaced(cur, cfgs)
    )


def handle_incremental_alter_configs(apis: ApiContext, request: Request) -> Any:
    return _alter(apis, request, IncrementalAlterConfigsResponse, incremental)


# ---------------------------------------------------------------------- KRaft: forward
def _preprocess(apis: ApiContext, request: Request) -> dict[int, KafkaError]:
    """The resources the broker refuses itself, by index (Kafka:
    `ConfigAdminManager.preprocess`)."""
    body = request.body
    is_incremental = request.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS
    named = Counter((r.resource_type, r.resource_name) for r in body.resources)
    refused: dict[int, KafkaError] = {}
    for i, resource in enumerate(body.resources):
        try:
            if named[(resource.resource_type, resource.resource_name)] > 1:
                raise _request_error("Each resource must appear at most once.")
            keys = [c.name for c in resource.configs]
            if len(keys) != len(set(keys)):
                raise _request_error("Error due to duplicate config keys")
            nulls = [
                c.name
                for c in resource.configs
                if c.value is None and not (is_incremental and c.config_operation == DELETE)
            ]
            if nulls:
                raise _request_error(f"Null value not supported for : {', '.join(nulls)}")
            if resource.resource_type == BROKER:
                entity = _broker_entity(apis, resource.resource_name)
                current = apis.controller.broker_configs(entity)
                if is_incremental:
                    new = incremental(apis, resource, current, resource.configs)
                else:
                    new = replaced(current, resource.configs)
                apis.dynamic_config.validate(entity, new)
            elif resource.resource_type not in (TOPIC, GROUP_RESOURCE):
                raise _request_error(f"Unknown resource type {resource.resource_type}")
        except KafkaError as err:
            refused[i] = err
    return refused


def forward(apis: ApiContext, request: Request) -> None:
    """A KRaft broker's AlterConfigs or IncrementalAlterConfigs: what it refuses itself
    answered here, the rest by the active controller (KBROKER-18)."""
    body = request.body
    refused = _preprocess(apis, request)
    if not refused:
        apis.forwarding.forward(request, apis.send)
        return
    response = APIS[request.api_key].response
    resources = body.resources
    remaining = [r for i, r in enumerate(resources) if i not in refused]

    def settle(forwarded: Any) -> Any:
        decided = {(r.resource_type, r.resource_name): r for r in forwarded.responses}
        answers = []
        for i, r in enumerate(resources):
            err = refused.get(i)
            if err is None:
                answers.append(decided[(r.resource_type, r.resource_name)])
                continue
            answers.append(
                response.AlterConfigsResourceResponse(
                    error_code=err.code,
                    error_message=str(err.args[0]) if err.args else err.code.name,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
            )
        return response(throttle_time_ms=0, responses=answers)

    if not remaining:
        apis.send(request, settle(response(responses=[])))
        return
    rest = type(body)(resources=remaining, validate_only=body.validate_only)
    apis.forwarding.forward(request, apis.send, rest, settle)
