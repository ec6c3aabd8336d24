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
from typing import NamedTuple

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
    finished = [
        (first, first + draw(st.integers(1, 60)))
        for first in draw(st.lists(st.integers(0, 250), max_size=4))
    ]
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
    for op, producer in draw(
        st.lists(
            st.tuples(st.sampled_from(["batch", "batch", "end", "plain"]), st.integers(1, 3)),
            max_size=40,
        )
    ) + [("end", p) for p in (1, 2, 3)]:
        if op == "batch":
            span = draw(st.integers(1, 3))
            txn_of.setdefault(producer, []).append(len(batches))
            batches.append(
                FetchedBatch(offset, offset + span - 1, producer, True, False, False, len(batches))
            )
            keep.append(True)
            offset += span
        elif op == "end" and producer in txn_of:
            abort = draw(st.booleans())
            members = txn_of.pop(producer)
            if abort:
                aborted.append((producer, batches[members[0]].base_offset, offset))
                for i in members:
                    keep[i] = False
            batches.append(FetchedBatch(offset, offset, producer, True, True, abort, len(batches)))
            keep.append(False)
            offset += 1
        elif op == "plain":  # an idempotent (or plain) batch outside any transaction
            # none, an idempotent producer's, or the id of a transactional producer (whose
            # transaction may be aborting): a non-transactional batch is always returned
            pid = draw(st.sampled_from([-1, 10 + producer, producer]))
            batches.append(FetchedBatch(offset, offset, pid, False, False, False, len(batches)))
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


# ------------------------------------------------------------------ the LSO, by hand
class LsoCase(NamedTuple):
    why: str
    open: tuple[int, ...]
    finished: tuple[tuple[int, int], ...]
    hw: int
    log_start: int
    expected: int


LSO_CASES = {
    "no-transaction-the-hw": LsoCase("no transaction at all: the LSO is the HW", (), (), 10, 0, 10),
    "no-transaction-log-start-above-0": LsoCase(
        "no transaction: the LSO is the HW, not the log start", (), (), 10, 4, 10
    ),
    "empty-log": LsoCase("an empty log: 0", (), (), 0, 0, 0),
    "one-open": LsoCase(
        "an open transaction holds the LSO at its first offset", (4,), (), 10, 0, 4
    ),
    "oldest-of-several-open": LsoCase(
        "the oldest open transaction, whatever the order given", (7, 4, 9), (), 10, 0, 4
    ),
    "open-above-the-hw": LsoCase(
        "a transaction opened above the HW: the LSO is capped at the HW", (12,), (), 10, 0, 10
    ),
    "open-at-the-hw": LsoCase("a transaction opened at the HW: the HW", (10,), (), 10, 0, 10),
    "marker-below-the-hw": LsoCase(
        "marker at 9, below the HW 10: finished, the LSO is the HW", (), ((3, 9),), 10, 0, 10
    ),
    "marker-at-the-hw": LsoCase(
        "marker at 10, not below the HW 10: unfinished, its first offset", (), ((3, 10),), 10, 0, 3
    ),
    "marker-above-the-hw": LsoCase(
        "marker above the HW: unfinished, its first offset counts", (), ((3, 15),), 10, 0, 3
    ),
    "unfinished-older-than-open": LsoCase(
        "the unfinished one (marker at the HW) is older than the open", (6,), ((2, 10),), 10, 0, 2
    ),
    "finished-older-than-open": LsoCase(
        "a finished transaction (marker below the HW) holds nothing", (6,), ((2, 5),), 10, 0, 6
    ),
    "log-start-above-open": LsoCase(
        "an open transaction below the log start: the log start", (3,), (), 10, 5, 5
    ),
    "log-start-above-unfinished": LsoCase(
        "an unfinished transaction below the log start: the log start", (), ((1, 12),), 10, 4, 4
    ),
    "log-start-below-open": LsoCase(
        "the log start below the oldest open transaction changes nothing", (6,), (), 10, 2, 6
    ),
}


@pytest.mark.spec("TXN-4")
@pytest.mark.parametrize("case", LSO_CASES.values(), ids=LSO_CASES.keys())
def test_the_lso_by_hand(case):
    inputs = (
        f"open transactions at {list(case.open)}, finished (first, marker) "
        f"{list(case.finished)}, HW {case.hw}, log start {case.log_start}"
    )
    got = call(
        inputs,
        isolation.last_stable_offset,
        list(case.open),
        list(case.finished),
        case.hw,
        case.log_start,
    )
    assert got == case.expected, f"{inputs}: {case.why}; expected LSO {case.expected}, got {got}"


@pytest.mark.spec("TXN-4")
@pytest.mark.parametrize(
    ("opened", "finished", "expected"),
    [
        pytest.param([4, 7], [(2, 5)], 4, id="the open transactions read once"),
        pytest.param([7], [(2, 12)], 2, id="the finished transactions read once"),
    ],
)
def test_the_lso_reads_each_list_of_transactions_once(opened, finished, expected):
    """Both lists are Iterables: a generator can be read only once."""
    inputs = (
        f"open transactions at {opened} and finished (first, marker) {finished} given as "
        "iterators (the contract says Iterable: each can be read once), HW 10, log start 0"
    )
    got = call(inputs, isolation.last_stable_offset, iter(opened), iter(finished), 10, 0)
    assert got == expected, f"{inputs}: expected LSO {expected}, got {got}"


# ------------------------------------------------------------------ read_committed, by hand
def txn(producer: int, base: int, last: int | None = None) -> FetchedBatch:
    """A transactional batch of `producer` at offsets base..last."""
    return FetchedBatch(
        base, base if last is None else last, producer, True, False, False, 100 * base
    )


def plain(producer_id: int, base: int) -> FetchedBatch:
    """A batch outside any transaction (producer id -1: not idempotent)."""
    return FetchedBatch(base, base, producer_id, False, False, False, 100 * base)


def commit(producer: int, at: int) -> FetchedBatch:
    return FetchedBatch(at, at, producer, True, True, False, 100 * at)


def abort(producer: int, at: int) -> FetchedBatch:
    return FetchedBatch(at, at, producer, True, True, True, 100 * at)


def described(batch: FetchedBatch) -> str:
    """A batch in words: "P1 batch 0-1", "COMMIT of P1 at 5", "plain batch 4 (no id)"."""
    span = f"{batch.base_offset}" + (
        f"-{batch.last_offset}" if batch.last_offset != batch.base_offset else ""
    )
    if batch.is_control:
        kind = "ABORT" if batch.is_abort_marker else "COMMIT"
        return f"{kind} of P{batch.producer_id} at {span}"
    if batch.is_transactional:
        return f"P{batch.producer_id} batch {span}"
    who = "no id" if batch.producer_id < 0 else f"id {batch.producer_id}"
    return f"plain batch {span} ({who})"


class FilterCase(NamedTuple):
    why: str
    batches: tuple[FetchedBatch, ...]
    aborted: tuple[tuple[int, int], ...]
    expected: tuple[int, ...]  # base offsets of the batches returned


FILTER_CASES = {
    "committed-transaction": FilterCase(
        "a committed transaction is returned, its marker is not",
        (txn(1, 0, 1), txn(1, 2), commit(1, 3)),
        (),
        (0, 2),
    ),
    "aborted-transaction": FilterCase(
        "every batch of an aborted transaction is dropped, the first and the later ones",
        (txn(1, 0), txn(1, 1, 2), abort(1, 3)),
        ((1, 0),),
        (),
    ),
    "markers-alone": FilterCase("markers are never returned", (commit(1, 0), commit(2, 1)), (), ()),
    "plain-batches-between": FilterCase(
        "batches outside any transaction are returned",
        (txn(1, 0), plain(-1, 1), txn(1, 2), abort(1, 3), plain(-1, 4)),
        ((1, 0),),
        (1, 4),
    ),
    "plain-batch-of-an-aborting-producer-id": FilterCase(
        "a non-transactional batch is returned even with the id of a producer whose "
        "transaction is aborted",
        (txn(1, 0), plain(1, 1), abort(1, 2)),
        ((1, 0),),
        (1,),
    ),
    "plain-batch-before-the-aborted-transaction": FilterCase(
        "a non-transactional batch with the id of a producer that aborts later is returned",
        (plain(1, 0), txn(1, 1), abort(1, 2)),
        ((1, 1),),
        (0,),
    ),
    "abort-marker-ends-the-aborted-transaction": FilterCase(
        "the ABORT marker ends the aborted transaction: the producer's next one commits",
        (txn(1, 0), abort(1, 1), txn(1, 2), commit(1, 3)),
        ((1, 0),),
        (2,),
    ),
    "answer-starts-at-the-abort-marker": FilterCase(
        "the aborted transaction began at 3, before the answer: offset 6 is committed",
        (abort(1, 5), txn(1, 6), commit(1, 7)),
        ((1, 3),),
        (6,),
    ),
    "answer-starts-mid-aborted-transaction": FilterCase(
        "the answer starts inside P1's aborted transaction (begun at 3): its batches go",
        (txn(1, 5), txn(1, 6), abort(1, 7), txn(2, 8), commit(2, 9)),
        ((1, 3),),
        (8,),
    ),
    "answer-ends-before-the-abort-marker": FilterCase(
        "the aborted list decides, even before the ABORT marker is in the answer",
        (txn(1, 0), txn(1, 1)),
        ((1, 0),),
        (),
    ),
    "answer-ends-before-the-commit-marker": FilterCase(
        "a transaction not in the aborted list is returned, its marker still to come",
        (txn(1, 0), txn(1, 1)),
        (),
        (0, 1),
    ),
    "single-record-aborted-batch": FilterCase(
        "an aborted transaction starts at the batch's offset: at or before its last offset",
        (txn(1, 4), abort(1, 5)),
        ((1, 4),),
        (),
    ),
    "aborted-transaction-starts-inside-the-batch": FilterCase(
        "the listed first offset 2 is inside P1's batch 0-4: at or before its last offset",
        (txn(1, 0, 4), abort(1, 5)),
        ((1, 2),),
        (),
    ),
    "other-producer-inside-an-aborted-transaction": FilterCase(
        "only P1's batches are aborted: P2's committed ones in between are returned",
        (txn(1, 0), txn(2, 1), txn(1, 2), abort(1, 3), txn(2, 4), commit(2, 5)),
        ((1, 0),),
        (1, 4),
    ),
    "an-abort-marker-ends-only-its-producer": FilterCase(
        "P1's ABORT marker does not end P2's aborted transaction",
        (txn(1, 0), txn(2, 1), abort(1, 2), txn(2, 3), abort(2, 4)),
        ((1, 0), (2, 1)),
        (),
    ),
    "committed-before-aborted-same-producer": FilterCase(
        "P1's transaction is aborted only from its first offset 2: the one before commits",
        (txn(1, 0), commit(1, 1), txn(1, 2), abort(1, 3)),
        ((1, 2),),
        (0,),
    ),
    "two-aborted-transactions-of-one-producer": FilterCase(
        "P1 aborts twice and commits in between",
        (txn(1, 0), abort(1, 1), txn(1, 2), commit(1, 3), txn(1, 4), abort(1, 5)),
        ((1, 0), (1, 4)),
        (2,),
    ),
    "aborted-list-not-sorted": FilterCase(
        "the aborted list comes in no particular order",
        (txn(1, 0), abort(1, 1), txn(2, 2), abort(2, 3), txn(3, 4), commit(3, 5)),
        ((2, 2), (1, 0)),
        (4,),
    ),
}


def offsets(batches) -> list[int]:
    return [b.base_offset for b in batches]


@pytest.mark.spec("CLIENT-14")
@pytest.mark.parametrize("case", FILTER_CASES.values(), ids=FILTER_CASES.keys())
def test_read_committed_by_hand(case):
    inputs = f"{', '.join(map(described, case.batches))}; aborted {list(case.aborted)}"
    got = call(
        inputs,
        lambda *a: list(isolation.read_committed_batches(*a)),
        iter(case.batches),
        list(case.aborted),
    )
    expected = [b for b in case.batches if b.base_offset in case.expected]
    unchanged = "" if offsets(got) != offsets(expected) else " (return them unchanged)"
    assert got == expected, (
        f"{inputs}: {case.why}; expected the batches at {offsets(expected)}, got "
        f"{offsets(got)}{unchanged}"
    )


@pytest.mark.spec("CLIENT-14")
def test_read_committed_reads_the_answer_one_batch_at_a_time():
    """Each batch is yielded before the next one is read: our consumer decodes an answer
    lazily and may stop taking records in the middle of it."""
    batches = [txn(1, 0), txn(2, 1), abort(1, 2), plain(-1, 3), txn(2, 4), commit(2, 5)]
    read = []

    def answer():
        for batch in batches:
            read.append(batch.base_offset)
            yield batch

    inputs = f"{', '.join(map(described, batches))}; aborted [(1, 0)]"
    returned = iter(call(inputs, isolation.read_committed_batches, answer(), [(1, 0)]))
    for expected in (1, 3, 4):
        got = call(inputs, next, returned, None)
        assert got is not None and got.base_offset == expected, (
            f"{inputs}: expected the batch at {expected} next, got "
            f"{None if got is None else got.base_offset}"
        )
        assert read[-1] == expected, (
            f"the batch at {expected} was returned after reading the answer up to offset "
            f"{read[-1]}: yield each batch before reading the next"
        )


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
    with Consumer(
        f"127.0.0.1:{port}", auto_offset_reset="earliest", isolation_level="read_committed"
    ) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got: list[bytes] = []
        deadline = time.monotonic() + 8
        while len(got) < len(committed) and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(0.5)]
        got += [r.value for r in consumer.poll(0.5)]  # nothing else may come
    assert sorted(got) == sorted(committed)


def call(inputs: str, function, *args):
    """function(*args); an exception it raises fails the test, naming the inputs."""
    try:
        return function(*args)
    except Exception as e:  # the student's code raised: say on what, below
        error = e
    # Outside the `except`, so that the report's first line is this one, not the traceback.
    message = f": {error}" if str(error) else ""
    pytest.fail(f"{inputs}: raised {type(error).__name__}{message}")
