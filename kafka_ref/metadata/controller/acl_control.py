"""ACLs in KRaft: CreateAcls and DeleteAcls as records (Kafka: `AclControlManager`).

Each ACL in the image has an id, a UUID the controller gives it; an AccessControlEntryRecord
adds one and a RemoveAccessControlEntryRecord removes it by id. CreateAcls checks every
binding as the ZooKeeper-mode authorizer does (kafka_ref/security/acls.py `validate`:
INVALID_REQUEST for a filter value, a bad resource name or principal); an ACL that already
exists is created again by nobody: it succeeds and writes nothing (Kafka: the
`existingAcls` check). DeleteAcls removes every ACL a filter matches (SEC-18) and answers
each filter with the ACLs it removed; two filters matching one ACL remove it once.

Rules: KCTRL-12.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.result import NONE, ApiError, ControllerResult
from kafka_ref.metadata.image import MetadataImage, StandardAcl
from kafka_ref.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    validate,
)


def binding_of(acl: StandardAcl) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType(acl.resource_type), acl.resource_name, PatternType(acl.pattern_type)
        ),
        AccessControlEntry(
            acl.principal,
            acl.host,
            AclOperation(acl.operation),
            AclPermissionType(acl.permission_type),
        ),
    )


def standard_acl(binding: AclBinding) -> StandardAcl:
    p, e = binding.pattern, binding.entry
    return StandardAcl(
        int(p.resource_type),
        p.name,
        int(p.pattern_type),
        e.principal,
        e.host,
        int(e.operation),
        int(e.permission),
    )


def create_acls(
    image: MetadataImage, bindings: Sequence[AclBinding], new_id: Callable[[], uuid.UUID]
) -> ControllerResult[list[ApiError]]:
    existing = set(image.acls.values())
    records = []
    results = []
    for binding in bindings:
        why = validate(binding)
        if why is not None:
            results.append(ApiError(ErrorCode.INVALID_REQUEST, why))
            continue
        acl = standard_acl(binding)
        if acl not in existing:
            existing.add(acl)
            records.append(r.AccessControlEntryRecord(id=new_id(), **_fields(acl)))
        results.append(NONE)
    return ControllerResult.of(records, results)


def delete_acls(
    image: MetadataImage, filters: Sequence[AclBindingFilter]
) -> ControllerResult[list[list[AclBinding]]]:
    removed: set[uuid.UUID] = set()
    records = []
    results = []
    for acl_filter in filters:
        matched = []
        for acl_id, acl in image.acls.items():
            binding = binding_of(acl)
            if acl_filter.matches(binding):
                matched.append(binding)
                if acl_id not in removed:
                    removed.add(acl_id)
                    records.append(r.RemoveAccessControlEntryRecord(id=acl_id))
        results.append(matched)
    return ControllerResult.of(records, results)


def _fields(acl: StandardAcl) -> dict[str, object]:
    return {name: getattr(acl, name) for name in acl.__dataclass_fields__}
