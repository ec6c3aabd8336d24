"""`kafka-ref transactions` and the admin calls under it, against an in-process broker:
list, describe and describe-producers show an open transaction; bad flags exit 2."""

from __future__ import annotations

import pytest

from kafka_ref.cli import main
from kafka_ref.client import Admin, NewTopic, Producer, TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from tests.unit.server.conftest import make_broker  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def env(make_broker):  # noqa: F811
    """A broker with topic t (2 partitions): app-done committed a transaction to t-0, app-open
    holds one open on t-1 (after two committed records there)."""
    broker = make_broker()
    bootstrap = f"127.0.0.1:{broker.port}"
    admin = Admin(bootstrap)
    admin.create_topics([NewTopic("t", 2, 1)])
    done = Producer(bootstrap, transactional_id="app-done")
    done.init_transactions(30)
    done.begin_transaction()
    done.send("t", b"a", partition=0)
    done.send("t", b"b", partition=1)
    done.send("t", b"c", partition=1)
    done.commit_transaction(30)
    stuck = Producer(bootstrap, transactional_id="app-open", transaction_timeout_ms=600_000)
    stuck.init_transactions(30)
    stuck.begin_transaction()
    stuck.send("t", b"open", partition=1).result(30)
    yield bootstrap, admin, done, stuck
    for client in (done, stuck, admin):
        client.close()


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[1:] if line.strip()]


@pytest.mark.spec("CLIENT-32")
def test_the_admin_lists_describes_and_shows_producers(env):
    _bootstrap, admin, done, stuck = env
    listed = {t.transactional_id: t for t in admin.list_transactions()}
    assert listed["app-open"].state == "Ongoing"
    assert listed["app-done"].state == "CompleteCommit"
    assert [t.transactional_id for t in admin.list_transactions(states=["Ongoing"])] == ["app-open"]
    open_pid = stuck.transaction_manager.producer_id_and_epoch.producer_id
    described = admin.describe_transactions(["app-open"])["app-open"]
    assert (described.state, described.producer_id) == ("Ongoing", open_pid)
    assert described.topic_partitions == (TopicPartition("t", 1),)
    assert described.transaction_start_time_ms > 0
    producers = {p.producer_id: p for p in admin.describe_producers(TopicPartition("t", 1))}
    assert producers[open_pid].current_transaction_start_offset == 3  # after a, b, c's marker
    done_pid = done.transaction_manager.producer_id_and_epoch.producer_id
    assert producers[done_pid].current_transaction_start_offset == -1
    assert producers[done_pid].last_sequence == 1
    with pytest.raises(KafkaError) as err:
        admin.describe_transactions(["nobody"])
    assert err.value.code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


@pytest.mark.spec("TOOLS-22")
def test_list_describe_and_describe_producers_print_kafkas_tables(env, capsys):
    bootstrap, _admin, _done, stuck = env
    base = ["transactions", "--bootstrap-server", bootstrap]
    assert main([*base, "list"]) == 0
    out = capsys.readouterr().out
    assert out.split()[:4] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    states = {row[0]: row[3] for row in rows(out)}
    assert states == {"app-done": "CompleteCommit", "app-open": "Ongoing"}
    assert main([*base, "describe", "--transactional-id", "app-open"]) == 0
    out = capsys.readouterr().out
    header, values = out.splitlines()[0].split(), rows(out)[0]
    assert header == [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "TransactionTimeoutMs",
        "CurrentTransactionStartTimeMs",
        "TransactionDurationMs",
        "TopicPartitions",
    ]
    described = dict(zip(header, values, strict=True))
    assert described["TransactionState"] == "Ongoing"
    assert described["TopicPartitions"] == "t-1"
    assert int(described["TransactionDurationMs"]) >= 0
    assert main([*base, "describe-producers", "--topic", "t", "--partition", "1"]) == 0
    out = capsys.readouterr().out
    assert out.split()[:6] == [
        "ProducerId",
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "LastTimestamp",
        "CurrentTransactionStartOffset",
    ]
    pid = str(stuck.transaction_manager.producer_id_and_epoch.producer_id)
    assert next(r for r in rows(out) if r[0] == pid)[5] == "3"


@pytest.mark.spec("TOOLS-22")
@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["describe"],
        ["describe-producers", "--topic", "t"],
        ["describe-producers", "--topic", "t", "--partition", "-1"],
    ],
)
def test_bad_arguments_are_one_line_and_exit_code_2(env, capsys, argv):
    bootstrap = env[0]
    assert main(["transactions", "--bootstrap-server", bootstrap, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kafka-ref transactions:") and "\n" not in err


@pytest.mark.spec("TOOLS-22")
def test_an_unknown_transactional_id_is_one_line_and_exit_code_1(env, capsys):
    argv = ["transactions", "--bootstrap-server", env[0], "describe", "--transactional-id", "x"]
    assert main(argv) == 1
    assert "TRANSACTIONAL_ID_NOT_FOUND" in capsys.readouterr().err
