"""The authorizer: may this request's principal do this? (Kafka: `AclAuthorizer` on
ZooKeeper, `StandardAuthorizer` on KRaft.)

Authentication (SEC-5) says who a connection is; the authorizer says what it may do. It is
off unless `authorizer.class.name` names it (Kafka's class names
`kafka.security.authorizer.AclAuthorizer` and
`org.apache.kafka.metadata.authorizer.StandardAuthorizer`, or `acl`); off, every request is
allowed, as in Kafka without an authorizer. On, each handler asks before it acts
(`Authorizer.authorize`, through `authorized` in server/handlers/authz.py), with:

* `super.users`: `User:admin;User:ANONYMOUS`, principals allowed everything (SEC-16);
* `allow.everyone.if.no.acl.found` (default false): a resource without any ACL is open
  (SEC-16);
* the ACLs, which the decision itself (`acls.authorize`) reads.

**Where ACLs live** (SEC-19). CreateAcls and DeleteAcls change them; they must survive a
restart and, in a cluster, reach every broker:

* embedded mode: `__acls.json` in the metadata directory (the first log dir), written
  atomically, in Kafka's ZooKeeper JSON keyed by the znode path each pattern would have;
* ZooKeeper mode: Kafka's own znodes, `/kafka-acl/<Type>/<name>` (LITERAL) and
  `/kafka-acl-extended/prefixed/<Type>/<name>` (PREFIXED), then a sequential change
  notification under `/kafka-acl-changes` (LITERAL, data `Topic:clicks`) or
  `/kafka-acl-extended-changes` (PREFIXED, JSON) that every broker watches. A broker reloads
  all ACLs when a notification arrives (Kafka reloads only the resource it names: the same
  outcome, more reads); the new table replaces the old in one assignment, so a handler on the
  broker's loop sees either the old ACLs or the new, never half of a change.

**Inter-broker requests.** Brokers talk to each other over the PLAINTEXT inter-broker
listener, where every connection is `User:ANONYMOUS`. As in Kafka, the inter-broker
principal must be a super user (`super.users=User:ANONYMOUS`, or an ACL allowing it
CLUSTER_ACTION on the cluster) or replication and transaction markers are refused; with the
PLAINTEXT listener bound to a network only brokers reach, this is Kafka's usual setup.

Rules: SEC-16, SEC-19.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from kafka_ref.files import write_atomically
from kafka_ref.security.acls import (
    ZK_ROOTS,
    ZK_TYPE_NAMES,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourceType,
    acls_from_json,
    acls_to_json,
    authorize,
    authorize_any,
    zk_path,
)

logger = logging.getLogger("kafka_ref.security.authorizer")

AUTHORIZER_NAMES = (
    "",
    "acl",
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
)
ACLS_FILE = "__acls.json"
CHANGES = {
    PatternType.LITERAL: "/kafka-acl-changes",
    PatternType.PREFIXED: "/kafka-acl-extended-changes",
}
Entries = frozenset[AccessControlEntry]
Table = dict[ResourcePattern, Entries]


def _pattern_of(path: str) -> ResourcePattern:
    """The pattern of a znode path (the inverse of `acls.zk_path`)."""
    types = {name: t for t, name in ZK_TYPE_NAMES.items()}
    for pattern_type, root in ZK_ROOTS.items():
        type_name, _, name = path[len(root) + 1 :].partition("/")
        if path.startswith(root + "/") and type_name in types:
            return ResourcePattern(types[type_name], name, pattern_type)
    raise ValueError(f"not an ACL path: {path}")


class FileAclStore:
    """Embedded mode: every pattern's ACLs in one JSON file, `{znode path: Kafka's JSON}`."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = os.path.join(directory, ACLS_FILE)

    def load(self) -> Table:
        try:
            with open(self.path, encoding="utf-8") as f:
                stored = json.load(f)
        except FileNotFoundError:
            return {}
        return {_pattern_of(p): acls_from_json(json.dumps(v).encode()) for p, v in stored.items()}

    def update(self, pattern: ResourcePattern, add: Entries, remove: Entries) -> None:
        table = self.load()
        table[pattern] = (table.get(pattern, frozenset()) | add) - remove
        data = {zk_path(p): json.loads(acls_to_json(e)) for p, e in sorted(table.items()) if e}
        write_atomically(self.path, json.dumps(data, indent=2).encode() + b"\n")


class ZkAclStore:
    """ZooKeeper mode: Kafka's znodes and change notifications (`kazoo` is the client)."""

    def __init__(self, zk: Any) -> None:
        self.zk = zk
        for path in (*ZK_ROOTS.values(), *CHANGES.values()):
            zk.ensure_path(path)

    def load(self) -> Table:
        table: Table = {}
        for root in ZK_ROOTS.values():
            for type_name in self.zk.get_children(root):
                for name in self.zk.get_children(f"{root}/{type_name}"):
                    path = f"{root}/{type_name}/{name}"
                    entries = acls_from_json(self.zk.get(path)[0])
                    if entries:
                        table[_pattern_of(path)] = entries
        return table

    def update(self, pattern: ResourcePattern, add: Entries, remove: Entries) -> None:
        """Change one pattern's znode from what ZooKeeper holds now, with its version, so
        changes through two brokers at once both count (Kafka: `updateResourceAcls`)."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        path = zk_path(pattern)
        while True:
            try:
                if self.zk.exists(path):
                    data, stat = self.zk.get(path)
                    entries = (acls_from_json(data) | add) - remove
                    if entries:
                        self.zk.set(path, acls_to_json(entries), version=stat.version)
                    else:
                        self.zk.delete(path, version=stat.version)
                elif add - remove:
                    self.zk.create(path, acls_to_json(add - remove), makepath=True)
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another broker changed it meanwhile: again, from its new state
        type_name = ZK_TYPE_NAMES[pattern.resource_type]
        note = (
            f"{type_name}:{pattern.name}".encode()
            if pattern.pattern_type == PatternType.LITERAL
            else json.dumps(
                {
                    "version": 1,
                    "resourceType": type_name,
                    "name": pattern.name,
                    "patternType": "Prefixed",
                }
            ).encode()
        )
        self.zk.create(f"{CHANGES[pattern.pattern_type]}/acl_changes_", note, sequence=True)

    def watch(self, on_change: Callable[[], None]) -> None:
        """Call `on_change` (on kazoo's thread) whenever a change notification appears."""
        from kazoo.recipe.watchers import ChildrenWatch

        for path in CHANGES.values():
            ChildrenWatch(self.zk, path, lambda _children: on_change())


class Authorizer:
    """ACLs, super users and the no-ACL default of one broker."""

    def __init__(
        self, store: FileAclStore | ZkAclStore, super_users: str = "", allow_if_no_acls=False
    ) -> None:
        self.store = store
        self.super_users = frozenset(p.strip() for p in super_users.split(";") if p.strip())
        self.allow_if_no_acls = allow_if_no_acls
        self.table: Table = store.load()

    @classmethod
    def from_config(cls, config: Any, store: FileAclStore | ZkAclStore) -> Authorizer:
        return cls(store, config["super.users"], config["allow.everyone.if.no.acl.found"])

    def reload(self) -> None:
        self.table = self.store.load()  # one assignment: readers see old or new, whole

    def bindings(self) -> list[AclBinding]:
        return [AclBinding(p, e) for p, entries in self.table.items() for e in entries]

    def authorize(
        self, principal: str, host: str, operation: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        return authorize(
            self.bindings(),
            principal,
            host,
            operation,
            rtype,
            name,
            super_users=self.super_users,
            allow_if_no_acls=self.allow_if_no_acls,
        )

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, rtype: ResourceType
    ) -> bool:
        return authorize_any(
            self.bindings(),
            principal,
            host,
            operation,
            rtype,
            super_users=self.super_users,
            allow_if_no_acls=self.allow_if_no_acls,
        )

    def _change(self, bindings: Iterable[AclBinding], adding: bool) -> None:
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
        for pattern, entries in by_pattern.items():
            change, none = frozenset(entries), frozenset()
            self.store.update(pattern, change if adding else none, none if adding else change)
        self.reload()  # durable first, then in force

    def create(self, bindings: Iterable[AclBinding]) -> None:
        self._change(bindings, adding=True)

    def describe(self, selector: AclBindingFilter) -> list[AclBinding]:
        return sorted(b for b in self.bindings() if selector.matches(b))

    def delete(self, selectors: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove the ACLs each filter matches; per filter, the ACLs it removed."""
        matched = [self.describe(s) for s in selectors]
        self._change({b for found in matched for b in found}, adding=False)
        return matched
