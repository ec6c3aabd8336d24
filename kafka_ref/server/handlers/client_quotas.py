"""DescribeClientQuotas (48) and AlterClientQuotas (49): read and change quotas (KIP-546).

Both go to any broker: quotas are stored where every broker reads them (the metadata
directory, or ZooKeeper's `/config/users`, `/config/clients` with a change notification;
quota/store.py) and every broker puts them in force at once (QUOTA-4).

* **Describe** needs DESCRIBE_CONFIGS on the cluster, **Alter** ALTER_CONFIGS (as Kafka's
  `KafkaApis` asks); a refusal is CLUSTER_AUTHORIZATION_FAILED.
* A filter component matches an entity that has its entity type with the exact name
  (match type 0), with the default name (1), or with any name (2); every component must
  match, and `strict` also excludes entities that have an entity type the filter does not
  name (Kafka's `ClientQuotasImage.describe`). An unknown entity type or match type, or a
  type named twice, is INVALID_REQUEST for the whole request.
* Alter applies each entry on its own: the entity and every operation are validated first
  (INVALID_REQUEST: unknown entity type or key, a value not positive, a byte rate not
  whole), then the entity's keys are set and removed in one write.

Rules: QUOTA-9, QUOTA-10.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import AlterClientQuotasResponse, DescribeClientQuotasResponse
from kafka_ref.quota.entity import (
    CLIENT_ID,
    DEFAULT,
    USER,
    InvalidQuotaError,
    QuotaEntity,
    validate_value,
)
from kafka_ref.server.handlers.authz import Op, Res, require
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

EXACT, DEFAULT_NAME, ANY = 0, 1, 2  # the filter's match types (ClientQuotaFilterComponent)


def _filter(components: list[Any]) -> dict[str, tuple[int, str | None]]:
    found: dict[str, tuple[int, str | None]] = {}
    for c in components:
        if c.entity_type not in (USER, CLIENT_ID):
            raise InvalidQuotaError(f"Unsupported quota entity type: {c.entity_type}")
        if c.entity_type in found:
            raise InvalidQuotaError(f"Duplicate entity type: {c.entity_type}")
        if c.match_type not in (EXACT, DEFAULT_NAME, ANY) or (c.match_type == EXACT) != (
            c.match is not None
        ):
            raise InvalidQuotaError(f"Invalid match for entity type {c.entity_type}")
        found[c.entity_type] = (c.match_type, c.match)
    return found


def matches(entity: QuotaEntity, wanted: dict[str, tuple[int, str | None]], strict: bool) -> bool:
    names = {USER: entity.user, CLIENT_ID: entity.client_id}
    for entity_type, (match_type, match) in wanted.items():
        name = names[entity_type]
        if name is None:
            return False
        if match_type == EXACT and name != match:
            return False
        if match_type == DEFAULT_NAME and name != DEFAULT:
            return False
    return not strict or all(names[t] is None for t in names if t not in wanted)


def handle_describe_client_quotas(apis: ApiContext, request: Request) -> Any:
    response = DescribeClientQuotasResponse
    try:
        require(apis, request, Op.DESCRIBE_CONFIGS, Res.CLUSTER)
        wanted = _filter(request.body.components)
    except (KafkaError, InvalidQuotaError) as err:
        code = err.code if isinstance(err, KafkaError) else ErrorCode.INVALID_REQUEST
        return response(throttle_time_ms=0, error_code=code, error_message=str(err), entries=None)
    entries = [
        response.EntryData(
            entity=[response.EntityData(entity_type=t, entity_name=n) for t, n in e.components()],
            values=[response.ValueData(key=k, value=v) for k, v in sorted(config.items())],
        )
        for e, config in sorted(apis.quotas.configs.items(), key=lambda item: item[0].path)
        if matches(e, wanted, request.body.strict)
    ]
    return response(throttle_time_ms=0, error_code=ErrorCode.NO_ERROR, entries=entries)


def _alter_entry(apis: ApiContext, entry: Any, validate_only: bool) -> None:
    entity = QuotaEntity.from_components([(e.entity_type, e.entity_name) for e in entry.entity])
    keys = [op.key for op in entry.ops]
    if len(keys) != len(set(keys)):
        raise InvalidQuotaError("Duplicate quota key in one entity")
    set_ = {op.key: validate_value(op.key, op.value) for op in entry.ops if not op.remove}
    remove = tuple(op.key for op in entry.ops if op.remove)
    for key in remove:
        validate_value(key, 1.0)  # a known key
    if not validate_only:
        apis.quotas.alter(entity, set_, remove)


def handle_alter_client_quotas(apis: ApiContext, request: Request) -> Any:
    response = AlterClientQuotasResponse
    results = []
    for entry in request.body.entries:
        code, message = ErrorCode.NO_ERROR, None
        try:
            require(apis, request, Op.ALTER_CONFIGS, Res.CLUSTER)
            _alter_entry(apis, entry, request.body.validate_only)
        except KafkaError as err:
            code, message = err.code, str(err)
        except InvalidQuotaError as err:
            code, message = ErrorCode.INVALID_REQUEST, str(err)
        entity = [
            response.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
            for e in entry.entity
        ]
        results.append(response.EntryData(error_code=code, error_message=message, entity=entity))
    return response(throttle_time_ms=0, entries=results)
