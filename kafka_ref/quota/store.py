"""Where quota configs live: the metadata directory, or Kafka's ZooKeeper znodes.

A quota must survive a restart and, in a cluster, hold on every broker: each broker
measures its own clients, so each needs every quota. Kafka keeps them as *dynamic configs*
of the entity, in ZooKeeper:

    /config/clients/<client-id>           {"version":1,"config":{"producer_byte_rate":"1048576"}}
    /config/users/<user>                  (also where SCRAM credentials live)
    /config/users/<user>/clients/<client-id>
    /config/changes/config_change_<seq>   {"version":2,"entity_path":"users/alice/clients/app"}

A change writes the entity's znode, then a sequential *change notification* naming it
(Kafka: `AdminZkClient.changeConfigs`); every broker watches `/config/changes` and reloads
(Kafka's `DynamicConfigManager` reloads just the entity named; reloading all gives the same
result with a few more reads, as the ACL store does). `/config/users/<user>` is shared
with the SCRAM credentials (`SCRAM-SHA-256`, ...): a quota change reads the znode,
changes only quota keys, keeps every other key, and writes it back with the version it
read (a compare-and-set), retrying if someone wrote in between.

A single broker keeps the same `{entity path: config}` map in `__client_quotas.json` in its
metadata directory (the first log dir), rewritten atomically.

Values are strings in storage, as Kafka's configs are; they are numbers in force.

Rules: QUOTA-4.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from kafka_ref.files import write_atomically
from kafka_ref.quota.entity import QUOTA_KEYS, InvalidQuotaError, QuotaEntity

logger = logging.getLogger("kafka_ref.quota.store")

QUOTAS_FILE = "__client_quotas.json"
CONFIG = "/config"
CHANGES = "/config/changes"
Configs = dict[QuotaEntity, dict[str, float]]


def _as_numbers(config: dict[str, str]) -> dict[str, float]:
    """The quota keys of an entity's config, as numbers; other keys (SCRAM) are not ours."""
    out = {}
    for key in QUOTA_KEYS:
        if key in config:
            try:
                out[key] = float(config[key])
            except ValueError:
                logger.warning("ignoring %s=%r: not a number", key, config[key])
    return out


def _number_text(value: float) -> str:
    """1048576.0 -> "1048576" (as kafka-configs.sh stores a LONG), 12.5 -> "12.5"."""
    return str(int(value)) if value == int(value) else repr(value)


def changed(config: dict[str, str], set_: dict[str, float], remove: Iterable[str]) -> dict:
    """`config` with the quota keys in `set_` set and those in `remove` removed."""
    new = {k: v for k, v in config.items() if k not in set(remove)}
    new.update({k: _number_text(v) for k, v in set_.items()})
    return new


class FileQuotaStore:
    """One broker: `{entity path: {key: value}}` in the metadata directory."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = os.path.join(directory, QUOTAS_FILE)

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def load(self) -> Configs:
        return {QuotaEntity.from_path(p): _as_numbers(c) for p, c in self._read().items()}

    def alter(self, entity: QuotaEntity, set_: dict[str, float], remove: Iterable[str]) -> None:
        stored = self._read()
        config = changed(stored.get(entity.path, {}), set_, remove)
        if config:
            stored[entity.path] = config
        else:
            stored.pop(entity.path, None)
        write_atomically(self.path, json.dumps(stored, indent=2, sort_keys=True).encode() + b"\n")


class ZkQuotaStore:
    """A cluster: Kafka's config znodes and change notifications (`zk` is a KazooClient)."""

    def __init__(self, zk: Any) -> None:
        self.zk = zk
        for path in (f"{CONFIG}/clients", f"{CONFIG}/users", CHANGES):
            zk.ensure_path(path)

    def _config(self, path: str) -> dict[str, str]:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self.zk.get(f"{CONFIG}/{path}")
        except NoNodeError:
            return {}
        return json.loads(data).get("config", {}) if data else {}

    def load(self) -> Configs:
        paths = [f"clients/{c}" for c in self.zk.get_children(f"{CONFIG}/clients")]
        for user in self.zk.get_children(f"{CONFIG}/users"):
            paths.append(f"users/{user}")
            if self.zk.exists(f"{CONFIG}/users/{user}/clients"):
                clients = self.zk.get_children(f"{CONFIG}/users/{user}/clients")
                paths += [f"users/{user}/clients/{c}" for c in clients]
        out: Configs = {}
        for path in paths:
            try:
                numbers = _as_numbers(self._config(path))
                if numbers:
                    out[QuotaEntity.from_path(path)] = numbers
            except (InvalidQuotaError, ValueError) as err:
                logger.warning("ignoring /config/%s: %s", path, err)
        return out

    def alter(self, entity: QuotaEntity, set_: dict[str, float], remove: Iterable[str]) -> None:
        """Read-modify-write the entity's znode, keeping keys that are not quotas (SCRAM
        credentials in `/config/users/<user>`), then post the change notification."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        path, remove = f"{CONFIG}/{entity.path}", tuple(remove)
        while True:
            try:
                if self.zk.exists(path):
                    data, stat = self.zk.get(path)
                    stored = json.loads(data) if data else {}
                    config = changed(stored.get("config", {}), set_, remove)
                    body = {**stored, "version": 1, "config": config}
                    self.zk.set(path, json.dumps(body).encode(), version=stat.version)
                else:
                    config = changed({}, set_, remove)
                    body = {"version": 1, "config": config}
                    self.zk.create(path, json.dumps(body).encode(), makepath=True)
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # someone wrote in between: again, from what is there now
        notice = json.dumps({"version": 2, "entity_path": entity.path}).encode()
        self.zk.create(f"{CHANGES}/config_change_", notice, sequence=True)

    def watch(self, on_change: Callable[[], None]) -> None:
        """Call `on_change` (on kazoo's thread) whenever a change notification appears."""
        from kazoo.recipe.watchers import ChildrenWatch

        ChildrenWatch(self.zk, CHANGES, lambda _children: on_change())
