"""Client quotas in KRaft: AlterClientQuotas as ClientQuotaRecords (Kafka:
`ClientQuotaControlManager`, KIP-546).

A quota entity is a user, a client id or both, a null name meaning the default entity; a
ClientQuotaRecord sets one key of one entity, or removes it. Each entry of the request is
checked as the ZooKeeper-mode quotas are (kafka_ref/quota/entity.py: QUOTA-1..3): known
entity types, each once; known keys; positive values, whole bytes per second for the byte
rates. A bad entry is INVALID_REQUEST and writes nothing; the others still apply.

Rules: KCTRL-14.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.result import NONE, ApiError, ControllerResult
from kafka_ref.metadata.image import MetadataImage
from kafka_ref.quota.entity import InvalidQuotaError, QuotaEntity, validate_value


@dataclass(frozen=True)
class QuotaOp:
    key: str
    value: float = 0.0
    remove: bool = False


@dataclass(frozen=True)
class QuotaAlteration:
    entity: tuple[tuple[str, str | None], ...]  # (entity type, name or None for the default)
    ops: Sequence[QuotaOp]


def alter_client_quotas(
    image: MetadataImage, entries: Sequence[QuotaAlteration], *, validate_only: bool = False
) -> ControllerResult[list[ApiError]]:
    records: list[object] = []
    results = []
    for entry in entries:
        try:
            QuotaEntity.from_components(list(entry.entity))
            for op in entry.ops:
                if not op.remove:
                    validate_value(op.key, op.value)
        except InvalidQuotaError as e:
            results.append(ApiError(ErrorCode.INVALID_REQUEST, str(e)))
            continue
        entity = [
            r.ClientQuotaRecord.EntityData(entity_type=kind, entity_name=name)
            for kind, name in sorted(entry.entity)
        ]
        records += [
            r.ClientQuotaRecord(entity=entity, key=op.key, value=op.value, remove=op.remove)
            for op in entry.ops
        ]
        results.append(NONE)
    return ControllerResult.of([] if validate_only else records, results)
