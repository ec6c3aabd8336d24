"""Directory ids: which log directory of its broker holds each replica (KIP-858).

A broker with several `log.dirs` (JBOD) keeps each partition's log in one of them. In
KRaft the controller must know which one, or it could not tell which replicas a failed
directory took with it. So every log directory has an id, a random UUID written by
`kafka-ref storage format` into that directory's `meta.properties` (`directory.id`; Kafka:
`MetaProperties`, `MetaPropertiesEnsemble`). A broker registers with the ids of its online
directories (BrokerRegistration `LogDirs`), and a partition's registration names, for each
replica, the directory that holds it (PartitionRecord and PartitionChangeRecord
`Directories`, in the order of the replicas).

A few ids are reserved, never a real directory's (Kafka: `DirectoryId`, whose values
Kafka 4.4 writes):

* `MIGRATING` (the zero id): placed before directories were tracked (an older
  metadata.version or a ZooKeeper migration); the broker knows, the controller does not.
  It counts as online.
* `UNASSIGNED` (1): not chosen yet; the broker picks a directory when it creates the log
  and tells the controller with AssignReplicasToDirs. It counts as online.
* `LOST` (2): the directory was lost; the replica is offline.

A replica is *online* when its directory is one its broker registered as online, or
`UNASSIGNED` / `MIGRATING`. A broker that registered no directory at all (an old one) is
trusted: its replicas count as online until it says otherwise.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

MIGRATING = uuid.UUID(int=0)  # the zero id: what a record without directories means
UNASSIGNED = uuid.UUID(int=1)
LOST = uuid.UUID(int=2)


def reserved(directory: uuid.UUID) -> bool:
    """Whether `directory` is a reserved id, not a real directory's (Kafka reserves the
    ids below 100)."""
    return directory.int < 100


def is_online(directory: uuid.UUID, online_dirs: Collection[uuid.UUID]) -> bool:
    """Whether a replica in `directory` is online on a broker whose online directories
    are `online_dirs` (Kafka: `DirectoryId.isOnline`)."""
    if directory in (UNASSIGNED, MIGRATING):
        return True
    if directory == LOST:
        return False
    return not online_dirs or directory in online_dirs


def new_directory_id() -> uuid.UUID:
    """A random id that is none of the reserved ones (Kafka: `DirectoryId.random`)."""
    while True:
        directory = uuid.uuid4()
        if not reserved(directory):
            return directory
