"""A real kafka-ref broker process for the real clients, shared by the whole session.

`kafka_ref_broker` starts `python -m kafka_ref.cli broker --listen 127.0.0.1:<free port>
--data-dir <tmp>` in a subprocess and waits until it accepts connections; `restart()` stops
it (SIGTERM, or SIGKILL to simulate a crash) and starts it again on the same port and data
directory. `produced` remembers what each test produced (topic -> records), so the restart
tests can read everything back.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

import pytest

from kafka_ref.record.batch import iter_batch_headers
from kafka_ref.tools.server_process import ServerProcess, free_port

T_BASE = 1_700_000_000_000


@dataclass(frozen=True, order=True)
class Produced:
    partition: int
    offset: int
    key: bytes
    value: bytes
    timestamp: int


def consume_produced(consumer, topics, expected: int, seconds: float = 60) -> dict:
    """Poll `consumer` until `expected` records came (or `seconds` passed), then close it.

    Returns topic -> its records as `Produced`, sorted by partition and offset."""
    got: dict[str, list[Produced]] = {topic: [] for topic in topics}
    deadline, count = time.monotonic() + seconds, 0
    while count < expected and time.monotonic() < deadline:
        for m in consumer.consume(10_000, 0.5):
            assert m.error() is None, m.error()
            got[m.topic()].append(
                Produced(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1])
            )
            count += 1
    consumer.close()
    return {topic: sorted(records) for topic, records in got.items()}


def offset_inside_a_batch(data_dir: str, topic: str, partition: int, near: int) -> int:
    """An offset strictly inside a batch (not its first), from the first batch at or after
    `near` that holds more than one record, as the broker's segment files hold them."""
    directory = os.path.join(data_dir, f"{topic}-{partition}")
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        with open(os.path.join(directory, name), "rb") as f:
            for _, header in iter_batch_headers(f.read()):
                if header.last_offset >= near and header.last_offset > header.base_offset:
                    return max(near, header.base_offset + 1)
    raise AssertionError(f"no batch of {topic}-{partition} from {near} holds two records")


class BrokerProcess(ServerProcess):
    """`kafka-ref broker` in a subprocess (its log goes to <data-dir>/../broker.log)."""

    def __init__(self, data_dir: str, port: int, configs: dict[str, object] | None = None) -> None:
        self.data_dir = data_dir
        cmd = [sys.executable, "-m", "kafka_ref.cli", "broker", "--listen", f"127.0.0.1:{port}"]
        if "log.dirs" not in (configs or {}):  # --data-dir, the one-directory shorthand, wins
            cmd += ["--data-dir", data_dir]
        for key, value in (configs or {}).items():
            cmd += ["--config", f"{key}={value}"]
        log_path = os.path.join(os.path.dirname(data_dir), "broker.log")
        super().__init__("kafka-ref broker", cmd, port, log_path)

    def restart(self, sig: int = signal.SIGTERM) -> int | None:
        """Stop (SIGTERM, or SIGKILL for a crash) and start again; the exit code of the stop."""
        code = self.stop(sig)
        self.start()
        return code


@pytest.fixture(scope="session")
def kafka_ref_broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("interop")
    broker = BrokerProcess(str(base / "data"), free_port())
    broker.start()
    yield broker
    broker.stop()


# Consumers in the group tests use a 2 s session timeout, so that waiting for a dead
# member's session to expire stays short; the broker must allow it.
SESSION_TIMEOUT_MS = 2000
GROUP_BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}


@pytest.fixture(scope="session")
def group_broker(tmp_path_factory):
    """A broker for consumer-group tests: no initial rebalance delay, short sessions allowed."""
    base = tmp_path_factory.mktemp("groups")
    broker = BrokerProcess(str(base / "data"), free_port(), GROUP_BROKER_CONFIGS)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def produced() -> dict[str, list[Produced]]:
    """topic -> every record produced to it in this session (with its offset)."""
    return {}
