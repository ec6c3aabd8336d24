"""`kafka-ref groups` against an in-process broker: list, describe, reset, delete, bad flags."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from kafka_ref.cli import main
from kafka_ref.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.unit.server.conftest import make_broker  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def env(make_broker):  # noqa: F811
    """A broker with topic t (2 partitions, 5 records each) and group g, which has consumed
    everything and committed t-0 at 5 and t-1 at 2; `member` is its live consumer."""
    broker = make_broker(
        props={"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 2}
    )
    bootstrap = f"127.0.0.1:{broker.port}"
    admin = Admin(bootstrap)
    admin.create_topics([NewTopic("t", 2, 1)])
    with Producer(bootstrap) as producer:
        for i in range(10):
            producer.send("t", b"v%d" % i, partition=i % 2, timestamp=1_000 * (i // 2 + 1))
        producer.flush()
    member = Consumer(
        bootstrap,
        group_id="g",
        client_id="reader",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=100,
    )
    member.subscribe(["t"])
    seen, deadline = 0, time.monotonic() + 15
    while seen < 10:
        assert time.monotonic() < deadline
        seen += len(member.poll(0.05))
    member.commit_sync({TopicPartition("t", 0): 5, TopicPartition("t", 1): 2})
    yield bootstrap, admin, member
    member.close()
    admin.close()


def groups(bootstrap: str, *argv: str) -> list[str]:
    return ["groups", "--bootstrap-server", bootstrap, *argv]


def table(out: str, header: str) -> list[list[str]]:
    """The rows (split on whitespace) of the table whose first column is `header`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [header])
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


@pytest.mark.spec("TOOLS-7")
def test_list_and_describe(env, capsys):
    bootstrap, _, member = env
    assert main(groups(bootstrap, "--list")) == 0
    assert capsys.readouterr().out.split() == ["g"]

    assert main(groups(bootstrap, "--describe", "--group", "g")) == 0
    out = capsys.readouterr().out
    (state,) = table(out, "GROUP")[:1]
    assert state[0] == "g" and state[-3:] == ["range", "Stable", "1"]
    lines = out.splitlines()
    header = next(line for line in lines if "CURRENT-OFFSET" in line).split()
    assert header == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    start = lines.index(next(line for line in lines if "CURRENT-OFFSET" in line))
    rows = [line.split() for line in lines[start + 1 :] if line.strip()]
    member_id = member.coordinator.generation.member_id
    assert [r[:6] for r in rows] == [
        ["g", "t", "0", "5", "5", "0"],
        ["g", "t", "1", "2", "5", "3"],
    ]
    assert all(r[6] == member_id and r[8] == "reader" for r in rows)

    assert main(groups(bootstrap, "--describe", "--group", "g", "--members")) == 0
    (m,) = table(capsys.readouterr().out, "GROUP")
    assert m[1] == member_id and m[3:] == ["reader", "2", "t-0,t-1"]

    assert main(groups(bootstrap, "--describe", "--group", "nobody")) == 1
    err = capsys.readouterr().err
    assert err == "kafka-ref groups: Consumer group 'nobody' does not exist.\n"


@pytest.mark.spec("TOOLS-8", "TOOLS-9")
def test_reset_offsets_dry_run_then_execute_only_when_inactive(env, capsys):
    bootstrap, admin, member = env
    reset = groups(bootstrap, "--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest")
    assert main([*reset, "--execute"]) == 1  # the group is Stable: refused
    captured = capsys.readouterr()
    assert captured.err == (
        "kafka-ref groups: Assignments can only be reset if the group 'g' is inactive, "
        "but the current state is Stable.\n"
    )
    assert main(groups(bootstrap, "--delete", "--group", "g")) == 1
    assert "NON_EMPTY_GROUP" in capsys.readouterr().err
    member.close()

    def committed() -> dict[int, int]:
        return {
            tp.partition: om.offset for tp, om in admin.list_consumer_group_offsets("g").items()
        }

    assert main(reset) == 0  # a dry run: the plan, nothing changed
    assert table(capsys.readouterr().out, "GROUP") == [["g", "t", "0", "0"], ["g", "t", "1", "0"]]
    assert committed() == {0: 5, 1: 2}
    assert main([*reset, "--execute"]) == 0
    assert committed() == {0: 0, 1: 0}

    to_offset = ["--reset-offsets", "--group", "g", "--topic", "t:1", "--to-offset", "99"]
    assert main(groups(bootstrap, *to_offset, "--execute")) == 0
    assert committed() == {0: 0, 1: 5}  # kept within the log: its end is 5

    # records of each partition carry timestamps 1000, 2000, ... 5000: 3000 is offset 2
    when = dt.datetime.fromtimestamp(3.0, dt.UTC).isoformat()
    by_time = ["--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", when]
    assert main(groups(bootstrap, *by_time, "--execute")) == 0
    assert committed() == {0: 2, 1: 2}
    later = dt.datetime.fromtimestamp(60.0, dt.UTC).isoformat()
    latest = ["--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", later]
    assert main(groups(bootstrap, *latest, "--execute")) == 0
    assert committed() == {0: 5, 1: 5}  # nothing that late: the log end
    capsys.readouterr()

    assert main(groups(bootstrap, "--delete", "--group", "g")) == 0
    assert (
        capsys.readouterr().out == "Deletion of requested consumer groups ('g') was successful.\n"
    )
    assert admin.list_groups() == []


@pytest.mark.spec("TOOLS-35", "OFFSET-15")
def test_delete_offsets_of_topics_no_member_reads(env, capsys):
    bootstrap, admin, member = env
    admin.create_topics([NewTopic("u", 2, 1)])
    member.commit_sync({TopicPartition("u", 0): 4, TopicPartition("u", 1): 1})
    argv = groups(bootstrap, "--delete-offsets", "--group", "g", "--topic", "t", "--topic", "u:0")
    assert main(argv) == 1  # the member subscribes to t
    captured = capsys.readouterr()
    assert captured.err == (
        "Error: Encounter some partition level error, see the follow-up details:\n"
    )
    assert table(captured.out, "TOPIC") == [
        ["t", "0", "Error:", "GROUP_SUBSCRIBED_TO_TOPIC"],
        ["t", "1", "Error:", "GROUP_SUBSCRIBED_TO_TOPIC"],
        ["u", "0", "Successful"],
    ]
    offsets = admin.list_consumer_group_offsets("g")
    assert {tp: o.offset for tp, o in offsets.items()} == {
        TopicPartition("t", 0): 5,
        TopicPartition("t", 1): 2,
        TopicPartition("u", 1): 1,
    }
    assert main(groups(bootstrap, "--delete-offsets", "--group", "g", "--topic", "u")) == 0
    out = capsys.readouterr().out
    assert out.startswith("Request succeed for deleting offsets from group g.\n")
    assert table(out, "TOPIC") == [["u", "0", "Successful"], ["u", "1", "Successful"]]
    assert set(admin.list_consumer_group_offsets("g")) == {TopicPartition("t", p) for p in (0, 1)}
    assert main(groups(bootstrap, "--delete-offsets", "--group", "g", "--topic", "nope")) == 1
    assert table(capsys.readouterr().out, "TOPIC") == [
        ["nope", "Not", "Provided", "Error:", "UNKNOWN_TOPIC_OR_PARTITION"]
    ]
    assert main(groups(bootstrap, "--delete-offsets", "--group", "none", "--topic", "u")) == 1
    assert capsys.readouterr().err == "Error: 'none' does not exist.\n"


@pytest.mark.spec("TOOLS-10", "TOOLS-3")
@pytest.mark.parametrize(
    "argv",
    [
        ["--list"],  # no --bootstrap-server
        ["--bootstrap-server", "h:1"],
        ["--bootstrap-server", "h:1", "--list", "--describe"],
        ["--bootstrap-server", "h:1", "--describe"],
        ["--bootstrap-server", "h:1", "--delete"],
        ["--bootstrap-server", "h:1", "--list", "--members"],
        ["--bootstrap-server", "h:1", "--reset-offsets", "--group", "g", "--to-earliest"],
        ["--bootstrap-server", "h:1", "--reset-offsets", "--group", "g", "--topic", "t"],
        [
            "--bootstrap-server",
            "h:1",
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            "t",
            "--all-topics",
            "--to-latest",
        ],
        [
            "--bootstrap-server",
            "h:1",
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            "t",
            "--to-latest",
            "--to-earliest",
        ],
        [
            "--bootstrap-server",
            "h:1",
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            "t:x",
            "--to-latest",
        ],
        [
            "--bootstrap-server",
            "h:1",
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            "t",
            "--to-offset",
            "-3",
        ],
        [
            "--bootstrap-server",
            "h:1",
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            "t",
            "--to-datetime",
            "yesterday",
        ],
        [
            "--bootstrap-server",
            "h:1",
            "--reset-offsets",
            "--group",
            "g",
            "--topic",
            "t",
            "--to-latest",
            "--execute",
            "--dry-run",
        ],
        ["--bootstrap-server", "h:1", "--delete-offsets", "--group", "g"],
        ["--bootstrap-server", "h:1", "--delete-offsets", "--topic", "t"],
        [
            "--bootstrap-server",
            "h:1",
            "--delete-offsets",
            "--group",
            "g",
            "--topic",
            "t",
            "--all-topics",
        ],
        ["--bootstrap-server", "h:1", "--delete-offsets", "--group", "g", "--topic", "t:-1"],
        ["--bootstrap-server", "h:1", "--describe", "--group", "g", "--topic", "t"],
        ["--bootstrap-server", "h:1", "--describe", "--group", "g", "--to-latest"],
        ["--bootstrap-server", "h:1", "--describe", "--group", "g", "--to-offset", "soon"],
    ],
)
def test_bad_flags_are_one_line_and_exit_2(argv, capsys):
    assert main(["groups", *argv]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("kafka-ref groups: ") and "\n" not in err
    assert "Traceback" not in err and captured.out == ""
