"""Apache Kafka's Java producer 4.4 runs transactions v2 against kafka-ref (TXN-98).

The broker finalizes `transaction.version` 2 (its default), so the Java producer speaks
KIP-890 part 2: Produce v12 and TxnOffsetCommit v5 without AddPartitionsToTxn or
AddOffsetsToTxn, EndTxn v5 with the epoch bumped at every commit and abort. The harness's
`transactions_v2` runs commit, abort, commit on one partition with offsets for a group, and
reports the producer epoch the partition holds after each transaction (DescribeProducers)
and what a read_committed consumer reads.
"""

from __future__ import annotations

import uuid

import pytest

from tests.java_clients.test_producer import create_topic, topic_name


@pytest.mark.spec("TXN-98")
def test_the_java_producer_commits_and_aborts_with_transactions_v2(java, broker):
    topic, group = topic_name("txn-v2"), f"txn-v2-group-{uuid.uuid4().hex[:6]}"
    create_topic(java, broker, topic, 1)
    seen = java.call(
        "transactions_v2",
        bootstrap=broker.bootstrap,
        topic=topic,
        group=group,
        transactional_id=f"tx2-{uuid.uuid4().hex[:6]}",
        outcomes=["commit", "abort", "commit"],
        records=5,
    )
    first, *rest = seen["epochs"]
    # every end bumps the epoch: the markers, and the next transaction, carry the new one
    assert rest == [first + 1, first + 2], seen["epochs"]
    assert seen["values"] == [f"{n}-{i}" for n in (0, 2) for i in range(5)]
    assert seen["offsets"] == {f"{topic}-0": 2}  # the aborted transaction's 1 never counted
