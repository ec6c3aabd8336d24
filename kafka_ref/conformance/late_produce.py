"""The late produce: the anomaly transactions v2 closes (KIP-890 part 2), played on a broker.

A transactional producer writes a batch of transaction T1 to a partition and a second one
that the network holds back. It gives up on T1 and aborts. Its next transaction, T2,
writes to the same partition, and only then does the held-back batch of T1 arrive.

* Under transactions v1 the producer keeps its epoch from one transaction to the next. The
  late batch has the producer's id and epoch and the next sequence number, and the
  partition is in the producer's open transaction (T2 added it, so KIP-890 part 1's
  verification says yes): the leader appends it, *inside T2*. When T2 commits, a
  read_committed consumer reads a record of the aborted T1.
* Under transactions v2 the coordinator bumped the epoch when T1 ended and wrote T1's
  markers with the bumped epoch; T2 runs at that epoch. The late batch carries T1's older
  epoch and the leader fences it (INVALID_PRODUCER_EPOCH): T1's record is never read.

`run` plays the scenario with `TxnProducer` at the `transaction.version` the broker
finalized (ApiVersions), as the Java producer chooses, and records it as a history
(history.py): every send with its transaction and outcome, both ends, and a read_committed
poll of the partition after T2's commit. `check` of that history finds HIST-16's
aborted-read under v1 and nothing under v2 (TXN-97).

Rules: TXN-97.
"""

from __future__ import annotations

from kafka_ref.conformance.history import ABORTED, COMMITTED, FAILED, History
from kafka_ref.conformance.transactions import (
    TxnProducer,
    finalized_transaction_version,
    read_committed,
    settled,
)
from kafka_ref.conformance.wire import Wire

PRODUCER, READER = "producer", "reader"
T1, T2 = "T1", "T2"


def run(host: str, port: int, topic: str, transactional_id: str) -> tuple[int, History]:
    """Play the late produce on partition 0 of `topic` (which must exist): the transaction
    version the producer spoke, and the history."""
    key, history = (topic, 0), History()
    with Wire(host, port) as wire:
        transaction_version = finalized_transaction_version(wire)

    def sent(value: bytes, answer, txn: str) -> None:
        if answer.error_code == 0:
            history.send(PRODUCER, key, value, answer.base_offset, txn=txn)
        else:
            history.send(PRODUCER, key, value, status=FAILED, txn=txn)

    with TxnProducer(
        host, port, transactional_id, transaction_version=transaction_version
    ) as producer:
        assert producer.init() == 0, "InitProducerId failed"
        assert producer.add(topic, 0) == 0, "AddPartitionsToTxn failed"
        sent(b"t1-first", producer.produce(topic, 0, [b"t1-first"]), T1)
        late = producer.delayed_batch(topic, 0, [b"t1-late"])  # held back by the network
        assert producer.end(commit=False) == 0, "EndTxn(abort) failed"
        history.end_txn(PRODUCER, T1, ABORTED)
        settled(producer.leader, topic, 0)  # T1's abort marker is written
        error = producer.add(topic, 0)  # T2 begins
        assert error == 0, f"AddPartitionsToTxn failed: {error}"
        sent(b"t1-late", producer.send_batch(topic, 0, late), T1)  # T1's batch arrives
        sent(b"t2-next", producer.produce(topic, 0, [b"t2-next"]), T2)
        assert producer.end(commit=True) == 0, "EndTxn(commit) failed"
        history.end_txn(PRODUCER, T2, COMMITTED)
    with Wire(host, port) as reader:
        settled(reader, topic, 0)
        values, _ = read_committed(reader, topic, 0)
    reads = [(offset, bytes(value)) for offset, value in values]
    history.poll(READER, {key: reads}, read_committed=True)
    return transaction_version, history
