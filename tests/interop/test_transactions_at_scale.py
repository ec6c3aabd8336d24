"""Transactions at scale, across client libraries, judged by the history checker (TXN-65).

A confluent-kafka (librdkafka) transactional producer runs many transactions over two
partitions, commits and aborts mixed, and a kafka-python read_committed consumer reads the
topic; then the other way round. Everything both clients were told goes into one history
(kafka_ref/conformance/txn_workload.py), and the checker must find no aborted read, torn
transaction, lost committed write, duplicate or reordering, while the reader reads every
committed value. CI runs 50 transactions each way; KAFKA_REF_LONG=1 runs 1,000.
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance.history import ABORTED, COMMITTED, EndTxn, History, check
from kafka_ref.conformance.txn_workload import plan, produce, read_committed
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
    outcomes = {op.txn: op.outcome for op in history.ops if isinstance(op, EndTxn)}
    committed = {value for txn, values, _ in transactions if outcomes[txn] == COMMITTED
                 for _, value in values}  # fmt: skip
    assert set(outcomes.values()) == {COMMITTED, ABORTED}, "both outcomes are exercised"
    read = read_committed(reader, bootstrap, topic, 2, committed, history)
    result = check(history)
    assert result.valid, str(result)
    assert committed <= read, f"{len(committed - read)} committed values never read"
