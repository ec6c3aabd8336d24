"""`kafka-ref share-groups` against an in-process broker: list, describe, reset, delete, bad
flags. The broker runs its own share group coordinator and share coordinator: a member's
heartbeats initialize the share-partitions, and what the tool resets or deletes is read
back from the share coordinator."""

from __future__ import annotations

import time

import pytest

from kafka_ref.cli import main
from kafka_ref.client import Admin, NewTopic, Producer
from kafka_ref.errors import ErrorCode
from kafka_ref.share.share_coordinator import READ_UNINITIALIZED
from tests.unit.server.conftest import Wire, make_broker  # noqa: F401  (the fixture)
from tests.unit.server.share_fixtures import heartbeat, join, read_state

pytestmark = pytest.mark.timeout(60)


def share_groups(bootstrap: str, *argv: str) -> list[str]:
    return ["share-groups", "--bootstrap-server", bootstrap, *argv]


@pytest.mark.spec("SHARE-49", "SHARE-51")
def test_list_describe_reset_and_delete_a_share_group(make_broker, capsys):  # noqa: F811
    broker = make_broker(props={"offsets.topic.num.partitions": 1})
    bootstrap = f"127.0.0.1:{broker.port}"
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic("t", 2, 1)])
    with Producer(bootstrap) as producer:
        for i in range(6):
            producer.send("t", b"v%d" % i, partition=i % 2)
        producer.flush()
    with Wire(broker.port) as wire:
        topic_id = wire.metadata(["t"], version=12, auto=False).topics[0].topic_id
        join(wire, "q", "m1", ["t"], partitions=2)  # assigned once t-0 and t-1 are initialized

        assert main(share_groups(bootstrap, "--list")) == 0
        assert capsys.readouterr().out.split() == ["q"]
        assert main(share_groups(bootstrap, "--describe", "--group", "q", "--members")) == 0
        out = capsys.readouterr().out
        assert "m1" in out and "t-0,t-1" in out
        assert main(share_groups(bootstrap, "--describe", "--group", "q", "--state")) == 0
        assert "Stable" in capsys.readouterr().out
        reset = ("--reset-offsets", "--group", "q", "--topic", "t:1", "--to-offset", "2")
        assert main(share_groups(bootstrap, *reset, "--execute")) == 1  # a member: refused
        assert "not empty" in capsys.readouterr().err

        assert heartbeat(wire, "q", "m1", -1).error_code == ErrorCode.NO_ERROR
        assert main(share_groups(bootstrap, *reset)) == 0  # a dry run
        captured = capsys.readouterr()
        assert "No action was performed" in captured.err
        assert main(share_groups(bootstrap, *reset, "--execute")) == 0
        capsys.readouterr()
        for _ in range(20):
            assert main(share_groups(bootstrap, "--describe", "--group", "q")) == 0
            rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
            if ["q", "t", "1", "2", "1"] in rows:
                break
            time.sleep(0.05)
        # t-0 starts at -1: no SPSO, no lag; t-1 at 2 with none done: 1 of its 3 records left
        assert rows == [["q", "t", "0", "-", "-"], ["q", "t", "1", "2", "1"]]
        assert read_state(broker, "q", topic_id, 1).start_offset == 2  # the share coordinator's

        assert (
            main(share_groups(bootstrap, "--delete-offsets", "--group", "q", "--topic", "t")) == 0
        )
        assert "Successful" in capsys.readouterr().out
        for partition in (0, 1):  # both states are gone from the share coordinator
            state = read_state(broker, "q", topic_id, partition)
            assert (state.error, state.error_message) == (
                ErrorCode.INVALID_REQUEST,
                READ_UNINITIALIZED,
            )
        assert main(share_groups(bootstrap, "--delete", "--group", "q")) == 0
        assert "was successful" in capsys.readouterr().out
        assert main(share_groups(bootstrap, "--describe", "--group", "q")) == 1
        assert "does not exist" in capsys.readouterr().err


@pytest.mark.spec("SHARE-49")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--list", "--delete"], "exactly one action"),
        (["--describe"], 'needs "[group]"'),
        (["--describe", "--group", "q", "--members", "--state"], "one of --members"),
        (["--list", "--members"], "with --describe only"),
        (["--reset-offsets", "--group", "q", "--to-earliest"], "needs --topic"),
        (["--reset-offsets", "--group", "q", "--topic", "t"], "exactly one of --to-earliest"),
        (["--reset-offsets", "--group", "q", "--topic", "t", "--to-offset", "x"], "--to-offset"),
        (["--delete-offsets", "--group", "q", "--topic", "t:0"], "whole topics"),
        (["--list", "--execute"], "work with --reset-offsets"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_code_2(argv, message, capsys):
    assert main(share_groups("127.0.0.1:1", *argv)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
