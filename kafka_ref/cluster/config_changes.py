"""Dynamic broker configs and group configs in ZooKeeper, and the notices that tell every broker.

Kafka keeps every dynamic config in a znode per entity, and announces each change with a
*notice*: a sequential znode under `/config/changes` naming the entity that changed (Kafka:
`AdminZkClient.changeBrokerConfig`, `ZkData.ConfigEntityChangeNotificationZNode`):

    /config/brokers/<default>            {"version":1,"config":{"log.retention.ms":"1000"}}
    /config/brokers/1                    {"version":1,"config":{"num.io.threads":"4"}}
    /config/changes/config_change_0000000007   {"version":2,"entity_path":"brokers/1"}

The znode and its notice are written in one transaction. Every broker watches the children
of `/config/changes` (Kafka: `ZkNodeChangeNotificationListener` in `ZkConfigManager`); for
each notice newer than the last one it handled that names `brokers/<default>` or its own
`brokers/<id>`, it re-reads that entity's znode and applies the whole set (Kafka:
`BrokerConfigHandler`). A notice carries no values, only the name: reading the znode gives
the latest set, however many notices arrive, in whatever order. At start a broker reads
both znodes before it opens a log, so its logs open with the dynamic defaults (CONFIG-6).

**Group configs** (KIP-848, KIP-932) never lived in ZooKeeper in Kafka: a ZooKeeper-based
Kafka has no config resource GROUP. kafka-ref keeps them the way ZooKeeper-mode Kafka keeps
every other config entity, in `/config/groups/<group id>` with a notice naming
`groups/<group id>`; every broker re-reads the group's znode on such a notice, and reads
them all at start. An empty set deletes the znode (CONFIG-13).

Notices of other entity types (`topics/<t>`, ...) are left to their own watches. Kafka
deletes notices older than 15 minutes; kafka-ref leaves them (a few bytes per change).

Rules: CONFIG-6, CONFIG-13.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, RolledBackError
from kazoo.recipe.watchers import ChildrenWatch

from kafka_ref.cluster.zk_data import CONFIG_CHANGES, decode_topic_config, encode_topic_config

logger = logging.getLogger("kafka_ref.cluster.config_changes")

CONFIG_BROKERS = "/config/brokers"
CONFIG_GROUPS = "/config/groups"  # kafka-ref's own: Kafka on ZooKeeper had no group configs
DEFAULT_ENTITY = "<default>"  # Kafka's ConfigEntityName.Default: the cluster-wide level
NOTICE_PREFIX = "config_change_"


def broker_config_path(entity: str) -> str:
    return f"{CONFIG_BROKERS}/{entity}"


def group_config_path(group_id: str) -> str:
    return f"{CONFIG_GROUPS}/{group_id}"


def _read(zk: KazooClient, path: str) -> dict[str, str]:
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return {}
    return decode_topic_config(data)  # the same {"version":1,"config":{...}} as a topic's


def read_broker_config(zk: KazooClient, entity: str) -> dict[str, str]:
    """An entity's dynamic broker configs ({} if none were ever set)."""
    return _read(zk, broker_config_path(entity))


def read_group_config(zk: KazooClient, group_id: str) -> dict[str, str]:
    """A group's configs ({} if none are set)."""
    return _read(zk, group_config_path(group_id))


def read_group_configs(zk: KazooClient) -> dict[str, dict[str, str]]:
    """Every group's configs, read at start."""
    try:
        groups = zk.get_children(CONFIG_GROUPS)
    except NoNodeError:
        return {}
    return {g: configs for g in groups if (configs := read_group_config(zk, g))}


def _write(zk: KazooClient, entity_path: str, path: str, configs: dict[str, str] | None) -> None:
    """The entity's new set (None: its znode goes), and a notice naming it, in one
    transaction."""
    zk.ensure_path(path)
    txn = zk.transaction()
    if configs is None:
        txn.delete(path)
    else:
        txn.set_data(path, encode_topic_config(configs))
    notice = json.dumps({"version": 2, "entity_path": entity_path}).encode()
    txn.create(f"{CONFIG_CHANGES}/{NOTICE_PREFIX}", notice, sequence=True)
    for result in txn.commit():
        if isinstance(result, Exception) and not isinstance(result, RolledBackError):
            raise result


def write_broker_config(zk: KazooClient, entity: str, configs: dict[str, str]) -> None:
    """The entity's new set, and a notice naming it, in one transaction."""
    _write(zk, f"brokers/{entity}", broker_config_path(entity), configs)


def write_group_config(zk: KazooClient, group_id: str, configs: dict[str, str]) -> None:
    """The group's new set (empty: its znode goes), and a notice naming it."""
    _write(zk, f"groups/{group_id}", group_config_path(group_id), configs or None)


class BrokerConfigChangeListener:
    """Follows `/config/changes` for the broker entities one broker cares about, and for
    every group's configs."""

    def __init__(
        self,
        zk: KazooClient,
        entities: tuple[str, ...],
        on_change: Callable[[str, dict[str, str]], None],
        retrying: Callable[[Callable[[], object]], object],
        on_group_change: Callable[[str, dict[str, str]], None] = lambda group, configs: None,
    ) -> None:
        self.zk, self.entities, self.on_change, self.retrying = zk, entities, on_change, retrying
        self.on_group_change = on_group_change
        # Made before the broker reads the znodes at start: notices up to here are in what
        # it reads, and any later one is handled once the watch starts.
        children = zk.get_children(CONFIG_CHANGES)
        self.last_seen = max((_sequence(c) for c in children), default=-1)

    def start(self) -> None:
        ChildrenWatch(self.zk, CONFIG_CHANGES, self._on_notices)

    def _on_notices(self, children: list[str]) -> None:
        for child in sorted(children, key=_sequence):
            sequence = _sequence(child)
            if sequence <= self.last_seen:
                continue
            self.last_seen = sequence
            kind, name = self._entity(child)
            if kind == "brokers" and name in self.entities:
                configs = self.retrying(lambda e=name: read_broker_config(self.zk, e))
                logger.info("dynamic broker configs of %s changed: %s", name, configs)
                self.on_change(name, configs)
            elif kind == "groups":
                configs = self.retrying(lambda g=name: read_group_config(self.zk, g))
                logger.info("group configs of %s changed: %s", name, configs)
                self.on_group_change(name, configs)

    def _entity(self, child: str) -> tuple[str, str]:
        """The entity type and name a notice names ("", "" if the notice is gone)."""
        try:
            data, _ = self.retrying(lambda: self.zk.get(f"{CONFIG_CHANGES}/{child}"))
        except NoNodeError:
            return "", ""
        kind, _, name = str(json.loads(data or b"{}").get("entity_path", "")).partition("/")
        return kind, name


def _sequence(child: str) -> int:
    digits = child[len(NOTICE_PREFIX) :]
    return int(digits) if child.startswith(NOTICE_PREFIX) and digits.isdigit() else -1
