"""Transactions at scale, across client libraries, judged by the history checker (TXN-65).

A confluent-kafka (librdkafka) transactional producer runs many transactions over two
partitions, commits and aborts mixed, and a kafka-python read_committed consumer reads the
topic; then the other way round. Everything both clients were told goes into one history
(kafka_ref/conformance/txn_workload.py), and the checker must find no aborted read, torn
transaction, lost committed write, duplicate or reordering, while the reader reads every
committed value. CI runs 50 transactions each way; KAFKA_REF_LONG=1 runs 1,000.

In the consume-transform-produce ring two workers each poll the other's partition inside
their transactions, so the checker also sees who read whose writes: no G1c cycle may
appear (a transaction reads only what committed before it).
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance.history import ABORTED, COMMITTED, EndTxn, History, Poll, Send, check
from kafka_ref.conformance.txn_workload import plan, produce, read_committed, ring
from tests.conftest import campaign
from tests.interop.test_transactions import create_topic

pytestmark = pytest.mark.timeout(900)


@pytest.mark.spec("TXN-65")
@pytest.mark.parametrize(
    "writer, reader", [("confluent-kafka", "kafka-python"), ("kafka-python", "confluent-kafka")]
)
def test_one_clients_transactions_read_committed_by_the_other(kafka_ref_broker, writer, reader):
    bootstrap = f"127.0.0.1:{kafka_ref_broker.port}"
    topic = create_topic(kafka_ref_broker.port, partitions=2)
    transactions = plan(campaign(50, 1000), 2, seed=98, tag=writer.split("-")[0])
    history = History()
    produce(writer, bootstrap, topic, transactions, history)
    judge(history, read_committed_by=reader, bootstrap=bootstrap, topic=topic)


def judge(history: History, *, read_committed_by: str, bootstrap: str, topic: str) -> None:
    """Read everything back with read_committed into the history, then check it."""
    outcomes = {op.txn: op.outcome for op in history.ops if isinstance(op, EndTxn)}
    committed = {
        (op.key, op.value)
        for op in history.ops
        if isinstance(op, Send) and outcomes.get(op.txn) == COMMITTED
    }
    assert set(outcomes.values()) == {COMMITTED, ABORTED}, "both outcomes are exercised"
    expected = {value for _, value in committed}
    read = read_committed(read_committed_by, bootstrap, topic, 2, expected, history)
    result = check(history)
    assert result.valid, str(result)
    assert expected <= read, f"{len(expected - read)} committed values never read"


@pytest.mark.spec("TXN-65", "HIST-19")
def test_consume_transform_produce_transactions_form_no_cycle(kafka_ref_broker):
    bootstrap = f"127.0.0.1:{kafka_ref_broker.port}"
    topic = create_topic(kafka_ref_broker.port, partitions=2)
    history = History()
    ring(bootstrap, topic, campaign(30, 300), history, seed=7)
    in_txn = [op for op in history.ops if isinstance(op, Poll) and op.txn is not None]
    assert in_txn, "the workers read each other's writes inside their transactions"
    judge(history, read_committed_by="confluent-kafka", bootstrap=bootstrap, topic=topic)
