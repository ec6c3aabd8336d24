"""Transactions over the wire: what a read_committed consumer may see, and fencing.

Each test drives transactional producers request by request (`TxnProducer`: InitProducerId,
AddPartitionsToTxn, transactional Produce, EndTxn) and reads the way a read_committed
consumer does: Fetch with isolation_level=1 up to the last stable offset, dropping the
records of the aborted transactions the broker lists (`read_committed`). The rules are
KIP-98's promises to applications: aborted records are never read, a transaction is all
or nothing across its partitions, a fenced producer writes nothing, and the LSO holds
readers at an open transaction until its marker.

EndTxn answers once the decision is durable; the markers follow. So a test waits, with a
deadline, for ListOffsets(latest, read_committed) to pass the marker before it reads.
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance.transactions import (
    FENCED,
    READ_COMMITTED,
    TxnProducer,
    read_committed,
    settled,
    wait_for_lso,
)
from kafka_ref.conformance.wire import batch

UNKNOWN_TOPIC, INVALID_TXN_STATE, OPERATION_NOT_ATTEMPTED = 3, 48, 55
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


@pytest.fixture
def topic(target, wire):
    target.require("transactions", "create-topics", "list-offsets")
    name = target.topic_name("txn")
    assert wire.create_topic(name, 2) == 0
    return name


def producer(target, hint: str) -> TxnProducer:
    p = TxnProducer(target.host, target.port, target.group_name(hint))
    assert p.init() == 0, "InitProducerId failed"
    return p


def decided(wire, topic: str, partition: int) -> None:
    """Wait until every transaction of the partition is decided (LSO = log end)."""
    lso, end = settled(wire, topic, partition)
    assert lso == end, f"the LSO stays at {lso}, below the log end {end}"


def values(records) -> list[bytes]:
    return [value for _, value in records]


@pytest.mark.spec("TXN-60")
def test_read_committed_never_returns_a_record_of_an_aborted_transaction(target, wire, topic):
    with producer(target, "kept") as kept, producer(target, "dropped") as dropped:
        kept.transaction(topic, {0: [b"c1-0"], 1: [b"c1-1"]}, commit=True)
        # an aborted transaction interleaved with a committed one in the same partitions
        assert dropped.add(topic, 0, 1) == 0
        assert dropped.produce(topic, 0, [b"a-0", b"a-0b"]).error_code == 0
        kept.transaction(topic, {0: [b"c2-0"], 1: [b"c2-1"]}, commit=True)
        assert dropped.produce(topic, 1, [b"a-1"]).error_code == 0
        assert dropped.end(commit=False) == 0
        kept.transaction(topic, {0: [b"c3-0"]}, commit=True)
    for partition, committed, aborted in (
        (0, [b"c1-0", b"c2-0", b"c3-0"], [b"a-0", b"a-0b"]),
        (1, [b"c1-1", b"c2-1"], [b"a-1"]),
    ):
        decided(wire, topic, partition)
        assert values(read_committed(wire, topic, partition)[0]) == committed
        written = [r.value for r in wire.read_all(topic, partition)]
        assert set(aborted) <= set(written), "the aborted records are in the log all the same"


@pytest.mark.spec("TXN-61")
def test_a_transaction_is_all_or_nothing_across_its_partitions(target, wire, topic):
    with producer(target, "both") as p:
        assert p.add(topic, 0, 1) == 0
        assert p.produce(topic, 0, [b"x-0"]).error_code == 0
        assert p.produce(topic, 1, [b"x-1", b"x-1b"]).error_code == 0
        for partition in (0, 1):  # undecided: none of it, in either partition
            assert read_committed(wire, topic, partition) == ([], 0)
        assert p.end(commit=True) == 0
        for partition, expected in ((0, [b"x-0"]), (1, [b"x-1", b"x-1b"])):
            decided(wire, topic, partition)
            assert values(read_committed(wire, topic, partition)[0]) == expected
        p.transaction(topic, {0: [b"y-0"], 1: [b"y-1"]}, commit=False)
        for partition, expected in ((0, [b"x-0"]), (1, [b"x-1", b"x-1b"])):
            decided(wire, topic, partition)
            assert values(read_committed(wire, topic, partition)[0]) == expected


@pytest.mark.spec("TXN-87")
def test_a_partition_that_does_not_exist_is_not_added_nor_are_the_others(target, wire, topic):
    with producer(target, "nowhere") as p:
        assert p.add_each(topic, 0, 7) == {0: OPERATION_NOT_ATTEMPTED, 7: UNKNOWN_TOPIC}
        # partition 0 was not added: no transaction began, there is nothing to commit
        assert p.end(commit=True) == INVALID_TXN_STATE
        assert wire.list_offset(topic, 0, -1).offset == 0, "no marker was written"


@pytest.mark.spec("TXN-88")
def test_a_transactional_batch_without_a_transactional_id_is_refused_whole(wire, topic):
    txn_batch = batch(
        [b"t"], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    answer = wire.produce(topic, 0, txn_batch)
    assert answer.error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # ... before the partition's own checks: one that does not exist answers the same
    assert wire.produce(topic, 9, txn_batch).error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert wire.list_offset(topic, 0, -1).offset == 0, "nothing was appended"


@pytest.mark.spec("TXN-62")
def test_a_fenced_producer_cannot_write_add_partitions_or_end_its_transaction(target, wire, topic):
    tid = target.group_name("fenced")
    with TxnProducer(target.host, target.port, tid) as zombie:
        assert zombie.init() == 0
        assert zombie.add(topic, 0) == 0
        assert zombie.produce(topic, 0, [b"z-1"]).error_code == 0
        with TxnProducer(target.host, target.port, tid) as successor:
            assert successor.init() == 0  # aborts the zombie's transaction, bumps the epoch
            assert (successor.producer_id, successor.epoch > zombie.epoch) == (
                zombie.producer_id,
                True,
            )
            assert zombie.produce(topic, 0, [b"z-2"]).error_code in FENCED
            assert zombie.add(topic, 1) in FENCED
            assert successor.add(topic, 0, 1) == 0
            assert successor.produce(topic, 1, [b"s-1"]).error_code == 0
            # the zombie's first batch in a partition where the new epoch has written
            assert zombie.produce(topic, 1, [b"z-3"]).error_code in FENCED
            assert zombie.end(commit=True) in FENCED
            assert successor.produce(topic, 0, [b"s-0"]).error_code == 0
            assert successor.end(commit=True) == 0
    for partition, expected in ((0, [b"s-0"]), (1, [b"s-1"])):
        decided(wire, topic, partition)
        assert values(read_committed(wire, topic, partition)[0]) == expected
        assert not {b"z-2", b"z-3"} & {r.value for r in wire.read_all(topic, partition)}


@pytest.mark.spec("TXN-63")
def test_the_lso_stops_at_an_open_transaction_and_moves_on_at_its_marker(target, wire, topic):
    assert wire.produce(topic, 0, batch([b"x0", b"x1"])).base_offset == 0
    with producer(target, "lso") as p:
        assert p.add(topic, 0) == 0
        assert p.produce(topic, 0, [b"t0", b"t1"]).base_offset == 2
        assert wire.produce(topic, 0, batch([b"x2"])).base_offset == 4
        assert wire.list_offset(topic, 0, -1).offset == 5  # read_uncommitted: the log end
        assert wire.list_offset(topic, 0, -1, isolation_level=READ_COMMITTED).offset == 2
        assert read_committed(wire, topic, 0) == ([(0, b"x0"), (1, b"x1")], 2)
        assert p.end(commit=True) == 0
        assert wait_for_lso(wire, topic, 0, 6) == 6  # past the marker at 5
        got, lso = read_committed(wire, topic, 0)
        assert (values(got), lso) == ([b"x0", b"x1", b"t0", b"t1", b"x2"], 6)
        p.transaction(topic, {0: [b"t2"]}, commit=False)  # an abort releases the LSO too
        assert wait_for_lso(wire, topic, 0, 8) == 8
        assert values(read_committed(wire, topic, 0, start=6)[0]) == []
