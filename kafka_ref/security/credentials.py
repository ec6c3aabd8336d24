"""SCRAM credentials: where the broker finds a user's salt and keys.

Kafka keeps SCRAM credentials in its metadata: ZooKeeper's `/config/users/<name>`, or the
KRaft metadata log. An administrator adds them with `kafka-configs.sh --alter --add-config
'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' --entity-type users --entity-name
alice`, which since KIP-554 sends an AlterUserScramCredentials request: the tool salts and
hashes the password on the client side, and only the credential
(`salt=...,stored_key=...,server_key=...,iterations=...`) is stored, never the password.

kafka-ref keeps them in the same two places as its other metadata (SEC-11, SEC-20):

* `CredentialStore`, embedded mode: one JSON file in the metadata directory (the first log
  dir), `__scram_credentials.json`:
  `{"alice": {"SCRAM-SHA-256": "salt=...,stored_key=...,server_key=...,iterations=8192"}}`.
  The broker reads it again when it changes.
* `ZkCredentialStore`, ZooKeeper mode: Kafka's znode `/config/users/<name>`, one JSON
  `{"version":1,"config":{"SCRAM-SHA-256":"salt=...",...}}` whose config map may hold other
  keys too (client quotas, `producer_byte_rate`...): a change reads the znode, changes only
  the SCRAM keys and writes it back with the version it read, so nobody's keys are lost.
  In the same transaction a sequential notice `/config/changes/config_change_<seq>`
  (`{"version":2,"entity_path":"users/alice"}`) tells every broker; each keeps the
  credentials in memory (Kafka: `CredentialCache`) and reloads them when a notice appears,
  so a new password counts on every broker from the next authentication.

Both answer `lookup` (the SASL server's question), `describe` and `alter` (the
AlterUserScramCredentials and DescribeUserScramCredentials APIs, and `kafka-ref users`).

Rules: SEC-11, SEC-20.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from kafka_ref.files import write_atomically
from kafka_ref.security.scram import HASHES, ScramCredential

CREDENTIALS_FILE = "__scram_credentials.json"
CONFIG_USERS = "/config/users"
CONFIG_CHANGES = "/config/changes"
Users = dict[str, dict[str, str]]  # user -> mechanism -> Kafka's credential string


def _changed(mechanisms: dict[str, str], add: dict[str, ScramCredential], delete) -> dict:
    """One user's mechanisms after deleting `delete` and adding `add`."""
    result = {m: t for m, t in mechanisms.items() if m not in delete}
    result.update({m: c.to_string() for m, c in add.items()})
    return result


class _Store:
    """What both stores answer, from `_users()` (user -> mechanism -> credential string)."""

    def _users(self) -> Users:
        raise NotImplementedError

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        """The user's credential for this mechanism, or None."""
        text = self._users().get(user, {}).get(mechanism)
        return ScramCredential.from_string(text) if text else None

    def describe(self) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations (what kafka-configs --describe shows)."""
        return {
            user: {m: ScramCredential.from_string(t).iterations for m, t in sorted(mechs.items())}
            for user, mechs in sorted(self._users().items())
            if mechs
        }


class CredentialStore(_Store):
    """Embedded mode: the SCRAM credentials of one metadata directory, read again when the
    file changes."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = os.path.join(directory, CREDENTIALS_FILE)
        self._stamp: tuple[int, int] | None = None
        self._cache: Users = {}

    def _users(self) -> Users:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            self._stamp, self._cache = None, {}
            return self._cache
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp != self._stamp:
            with open(self.path, encoding="utf-8") as f:
                self._cache = json.load(f)
            self._stamp = stamp
        return self._cache

    def alter(
        self, user: str, add: dict[str, ScramCredential], delete: tuple[str, ...] = ()
    ) -> None:
        """Add or replace credentials of `user` and delete others; written atomically."""
        users = {u: dict(m) for u, m in self._users().items()}
        users[user] = _changed(users.get(user, {}), add, delete)
        if not users[user]:
            del users[user]
        data = json.dumps(users, indent=2, sort_keys=True).encode() + b"\n"
        write_atomically(self.path, data)


class ZkCredentialStore(_Store):
    """ZooKeeper mode: `/config/users/<name>` and `/config/changes` (kazoo is the client).
    `start()` loads every user and watches the change notices."""

    def __init__(self, zk: Any) -> None:
        self.zk = zk
        self._cache: Users = {}

    def start(self) -> None:
        from kazoo.recipe.watchers import ChildrenWatch

        for path in (CONFIG_USERS, CONFIG_CHANGES):
            self.zk.ensure_path(path)
        ChildrenWatch(self.zk, CONFIG_CHANGES, lambda _children: self.reload())

    def _users(self) -> Users:
        return self._cache

    def reload(self) -> None:
        """Read every user's SCRAM keys (on kazoo's thread when a notice arrives); the new
        table replaces the old in one assignment, so a lookup sees one or the other."""
        from kazoo.exceptions import NoNodeError

        users: Users = {}
        for user in self.zk.get_children(CONFIG_USERS):
            try:
                config = _config(self.zk.get(f"{CONFIG_USERS}/{user}")[0])
            except NoNodeError:  # deleted meanwhile
                continue
            scram = {k: v for k, v in config.items() if k in HASHES}
            if scram:
                users[user] = scram
        self._cache = users

    def alter(
        self, user: str, add: dict[str, ScramCredential], delete: tuple[str, ...] = ()
    ) -> None:
        """Change the user's SCRAM keys in its znode, keeping every other key, with the
        version read (a concurrent change by another broker or tool makes it read again),
        and the change notice."""
        self.update_config(user, lambda config: _changed(config, add, delete))
        self.reload()  # in force here at once; the notice tells the others

    def update_config(self, user: str, change: Callable[[dict[str, str]], dict]) -> None:
        """Read-modify-write of `/config/users/<user>`'s config map and its notice, in one
        transaction that fails if the znode changed since it was read (then again)."""
        from kazoo.exceptions import (
            BadVersionError,
            NodeExistsError,
            NoNodeError,
            RolledBackError,
        )

        path = f"{CONFIG_USERS}/{user}"
        notice = json.dumps({"version": 2, "entity_path": f"users/{user}"}).encode()
        while True:
            txn = self.zk.transaction()
            try:
                data, stat = self.zk.get(path)
                txn.set_data(path, _encode(change(_config(data))), version=stat.version)
            except NoNodeError:
                txn.create(path, _encode(change({})))
            txn.create(f"{CONFIG_CHANGES}/config_change_", notice, sequence=True)
            results = txn.commit()
            failed = [r for r in results if isinstance(r, Exception)]
            failed = [r for r in failed if not isinstance(r, RolledBackError)]
            if not failed:
                return
            if not isinstance(failed[0], BadVersionError | NodeExistsError | NoNodeError):
                raise failed[0]
            # someone changed the znode since it was read: again, from its new state


def _config(data: bytes | None) -> dict[str, str]:
    return dict(json.loads(data).get("config", {})) if data else {}


def _encode(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": config}, sort_keys=True).encode()
