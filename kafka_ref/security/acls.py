"""ACLs: the values of authorization, and the rule that decides (Kafka: `AclAuthorizer`,
`StandardAuthorizer`, KIP-290).

An ACL (access control entry bound to a resource pattern) reads: *principal P, from host H,
is ALLOWED (or DENIED) operation O on resources matching R*. For example
`User:alice from * is ALLOWED READ on TOPIC LITERAL clicks`. The pieces, with Kafka's codes
(they travel as int8 in CreateAcls, DescribeAcls and DeleteAcls):

* resource types: TOPIC, GROUP, CLUSTER (one resource, `kafka-cluster`), TRANSACTIONAL_ID,
  DELEGATION_TOKEN and USER (a user's delegation tokens, KIP-373; the ACL APIs' v3 names
  it, though Kafka accepts it in every version: SEC-27);
* pattern types: LITERAL (the name itself; the name `*` matches every resource of the
  type) and PREFIXED (every name that starts with it, KIP-290);
* operations: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION,
  DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS, and ALL
  (every operation);
* permissions: ALLOW and DENY;
* principal `User:name` or `User:*` (everyone), host an IP address or `*`.

`authorize` is the whole decision as one pure function (SEC-13..SEC-16). Filters (the
ANY / MATCH values and None for "any name") select ACLs for DescribeAcls and DeleteAcls
(SEC-18). Kafka's ZooKeeper layout and JSON for ACLs are here too, shared by the embedded
file and ZooKeeper (SEC-19).

Rules: SEC-13, SEC-14, SEC-15, SEC-16, SEC-18, SEC-19, SEC-27.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"  # a LITERAL resource name, a principal's name or a host: matches all
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7  # a user's delegation tokens (KIP-373)


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only: every pattern type
    MATCH = 2  # filters only: the patterns that would match the filter's name
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13  # for a USER: create delegation tokens on its behalf
    DESCRIBE_TOKENS = 14  # for a USER: describe its delegation tokens


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


Op = AclOperation
# An ALLOW for any of these also allows the key (Kafka: AclAuthorizer's implied operations):
# whoever may read, write, delete or alter a topic may see that it exists.
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    Op.DESCRIBE: frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}),
}


@dataclass(frozen=True, order=True)
class ResourcePattern:
    """Which resources an ACL is about: a type, a name and how the name matches."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Does this pattern cover the resource `(resource_type, name)`? (SEC-14)"""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    """Who, from where, may or may not do what."""

    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def applies_to(self, principal: str, host: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL) and self.host in (host, WILDCARD)


@dataclass(frozen=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


def authorize(
    acls: Iterable[AclBinding],
    principal: str,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str,
    *,
    super_users: frozenset[str] = frozenset(),
    allow_if_no_acls: bool = False,
) -> bool:
    """May `principal`, connected from `host`, do `operation` on the resource? Kafka's rule:

    1. a super user may do everything (SEC-16);
    2. only the ACLs whose pattern covers the resource count: LITERAL with the same name
       or `*`, PREFIXED with a prefix of the name (SEC-14);
    3. no such ACL at all (for anyone): allowed only with `allow.everyone.if.no.acl.found`
       (SEC-16);
    4. a DENY for this principal (or `User:*`) and host (or `*`) naming this operation or
       ALL refuses, whatever ALLOWs exist: DENY wins (SEC-15);
    5. else an ALLOW for them naming this operation, ALL, or an operation that implies it
       (READ, WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies
       DESCRIBE_CONFIGS) allows (SEC-13);
    6. nothing allows: refused (SEC-13).

    A DENY is never widened by implication: DENY READ does not deny DESCRIBE.
    """
    if principal in super_users:
        return True
    relevant = [b.entry for b in acls if b.pattern.matches(resource_type, name)]
    if not relevant:
        return allow_if_no_acls
    mine = [e for e in relevant if e.applies_to(principal, host)]
    if any(
        e.permission == AclPermissionType.DENY and e.operation in (operation, Op.ALL) for e in mine
    ):
        return False
    allowing = IMPLIED_BY.get(operation, frozenset({operation})) | {Op.ALL}
    return any(e.permission == AclPermissionType.ALLOW and e.operation in allowing for e in mine)


def authorize_any(
    acls: Iterable[AclBinding],
    principal: str,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
    *,
    super_users: frozenset[str] = frozenset(),
    allow_if_no_acls: bool = False,
) -> bool:
    """Is `operation` allowed on at least one resource of the type? (Kafka:
    `authorizeByResourceType`, KIP-679: an idempotent producer needs WRITE on some topic.)
    An ALLOW counts unless a DENY for the principal covers every name it covers."""
    if principal in super_users:
        return True
    of_type = [b for b in acls if b.pattern.resource_type == resource_type]
    if not of_type:
        return allow_if_no_acls
    mine = [b for b in of_type if b.entry.applies_to(principal, host)]
    named = [b for b in mine if b.entry.operation in (operation, Op.ALL)]
    denied = [b.pattern for b in named if b.entry.permission == AclPermissionType.DENY]

    def shadowed(p: ResourcePattern) -> bool:  # a DENY covers every name `p` covers
        return any(
            d == p
            or (d.name == WILDCARD and d.pattern_type == PatternType.LITERAL)
            or (d.pattern_type == PatternType.PREFIXED and p.name.startswith(d.name))
            for d in denied
        )

    return any(
        b.entry.permission == AclPermissionType.ALLOW and not shadowed(b.pattern) for b in named
    )


@dataclass(frozen=True)
class AclBindingFilter:
    """Selects ACLs (DescribeAcls, DeleteAcls): None and the ANY values match everything;
    pattern type MATCH selects the patterns that would match `name` (SEC-18)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = Op.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        p, e = binding.pattern, binding.entry
        if self.resource_type not in (ResourceType.ANY, p.resource_type):
            return False
        if self.pattern_type == PatternType.MATCH:
            named = self.name is None or p.matches(p.resource_type, self.name)
        else:
            same_type = self.pattern_type in (PatternType.ANY, p.pattern_type)
            named = same_type and self.name in (None, p.name)
        if not named:
            return False
        return (
            self.principal in (None, e.principal)
            and self.host in (None, e.host)
            and self.operation in (Op.ANY, e.operation)
            and self.permission in (AclPermissionType.ANY, e.permission)
        )


def validate(binding: AclBinding) -> str | None:
    """Why this ACL cannot be created (Kafka answers INVALID_REQUEST), or None."""
    p, e = binding.pattern, binding.entry
    if p.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        return "the resource type must be a concrete type"
    if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return "the pattern type must be LITERAL or PREFIXED"
    if e.operation in (Op.ANY, Op.UNKNOWN) or e.permission not in (
        AclPermissionType.ALLOW,
        AclPermissionType.DENY,
    ):
        return "the operation and permission must be concrete values"
    if not p.name or (p.resource_type == ResourceType.CLUSTER and p.name != CLUSTER_NAME):
        return f"bad resource name {p.name!r} (the cluster is {CLUSTER_NAME!r})"
    if ":" not in e.principal:
        return f"the principal {e.principal!r} is not <type>:<name>, e.g. User:alice"
    return None


# -- Kafka's ZooKeeper layout and JSON ---------------------------------------------------------
# /kafka-acl/Topic/clicks                  LITERAL patterns
# /kafka-acl-extended/prefixed/Topic/cli   PREFIXED patterns
# each: {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
#                             "operation":"Read","host":"*"}]}

ZK_TYPE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
ZK_ROOTS = {PatternType.LITERAL: "/kafka-acl", PatternType.PREFIXED: "/kafka-acl-extended/prefixed"}


def _pascal(name: str) -> str:  # CLUSTER_ACTION -> ClusterAction (Kafka's JSON names)
    return "".join(word.capitalize() for word in name.split("_"))


def acls_to_json(entries: Iterable[AccessControlEntry]) -> bytes:
    items = [
        {
            "principal": e.principal,
            "permissionType": _pascal(e.permission.name),
            "operation": _pascal(e.operation.name),
            "host": e.host,
        }
        for e in sorted(entries)
    ]
    return json.dumps({"version": 1, "acls": items}).encode()


def acls_from_json(data: bytes) -> frozenset[AccessControlEntry]:
    operations = {_pascal(o.name): o for o in AclOperation}
    permissions = {_pascal(p.name): p for p in AclPermissionType}
    return frozenset(
        AccessControlEntry(
            a["principal"], a["host"], operations[a["operation"]], permissions[a["permissionType"]]
        )
        for a in json.loads(data or b"{}").get("acls", [])
    )


def zk_path(pattern: ResourcePattern) -> str:
    return f"{ZK_ROOTS[pattern.pattern_type]}/{ZK_TYPE_NAMES[pattern.resource_type]}/{pattern.name}"
