"""SCRAM credentials: where the broker finds a user's salt and keys.

Kafka keeps SCRAM credentials in its metadata (ZooKeeper's `/config/users/<name>`, or the
KRaft metadata log), written by `kafka-configs.sh --alter --add-config
'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' --entity-type users --entity-name
alice`. The tool salts and hashes the password on the client side; only the credential
(`salt=...,stored_key=...,server_key=...,iterations=...`) is stored, never the password.

kafka-ref's embedded mode keeps them the same way in one JSON file in the metadata
directory (the first log dir), `__scram_credentials.json`:
`{"alice": {"SCRAM-SHA-256": "salt=...,stored_key=...,server_key=...,iterations=8192"}}`,
written by `kafka-ref users` (tools/users.py). The broker reads it again when it changes, so
a new user or password counts from the next authentication, as in Kafka (SEC-11).
In ZooKeeper mode the same file in the broker's own log dir is used for now.

Rules: SEC-11.
"""

from __future__ import annotations

import json
import os

from kafka_ref.files import write_atomically
from kafka_ref.security.scram import ScramCredential

CREDENTIALS_FILE = "__scram_credentials.json"


class CredentialStore:
    """The SCRAM credentials of one metadata directory, read again when the file changes."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = os.path.join(directory, CREDENTIALS_FILE)
        self._stamp: tuple[int, int] | None = None
        self._users: dict[str, dict[str, str]] = {}

    def _load(self) -> dict[str, dict[str, str]]:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            self._stamp, self._users = None, {}
            return self._users
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp != self._stamp:
            with open(self.path, encoding="utf-8") as f:
                self._users = json.load(f)
            self._stamp = stamp
        return self._users

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        """The user's credential for this mechanism, or None."""
        text = self._load().get(user, {}).get(mechanism)
        return ScramCredential.from_string(text) if text else None

    def describe(self) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations (what kafka-configs --describe shows)."""
        return {
            user: {m: ScramCredential.from_string(t).iterations for m, t in mechs.items()}
            for user, mechs in sorted(self._load().items())
        }

    def alter(
        self, user: str, add: dict[str, ScramCredential], delete: tuple[str, ...] = ()
    ) -> None:
        """Add or replace credentials of `user` and delete others; written atomically."""
        users = {u: dict(m) for u, m in self._load().items()}
        mechanisms = users.setdefault(user, {})
        for mechanism in delete:
            mechanisms.pop(mechanism, None)
        mechanisms.update({m: c.to_string() for m, c in add.items()})
        if not mechanisms:
            del users[user]
        data = json.dumps(users, indent=2, sort_keys=True).encode() + b"\n"
        write_atomically(self.path, data)
