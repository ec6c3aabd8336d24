"""The first commands a new user runs, run as they are written (TOOLS-11).

The README's first lines and the docs' getting-started page promise two commands that work
on a fresh machine: `make run` and `make test`. CI runs `make test` itself (`.ci/run` is that
command alone); this test runs `make run` on a free port with its own data directory, then
every command the getting-started page gives (the shell block and the Python snippet, with
the page's address replaced by the test's), and the command the README's first lines give.
A page that drifts from what the tools accept, or a `make run` that needs something a fresh
clone does not have, fails here.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_ref.tools.server_process import free_port

ROOT = Path(__file__).resolve().parent.parent
DOC_ADDRESS = "127.0.0.1:9092"


def shell_commands(page: str, after: str) -> list[str]:
    """The commands of the first indented block after the line containing `after`, one per
    command (a trailing backslash continues a command)."""
    lines = page[page.index(after) :].splitlines()[1:]
    block: list[str] = []
    for line in lines:
        if line.startswith("    "):
            block.append(line[4:])
        elif block and line.strip():
            break
    return [c.strip() for c in re.sub(r"\\\n\s*", " ", "\n".join(block)).splitlines() if c]


def python_snippet(page: str) -> str:
    return re.search(r"```python\n(.*?)```", page, re.S).group(1)


def wait_listening(port: int, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"make run exited:\n{log.read_text()[-3000:]}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"make run did not listen within {seconds}s:\n{log.read_text()[-3000:]}")


def run(command: str, address: str, timeout: float = 60) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["bash", "-c", command.replace(DOC_ADDRESS, address)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stdout}{done.stderr}"
    return done


@pytest.mark.spec("TOOLS-11")
def test_make_run_serves_every_getting_started_command(tmp_path):
    port = free_port()
    address = f"127.0.0.1:{port}"
    log = tmp_path / "make-run.log"
    env = dict(os.environ, LISTEN=address, DATA_DIR=str(tmp_path / "data"))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        wait_listening(port, proc, log)
        page = (ROOT / "docs" / "index.md").read_text()
        commands = shell_commands(page, "in a second terminal")
        assert [c.split()[1] for c in commands if c.startswith(".venv/bin/kafka-ref")] == [
            "topics",
            "consume",
            "groups",
        ] and any("| .venv/bin/kafka-ref produce" in c for c in commands), commands
        printed = {}
        for command in commands:
            if " consume " in command:  # the page's consumer runs until stopped: bound it
                command += " --max-messages 3 --timeout-ms 30000"
            printed[command.split()[1] if command.startswith(".venv") else "produce"] = run(
                command, address
            ).stdout
        consumed = printed["consume"].splitlines()
        assert sorted(line.split("\t", 1)[1] for line in consumed) == sorted(
            ["alice\thome", "bob\tcart", "alice\tcheckout"]
        ), consumed
        assert "readers" in printed["groups"] and "clicks" in printed["groups"]

        snippet = python_snippet(page).replace(DOC_ADDRESS, address)
        done = subprocess.run(
            [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=90
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("b'"), done.stdout  # a key, a value, a partition, an offset

        readme = (ROOT / "README.md").read_text()
        listing = re.search(r"`(\.venv/bin/kafka-ref topics [^`]*--list)`", readme).group(1)
        assert "clicks" in run(listing, address).stdout.split()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode in (0, 2, -signal.SIGTERM), log.read_text()[-3000:]
