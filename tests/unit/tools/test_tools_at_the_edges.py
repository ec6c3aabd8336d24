"""Every tool that takes --bootstrap-server, driven as a user drives it: a subprocess against
a real broker, or against an address where nothing listens (TOOLS-12, TOOLS-3).

Kafka's tools say at once, at WARN, that they cannot connect ("Connection to node -1 ...
could not be established"), keep trying until their timeout, then end with one line naming
what failed and a non-zero exit; and they log nothing else unless asked.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(120)
UNREACHABLE = "could not be established"


def tool(*argv: str, stdin: str = "", timeout: float = 60) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kafka_ref.cli", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def assert_ends_with_one_line(name: str, code: int, err: str) -> None:
    assert code != 0, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"kafka-ref {name}: "), err


COMMANDS = {  # each with a 3 s timeout where the tool has one
    "topics": (["topics", "--list", "--timeout-ms", "3000"], ""),
    "groups": (["groups", "--list", "--timeout-ms", "3000"], ""),
    "acls": (["acls", "--list", "--timeout-ms", "3000"], ""),
    "produce": (["produce", "--topic", "t", "--max-block-ms", "3000"], "a\n"),
    "consume": (["consume", "--topic", "t", "--timeout-ms", "3000"], ""),
    "configs": (
        [
            "configs",
            "--entity-type",
            "topics",
            "--entity-name",
            "t",
            "--describe",
            "--timeout-ms",
            "3000",
        ],
        "",
    ),
    "users": (["users", "--describe", "--timeout-ms", "3000"], ""),
    "transactions": (["transactions", "--timeout-ms", "3000", "list"], ""),
    "log-dirs": (["log-dirs", "--describe", "--timeout-ms", "3000"], ""),
    "leader-election": (
        [
            "leader-election",
            "--election-type",
            "preferred",
            "--all-topic-partitions",
            "--timeout-ms",
            "3000",
        ],
        "",
    ),
}


@pytest.mark.spec("TOOLS-12")
@pytest.mark.parametrize("name", COMMANDS)
def test_an_unreachable_bootstrap_server_is_said_at_once_and_ends_the_tool(name):
    argv, stdin = COMMANDS[name]
    address = f"127.0.0.1:{free_port()}"
    code, out, err, seconds = tool(argv[0], "--bootstrap-server", address, *argv[1:], stdin=stdin)
    assert_ends_with_one_line(name, code, err)
    assert seconds < 3 + 15, f"{name} took {seconds:.1f}s"
    if name != "topics":  # topics fails at its first refused connection, without retrying
        assert UNREACHABLE in err and address in err, err
    # kafka-log-dirs.sh says what it is about to do before it connects; the others say nothing
    assert out == (
        "Querying brokers for log directories information\n" if name == "log-dirs" else ""
    )


@pytest.mark.spec("TOOLS-12")
def test_the_tools_log_nothing_but_warnings_unless_asked(broker):
    """The client's INFO lines (producer id, JoinGroup, generation) stay out of a tool's
    stderr; the broker itself logs at INFO."""
    bootstrap = ["--bootstrap-server", broker.bootstrap]
    code, _, err, _ = tool("topics", *bootstrap, "--create", "--topic", "quiet")
    assert code == 0 and err == "", err
    code, _, err, _ = tool("produce", *bootstrap, "--topic", "quiet", stdin="a\nb\n")
    assert code == 0 and err == "", err
    code, out, err, _ = tool(
        "consume",
        *bootstrap,
        "--topic",
        "quiet",
        "--group",
        "g",
        "--from-beginning",
        "--max-messages",
        "2",
        "--timeout-ms",
        "20000",
    )
    assert code == 0 and out.split() == ["a", "b"], (out, err)
    assert err.strip() == "Processed a total of 2 messages", err
    code, _, err, _ = tool(
        "--log-level", "INFO", "produce", *bootstrap, "--topic", "quiet", stdin="c\n"
    )
    assert code == 0 and " INFO " in err, err


@pytest.mark.spec("TOOLS-12", "TOOLS-3")
@pytest.mark.parametrize(
    ("argv", "stdin"),
    [
        (["topics", "--describe", "--topic", "no-such-topic"], ""),
        (["groups", "--describe", "--group", "g", "--topic", "bad:x"], ""),
        (["produce", "--topic", "t", "--acks", "7"], "a\n"),
        (["produce", "--topic", "t", "--no-such-flag"], "a\n"),
        (["groups", "--describe"], ""),
    ],
)
def test_unknown_topics_and_bad_flags_end_with_one_line(broker, argv, stdin):
    code, _, err, _ = tool(*argv, "--bootstrap-server", broker.bootstrap, stdin=stdin)
    assert code in (1, 2), err
    assert_ends_with_one_line(
        argv[0], code, err.replace("kafka-ref: error:", f"kafka-ref {argv[0]}:")
    )
