"""What a KRaft node takes from the metadata image for its security and quotas: the ACLs,
the SCRAM credentials and the client quotas (Kafka: `AclPublisher`, `ScramPublisher`,
`DynamicClientQuotaPublisher`).

A broker of a ZooKeeper cluster reads these from ZooKeeper, a single broker from its
data directory. A KRaft node reads them from its image of the metadata log, the same on
every node: the active controller writes AccessControlEntryRecords,
UserScramCredentialRecords and ClientQuotaRecords (spec/kraft_controller.md KCTRL-12..14)
and each node folds them in. A change counts on a node once its published image holds
the committed record, never before (KBROKER-19), and the node's data directory plays no
part.

* **ACLs**: `ImageAclStore` gives the authorizer (security/authorizer.py) the table of the
  image's ACLs; `ImagePublisher` reloads it when a publication changes them.
* **SCRAM credentials**: `ImageCredentialStore` answers the SASL server's lookups from the
  published image, so a user created through any broker logs in on every broker.
* **Client quotas**: `ImagePublisher` puts the image's quotas in force in the broker's
  `QuotaManagers` when a publication changes them.

Writes never reach these stores: the broker forwards the requests that change them to the
active controller (server/forwarding_manager.py).

Rules: KBROKER-19.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.metadata.image import EMPTY, MetadataImage
from kafka_ref.quota.entity import QuotaEntity
from kafka_ref.quota.manager import QuotaManagers
from kafka_ref.security.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_ref.security.authorizer import Authorizer, Entries, Table
from kafka_ref.security.credentials import Users, _Store
from kafka_ref.security.scram import MECHANISM_TYPES, ScramCredential

logger = logging.getLogger("kafka_ref.server.kraft_publishers")

MECHANISMS = {code: name for name, code in MECHANISM_TYPES.items()}
Image = Callable[[], MetadataImage]  # the image to read, e.g. the broker's published one


class NotStoredHereError(RuntimeError):
    """A write to a store a KRaft node reads from its image: a bug, the broker forwards it."""


def acl_table(image: MetadataImage) -> Table:
    """The image's ACLs, grouped by resource pattern as the authorizer keeps them."""
    table: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for acl in image.acls.values():
        pattern = ResourcePattern(
            ResourceType(acl.resource_type), acl.resource_name, PatternType(acl.pattern_type)
        )
        table.setdefault(pattern, set()).add(
            AccessControlEntry(
                acl.principal,
                acl.host,
                AclOperation(acl.operation),
                AclPermissionType(acl.permission_type),
            )
        )
    return {pattern: frozenset(entries) for pattern, entries in table.items()}


def quota_configs(image: MetadataImage) -> dict[QuotaEntity, dict[str, float]]:
    """The image's client quotas by entity (a null name in a record is the default)."""
    return {
        QuotaEntity.from_components(list(entity)): dict(quotas)
        for entity, quotas in image.client_quotas.items()
    }


class ImageAclStore:
    """The authorizer's ACLs, from the image (Kafka: the `StandardAuthorizer`'s, fed by
    the `AclPublisher`)."""

    def __init__(self, image: Image) -> None:
        self.image = image

    def load(self) -> Table:
        return acl_table(self.image())

    def update(self, pattern: ResourcePattern, add: Entries, remove: Entries) -> None:
        raise NotStoredHereError("a KRaft node's ACLs change by the active controller's records")


class ImageCredentialStore(_Store):
    """The SCRAM credentials of the image (Kafka: the `CredentialProvider` the
    `ScramPublisher` updates)."""

    def __init__(self, image: Image) -> None:
        self.image = image

    def _users(self) -> Users:
        users: Users = {}
        for (mechanism, name), data in self.image().scram.items():
            credential = ScramCredential(
                data.salt, data.stored_key, data.server_key, data.iterations
            )
            users.setdefault(name, {})[MECHANISMS[mechanism]] = credential.to_string()
        return users

    def alter(self, *args: Any, **kwargs: Any) -> None:
        raise NotStoredHereError("a KRaft node's SCRAM users change by the controller's records")


class ImagePublisher:
    """Puts the published image's ACLs and client quotas in force on the broker."""

    def __init__(self, image: Image, authorizer: Authorizer | None, quotas: QuotaManagers) -> None:
        self.image = image
        self.authorizer = authorizer
        self.quotas = quotas
        self.applied: MetadataImage = EMPTY
        self.publish()

    def publish(self) -> None:
        """After each publication (`KRaftClusterMetadata.on_published`)."""
        old, new = self.applied, self.image()
        if self.authorizer is not None and old.acls != new.acls:
            self.authorizer.reload()
            logger.info("%d ACLs in force from the metadata image", len(new.acls))
        if old.client_quotas != new.client_quotas:
            self.quotas.replace(quota_configs(new))
        self.applied = new
