"""One node of the quorum core (a voter, or an observer when its id is not among the voters),
on real files, for unit tests: its messages are collected."""

from __future__ import annotations

import os
import random

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.raft.control_records import data_batch
from kafka_ref.raft.election_state import FileQuorumStateStore
from kafka_ref.raft.kafka_raft_client import KafkaRaftClient
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.quorum_config import QuorumConfig

CONFIG = QuorumConfig(election_timeout_ms=100, fetch_timeout_ms=200, request_timeout_ms=50)
LOG_CONFIG = LogConfig(segment_bytes=64 * 1024, segment_index_bytes=4096)


def open_log(directory: str | os.PathLike) -> KafkaRaftLog:
    os.makedirs(directory, exist_ok=True)
    return KafkaRaftLog.open(directory, LOG_CONFIG, ManualClock(0))


def log_of(directory: str | os.PathLike, epochs: list[tuple[int, int]]) -> KafkaRaftLog:
    """A log holding, for each (epoch, n), n one-record batches of that epoch."""
    log = open_log(directory)
    for epoch, n in epochs:
        for _ in range(n):
            log.append_as_leader(data_batch([b"x"], epoch, 0), epoch)
    log.flush()
    return log


class Voter:
    """A `KafkaRaftClient` over the log and `quorum-state` file in `directory`."""

    def __init__(
        self, directory, local_id: int = 0, voters=(0, 1, 2), log=None, bootstrap=()
    ) -> None:
        self.directory = directory
        self.log = log or open_log(directory)
        self.store = FileQuorumStateStore(directory)
        self.sent: list[tuple[int, object]] = []
        self.client = KafkaRaftClient(
            local_id,
            voters,
            self.log,
            self.store,
            CONFIG,
            random.Random(0),
            lambda dst, message: self.sent.append((dst, message)),
            0,
            bootstrap=bootstrap,
        )

    def ask(self, source: int, request, now_ms: int = 0):
        """Deliver `request`; the response sent back to `source`."""
        self.sent.clear()
        self.client.handle(source, request, now_ms)
        sent = [m for dst, m in self.sent if dst == source]
        [response] = [m for m in sent if type(m).__name__.endswith("Response")]
        return response

    def restart(self) -> Voter:
        self.log.close()
        return Voter(self.directory, self.client.local_id, self.client.quorum.voters)
