"""A server in a subprocess: start it, wait until it listens, stop it, read its log.

The benches and the conformance suite run brokers (kafka-ref, Tansu) as child processes on
loopback ports. Each needs the same few steps: start the command with its output appended to
a log file, wait until the port accepts connections (failing early, with the log's tail, if
the process exits instead), and stop it with SIGTERM, or SIGKILL to simulate a crash,
killing it if it does not stop in time. `ServerProcess` does them once for all callers; each
passes the exception class its own callers expect.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time

START_SECONDS = 30.0
STOP_SECONDS = 15.0


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """`cmd` in a subprocess that listens on 127.0.0.1:`port`, its output in `log_path`."""

    def __init__(
        self,
        label: str,
        cmd: list[str],
        port: int,
        log_path: str,
        error: type[Exception] = RuntimeError,
    ) -> None:
        self.label, self.cmd, self.port, self.log_path = label, cmd, port, log_path
        self.error = error  # raised when the server does not come up
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = START_SECONDS) -> None:
        self.launch()
        self.wait_listening(timeout)

    def launch(self) -> None:
        """Start the process; it is not listening yet (`wait_listening`)."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def wait_listening(self, timeout: float = START_SECONDS) -> None:
        """Wait until the process accepts connections on its port; `error` if it exits or
        does not within `timeout` (then it is stopped)."""
        assert self.proc is not None, "not launched"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise self.error(
                    f"{self.label} exited with code {self.proc.returncode} at start; "
                    f"see {self.log_path}:\n{self.tail()}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise self.error(f"{self.label} did not listen on {self.bootstrap} within {timeout:g}s")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_SECONDS) -> int | None:
        """SIGTERM: a clean shutdown; SIGKILL: a crash. Killed if it has not stopped in time.

        Returns the exit code (None if it was never started)."""
        if self.proc is None:
            return None
        if self.alive:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        return self.proc.returncode

    def log(self) -> str:
        """Everything the server has written so far, over all its starts."""
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""
