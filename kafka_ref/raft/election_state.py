"""What a voter must never forget: its epoch, its vote, the leader it knows (`quorum-state`).

Raft's safety rests on two promises a voter keeps across crashes (Raft paper section 5.2,
Figure 2's "persistent state"): it never goes back to an older epoch, and it votes for at
most one candidate in an epoch. Both hold only if the epoch and the vote are on disk
*before* the vote is answered: a voter that crashed after saying yes and forgot it could
say yes again to another candidate of the same epoch, and two leaders would share an epoch.

Kafka keeps them in the `quorum-state` file of the metadata log's directory (Kafka:
`ElectionState`, written by `FileQuorumStateStore` as `QuorumStateData`'s JSON):

    {"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,
     "currentVoters":[{"voterId":0},{"voterId":1},{"voterId":2}],"data_version":0}

`leaderId` and `votedId` are -1 when unknown or not cast. The file is replaced atomically
with kafka_ref/files.py's `write_atomically` (tmp file, fsync, rename, fsync the directory),
so after a crash it is the old state or the new one, never a mix (RAFT-3).

Rules: RAFT-3.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Protocol

from kafka_ref.errors import KafkaStorageError
from kafka_ref.files import write_atomically

QUORUM_STATE_FILE = "quorum-state"
DATA_VERSION = 0  # QuorumStateData version 0: the static voter set in currentVoters
NOT_SET = -1


@dataclass(frozen=True, slots=True)
class ElectionState:
    """An epoch, the leader elected in it (-1: none known) and the candidate this voter
    voted for in it (-1: no vote cast). Kafka: `ElectionState`."""

    epoch: int
    leader_id: int = NOT_SET
    voted_id: int = NOT_SET
    voters: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        assert self.epoch >= 0, f"negative epoch {self.epoch}"

    @property
    def has_leader(self) -> bool:
        return self.leader_id != NOT_SET

    @property
    def has_voted(self) -> bool:
        return self.voted_id != NOT_SET

    def to_json(self) -> bytes:
        data = {
            "clusterId": "",
            "leaderId": self.leader_id,
            "leaderEpoch": self.epoch,
            "votedId": self.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in self.voters],
            "data_version": DATA_VERSION,
        }
        return json.dumps(data, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> ElectionState:
        doc = json.loads(data)
        if doc.get("data_version") != DATA_VERSION:
            raise ValueError(f"unknown data_version {doc.get('data_version')!r}")
        voters = tuple(v["voterId"] for v in doc.get("currentVoters") or ())
        return cls(doc["leaderEpoch"], doc["leaderId"], doc["votedId"], voters)


class QuorumStateStore(Protocol):
    """Where a voter keeps its `ElectionState` (Kafka: `QuorumStateStore`)."""

    def read_election_state(self) -> ElectionState | None:
        """The last state written, or None before the first write."""
        ...

    def write_election_state(self, state: ElectionState) -> None:
        """Replace the state durably: when this returns, a crash cannot undo it."""
        ...


class FileQuorumStateStore:
    """The `quorum-state` file of a directory (Kafka: `FileQuorumStateStore`)."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.path = os.path.join(os.fspath(directory), QUORUM_STATE_FILE)

    def read_election_state(self) -> ElectionState | None:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        try:
            return ElectionState.from_json(data)
        except (ValueError, KeyError, TypeError, AssertionError) as err:
            raise KafkaStorageError(f"malformed quorum state {self.path}: {err}") from None

    def write_election_state(self, state: ElectionState) -> None:
        write_atomically(self.path, state.to_json())
