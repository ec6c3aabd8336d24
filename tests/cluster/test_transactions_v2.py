"""Transactions v2 on three brokers: the leader of the partition and the transaction
coordinator are different brokers, so the leader's AddPartitionsToTxn v5 and the
coordinator's WriteTxnMarkers v2 go over the wire (TXN-95, TXN-96). The late produce of an
aborted transaction, played there, is fenced (TXN-97).
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance import late_produce
from kafka_ref.conformance.history import Poll, check
from tests.cluster.test_controller import create_topic
from tests.cluster.test_transactions import full_isrs, txn_leader

pytestmark = pytest.mark.timeout(180)


@pytest.mark.spec("TXN-95", "TXN-97")
def test_a_v2_transaction_whose_leader_is_not_its_coordinator(cluster, topic_name):
    tid = f"tx2-{topic_name}"
    coordinator = txn_leader(cluster, tid)
    leader = next(b for b in (1, 2, 3) if b != coordinator)
    replicas = [leader, *(b for b in (1, 2, 3) if b != leader)]
    create_topic(cluster, topic_name, assignment=[replicas])
    full_isrs(cluster, (topic_name, 0))
    spoken, history = late_produce.run("127.0.0.1", cluster.brokers[leader].port, topic_name, tid)
    assert spoken == 2  # the cluster's brokers finalize transaction.version 2 by default
    result = check(history)
    assert result.valid, result
    (poll,) = [op for op in history.ops if isinstance(op, Poll)]
    assert [value for _, value in poll.reads[(topic_name, 0)]] == [b"t2-next"]
