"""The Java harness (tests/java): built once with Maven, cached, driven over a pipe.

tests/java is a small Maven project that inherits the pinned Kafka version from
kafka_ref/apache/pom.xml. `harness_jar()` builds it with `mvn -q -B package` the first time
and keeps the jar under the same cache as Kafka's classpath (`~/.cache/kafka-ref`), named by
the hash of its sources and of both poms, so an edited harness is built again and nothing
built is committed. A lock file keeps two test processes from building it at once.

`JavaHarness` runs it in `serve` mode on Kafka's classpath: `call(op, **arguments)` sends one
JSON request, relays the events it sends before its answer to `on_event`, and returns the
answer's `result`, or raises `JavaError` carrying the Java exception's class and message.
`wordcount_command(...)` is the command line of the Kafka Streams word count, which runs
until it is killed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import pathlib
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from kafka_ref.apache.classpath import POM, cache_dir, jvm_command, version

PROJECT = pathlib.Path(__file__).resolve().parent.parent / "java"
MAIN = "org.kafkaref.harness.Harness"
# Clients, not brokers: a quick start matters more than peak speed.
JVM_OPTS = ["-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]
CALL_SECONDS = 120.0


class JavaError(Exception):
    """A harness operation failed in Java: `error` is the exception's class name."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error, self.message = error, message


def _sources_digest() -> str:
    digest = hashlib.sha256(POM.read_bytes())
    for path in sorted([PROJECT / "pom.xml", *(PROJECT / "src").rglob("*.java")]):
        digest.update(str(path.relative_to(PROJECT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def harness_jar() -> str:
    """The harness jar, built by Maven unless a jar of these very sources is cached."""
    jar = cache_dir() / f"java-harness-{version()}-{_sources_digest()}.jar"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with open(jar.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it right now
        if jar.exists():
            return str(jar)
        mvn = shutil.which("mvn")
        assert mvn, "building the Java harness needs Maven: `make test` installs it"
        with tempfile.TemporaryDirectory() as build:
            done = subprocess.run(
                [
                    mvn,
                    "-q",
                    "-B",
                    "-f",
                    str(PROJECT / "pom.xml"),
                    "package",
                    f"-Dharness.build={build}",
                ],
                capture_output=True,
                text=True,
                timeout=900,
            )
            built = pathlib.Path(build) / "java-harness.jar"
            assert done.returncode == 0 and built.exists(), (done.stdout + done.stderr)[-3000:]
            partial = jar.with_suffix(".partial")
            shutil.copyfile(built, partial)
            partial.replace(jar)
    return str(jar)


def harness_command(*args: str) -> list[str]:
    return jvm_command(MAIN, *args, jvm_opts=JVM_OPTS, extra_classpath=(harness_jar(),))


def wordcount_command(**arguments: Any) -> list[str]:
    """The Streams word count: application_id, bootstrap, input, output, state_dir, props."""
    return harness_command("wordcount", json.dumps(arguments))


class JavaHarness:
    """One harness JVM in `serve` mode; its stderr (the clients' warnings) in `log_path`."""

    def __init__(self, log_path: str) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                harness_command("serve"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # the JVM has gone

    def call(
        self,
        op: str,
        on_event: Callable[[dict], None] | None = None,
        timeout: float = CALL_SECONDS,
        **arguments: Any,
    ) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.proc.stdin.flush()
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"{op}: no answer within {timeout:g}s\n{self.tail()}") from None
            if line is None:
                raise RuntimeError(f"the harness exited ({self.proc.poll()})\n{self.tail()}")
            message = json.loads(line)
            if "event" in message:
                if on_event is not None:
                    on_event(message["event"])
                continue
            if not message["ok"]:
                raise JavaError(message["error"], message["message"])
            return message["result"]

    def tail(self, lines: int = 30) -> str:
        with open(self.log_path, errors="replace") as log:
            return "".join(log.readlines()[-lines:])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
