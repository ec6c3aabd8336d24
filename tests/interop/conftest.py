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
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

T_BASE = 1_700_000_000_000


@dataclass(frozen=True, order=True)
class Produced:
    partition: int
    offset: int
    key: bytes
    value: bytes
    timestamp: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """`kafka-ref broker` in a subprocess (its log goes to <data-dir>/../broker.log)."""

    def __init__(self, data_dir: str, port: int, configs: dict[str, object] | None = None) -> None:
        self.data_dir, self.port = data_dir, port
        self.configs = dict(configs or {})
        self.log_path = os.path.join(os.path.dirname(data_dir), "broker.log")
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        cmd = [sys.executable, "-m", "kafka_ref.cli", "broker", "--listen", self.bootstrap]
        if "log.dirs" not in self.configs:  # --data-dir, the one-directory shorthand, would win
            cmd += ["--data-dir", self.data_dir]
        for key, value in self.configs.items():
            cmd += ["--config", f"{key}={value}"]
        log = open(self.log_path, "a")  # noqa: SIM115  (the child keeps it)
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                raise RuntimeError(f"broker exited with {code}; see {self.log_path}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"broker did not accept connections within {timeout}s")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return 0 if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout)

    def restart(self, sig: int = signal.SIGTERM) -> int:
        code = self.stop(sig)
        self.start()
        return code

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()


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
