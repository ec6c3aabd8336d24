"""Lab 07 grader: the last stable offset (TXN-4) and the read_committed filter (CLIENT-14).

Both functions are checked alone: the LSO against an oracle written here on random open
and finished transactions, the filter on random logs of interleaved transactions (some
committed, some aborted, plain batches between them) against the truth the generator
knows, also for answers that start in the middle of a transaction. Then kafka-ref's own
tests run with them: a real `Log` on disk through transactions, rolls and crashes must
give the LSO of a model, our consumer's fetch answer must skip aborted batches until their
marker, and, end to end, librdkafka's transactional producer commits and aborts on a real
broker while our read_committed consumer must get every committed record and no other.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.client import Consumer, TopicPartition
from kafka_ref.log import isolation
from kafka_ref.log.isolation import FetchedBatch
from tests.interop.test_transactions import create_topic, produce_txn
from tests.interop.test_transactions import producer as transactional_producer
from tests.unit.client.test_consumer_fetch import (
    test_read_committed_skips_aborted_transactions_until_their_marker as fetcher_skips,
)
from tests.unit.log.test_txn_log import (
    test_lso_and_aborted_index_match_a_model_through_rolls_and_crashes as lso_model,
)
from tests.unit.log.test_txn_log import (
    test_the_lso_is_the_first_offset_of_the_oldest_open_transaction as lso_steps,
)


@st.composite
def transactions(draw):
    hw = draw(st.integers(0, 200))
    start = draw(st.integers(0, hw))
    opened = draw(st.lists(st.integers(0, 250), max_size=3))
    finished = [(first, first + draw(st.integers(1, 60)))
                for first in draw(st.lists(st.integers(0, 250), max_size=4))]  # fmt: skip
    return opened, finished, hw, start


@pytest.mark.spec("TXN-4")
@given(transactions())
def test_the_lso_is_the_oldest_unfinished_transaction_capped_at_the_hw(case):
    opened, finished, hw, start = case
    unstable = opened + [first for first, marker in finished if marker >= hw]
    expected = min(max(min(unstable), start), hw) if unstable else hw
    assert isolation.last_stable_offset(opened, finished, hw, start) == expected


@st.composite
def answers(draw):
    """A log of transactions and plain batches, the fate of each batch, and a fetch."""
    batches, keep, offset = [], [], 0
    txn_of: dict[int, list[int]] = {}  # producer -> indexes of its open transaction
    aborted: list[tuple[int, int, int]] = []  # (producer, first offset, marker offset)
    for op, producer in draw(st.lists(st.tuples(
            st.sampled_from(["batch", "batch", "end", "plain"]), st.integers(1, 3)),
            max_size=40)) + [("end", p) for p in (1, 2, 3)]:  # fmt: skip
        if op == "batch":
            span = draw(st.integers(1, 3))
            txn_of.setdefault(producer, []).append(len(batches))
            batches.append(FetchedBatch(offset, offset + span - 1, producer, True, False,
                                        False, len(batches)))  # fmt: skip
            keep.append(True)
            offset += span
        elif op == "end" and producer in txn_of:
            abort = draw(st.booleans())
            members = txn_of.pop(producer)
            if abort:
                aborted.append((producer, batches[members[0]].base_offset, offset))
                for i in members:
                    keep[i] = False
            batches.append(FetchedBatch(offset, offset, producer, True, True, abort,
                                        len(batches)))  # fmt: skip
            keep.append(False)
            offset += 1
        elif op == "plain":  # an idempotent (or plain) batch outside any transaction
            pid = draw(st.sampled_from([-1, 10 + producer]))
            batches.append(FetchedBatch(offset, offset, pid, False, False, False,
                                        len(batches)))  # fmt: skip
            keep.append(True)
            offset += 1
    start = draw(st.integers(0, max(0, len(batches) - 1)))
    first_offset = batches[start].base_offset if batches else 0
    listed = [(p, first) for p, first, marker in aborted if marker >= first_offset]
    listed = draw(st.permutations(listed))
    kept = [b for b, k in zip(batches[start:], keep[start:], strict=True) if k]
    return batches[start:], listed, kept


@pytest.mark.spec("CLIENT-14")
@given(answers())
def test_read_committed_returns_exactly_the_committed_and_plain_batches(case):
    batches, listed, expected = case
    got = list(isolation.read_committed_batches(iter(batches), listed))
    assert got == expected


@pytest.mark.spec("CLIENT-14")
def test_our_fetcher_skips_aborted_batches_until_their_marker():
    fetcher_skips()


@pytest.mark.spec("TXN-4")
def test_a_real_log_holds_the_lso_at_the_oldest_open_transaction(tmp_path):
    lso_steps(tmp_path)


@pytest.mark.spec("TXN-4")
def test_a_real_log_matches_a_model_through_rolls_and_crashes():
    lso_model()


@pytest.mark.spec("TXN-4", "CLIENT-14")
def test_a_real_broker_and_our_consumer_read_committed_records_only(kafka_ref_broker):
    port = kafka_ref_broker.port
    topic = create_topic(port)
    p = transactional_producer(port, f"lab07-{topic}")
    committed = produce_txn(p, topic, "c", 6, commit=True)
    produce_txn(p, topic, "a", 6, commit=False)
    committed += produce_txn(p, topic, "d", 6, commit=True)
    with Consumer(f"127.0.0.1:{port}", auto_offset_reset="earliest",
                  isolation_level="read_committed") as consumer:  # fmt: skip
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got: list[bytes] = []
        deadline = time.monotonic() + 8
        while len(got) < len(committed) and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        got += [r.value for r in consumer.poll(0.5)]  # nothing else may come
    assert sorted(got) == sorted(committed)
