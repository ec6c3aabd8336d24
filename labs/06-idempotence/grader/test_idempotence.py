"""Lab 06 grader: the broker's sequence check and its five-batch window (IDEM-2..IDEM-8).

Your `check_client_batch` is checked alone against an oracle written here, on random
producer states (up to five remembered batches, sequences near the 2**31 wrap) and random
batches (in order, retried, reordered, from older and newer epochs). Then kafka-ref's own
log tests run with it: a real `Log` on disk appends, recognises retries of the last five
batches and answers their original offsets, fences zombies. Last, hypothesis plays
idempotent producers with five requests in flight, lost responses, retries, zombies, rolls
and restarts against a log, and checks that no value is ever written twice, each
producer's values are in send order, and every acknowledgement says where the value is.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from kafka_ref.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    KafkaError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from kafka_ref.log import producer_entry
from kafka_ref.log.producer_entry import BatchMetadata, ProducerStateEntry
from kafka_ref.record.batch import BatchHeader
from tests.unit.log.test_producer_state import IdempotentProducers
from tests.unit.log.test_producer_state import (
    test_a_duplicate_of_the_last_five_returns_the_original_offsets as log_duplicates,
)
from tests.unit.log.test_producer_state import (
    test_epochs_fence_older_producers_and_a_new_epoch_starts_at_zero as log_epochs,
)
from tests.unit.log.test_producer_state import (
    test_sequences_wrap_after_int32_max as log_wrap,
)

WRAP = 2**31
PID = 7


def plus(seq: int, n: int) -> int:
    return (seq + n) % WRAP


@st.composite
def entries(draw):
    """None, or a producer's state: an epoch and up to five consecutive batches."""
    if draw(st.integers(0, 5)) == 0:
        return None
    epoch = draw(st.integers(0, 3))
    seq = draw(st.sampled_from([0, 17, WRAP - 4, WRAP - 1]))
    offset = draw(st.integers(0, 1000))
    batches = deque(maxlen=5)
    for _ in range(draw(st.integers(0, 5))):
        span = draw(st.integers(0, 3))
        batches.append(BatchMetadata(plus(seq, span), offset + span, span, 0))
        seq, offset = plus(seq, span + 1), offset + span + 1
    return ProducerStateEntry(PID, epoch, batches)


@st.composite
def cases(draw):
    entry = draw(entries())
    epoch = (entry.producer_epoch if entry else 0) + draw(st.sampled_from([0, 0, 0, -1, 1]))
    known = [b.first_seq for b in entry.batches] if entry and entry.batches else []
    nxt = plus(entry.batches[-1].last_seq, 1) if entry and entry.batches else 0
    first = draw(st.sampled_from([*known, nxt, nxt, 0, 1, plus(nxt, 1), WRAP - 1, -1]))
    delta = draw(st.integers(0, 3))
    if known and draw(st.booleans()):  # an exact retry of a remembered batch
        batch = draw(st.sampled_from(list(entry.batches)))
        first, delta = batch.first_seq, batch.offset_delta
    header = BatchHeader(0, 49, -1, 2, 0, 0, delta, 0, 0, PID, epoch, first, delta + 1)
    return entry, header


def oracle(entry: ProducerStateEntry | None, epoch: int, first: int, delta: int):
    """What IDEM-2..IDEM-8 say: None (append), a BatchMetadata (duplicate), or an error."""
    if first < 0 or epoch < 0:
        return InvalidRecordError
    if entry is None:
        return None if first == 0 else UnknownProducerIdError
    if epoch < entry.producer_epoch:
        return InvalidProducerEpochError
    if epoch > entry.producer_epoch:
        return None if first == 0 else OutOfOrderSequenceError
    last = entry.batches[-1].last_seq if entry.batches else -1
    if first == last + 1 or (last == WRAP - 1 and first == 0):
        return None
    for batch in entry.batches:
        if (batch.first_seq, batch.last_seq) == (first, plus(first, delta)):
            return batch
    return OutOfOrderSequenceError


@pytest.mark.spec("IDEM-2", "IDEM-3")
@given(cases())
def test_the_check_appends_in_order_batches_and_finds_duplicates(case):
    entry, header = case
    expected = oracle(entry, header.producer_epoch, header.base_sequence, header.last_offset_delta)
    if isinstance(expected, type):
        return  # the errors are the next test's
    assert producer_entry.check_client_batch(PID, entry, header) == expected


@pytest.mark.spec("IDEM-4", "IDEM-5")
@given(cases())
def test_the_check_refuses_gaps_zombies_strangers_and_bad_batches(case):
    entry, header = case
    expected = oracle(entry, header.producer_epoch, header.base_sequence, header.last_offset_delta)
    if not isinstance(expected, type):
        assert producer_entry.check_client_batch(PID, entry, header) == expected
        return
    with pytest.raises(expected):
        producer_entry.check_client_batch(PID, entry, header)


# ------------------------------------------------------------------ the check, by hand
APPENDED = "appended"
FIRST_OFFSET = 100  # where the remembered batches were written, one after the other


def state(epoch: int, *spans: tuple[int, int]) -> ProducerStateEntry:
    """A producer's state: its epoch, and its remembered batches, oldest first, each
    (first sequence, last sequence), written from offset 100 on."""
    batches, offset = deque(maxlen=5), FIRST_OFFSET
    for first, last in spans:
        delta = (last - first) % WRAP
        batches.append(BatchMetadata(last, offset + delta, delta, 0))
        offset += delta + 1
    return ProducerStateEntry(PID, epoch, batches)


def batch(epoch: int, first: int, records: int = 1) -> BatchHeader:
    """The header of a new batch of `records` records, its first one's sequence `first`."""
    delta = records - 1
    return BatchHeader(0, 49, -1, 2, 0, 0, delta, 0, 0, PID, epoch, first, records)


def seqs(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}-{last}"


def described_state(entry: ProducerStateEntry | None) -> str:
    if entry is None:
        return "no state for the producer"
    spans = ", ".join(seqs(b.first_seq, b.last_seq) for b in entry.batches) or "none"
    return f"state epoch {entry.producer_epoch}, remembered batches seq {spans}"


def described_batch(header: BatchHeader) -> str:
    first, delta = header.base_sequence, header.last_offset_delta
    last = plus(first, delta) if first >= 0 else first + delta
    return f"batch epoch {header.producer_epoch} seq {seqs(header.base_sequence, last)}"


def described_answer(answer) -> str:
    if answer is None:
        return APPENDED
    if isinstance(answer, BatchMetadata):
        offsets = seqs(answer.first_offset, answer.last_offset)
        return f"a duplicate of seq {seqs(answer.first_seq, answer.last_seq)} (offsets {offsets})"
    if isinstance(answer, type):
        return answer.__name__
    if isinstance(answer, BaseException):
        return type(answer).__name__
    return repr(answer)


class CheckCase(NamedTuple):
    why: str
    entry: ProducerStateEntry | None
    header: BatchHeader
    expected: object  # APPENDED, the index of the remembered batch duplicated, or an error


FIVE = state(0, (0, 0), (1, 2), (3, 5), (6, 6), (7, 9))
END = WRAP - 1  # the last sequence before the wrap
INVALID, UNKNOWN = InvalidRecordError, UnknownProducerIdError
FENCED, OUT_OF_ORDER = InvalidProducerEpochError, OutOfOrderSequenceError

INVALID_CASES = {  # IDEM-8, checked first
    "negative-sequence": CheckCase("a negative sequence", None, batch(0, -1), INVALID),
    "negative-sequence-known-producer": CheckCase(
        "a negative sequence", state(0, (0, 0)), batch(0, -1), INVALID
    ),
    "negative-epoch": CheckCase("a negative epoch", None, batch(-1, 0), INVALID),
    "negative-epoch-known-producer": CheckCase(
        "a negative epoch, before the epochs are compared", state(0, (0, 0)), batch(-1, 1), INVALID
    ),
}
UNKNOWN_PRODUCER_CASES = {  # IDEM-7
    "unknown-producer-starts-at-0": CheckCase(
        "a producer without state starts at 0", None, batch(0, 0, 3), APPENDED
    ),
    "unknown-producer-later-epoch-at-0": CheckCase(
        "a producer without state starts at 0, whatever its epoch", None, batch(3, 0), APPENDED
    ),
    "unknown-producer-not-at-0": CheckCase(
        "a producer without state must start at 0", None, batch(0, 5), UNKNOWN
    ),
}
OLDER_EPOCH_CASES = {  # IDEM-5
    "older-epoch": CheckCase("an older epoch is fenced", state(2, (0, 0)), batch(1, 1), FENCED),
    "older-epoch-at-0": CheckCase(
        "an older epoch is fenced, even at 0", state(2, (0, 0)), batch(1, 0), FENCED
    ),
    "older-epoch-retry-is-a-zombie": CheckCase(
        "a retry from an older epoch is a zombie, not a duplicate",
        state(2, (0, 0), (1, 2)),
        batch(1, 1, 2),
        FENCED,
    ),
}
NEWER_EPOCH_CASES = {  # IDEM-6
    "newer-epoch-at-0": CheckCase(
        "a newer epoch starts at 0", state(1, (0, 4)), batch(2, 0), APPENDED
    ),
    "newer-epoch-carrying-on": CheckCase(
        "a newer epoch must start at 0, not carry on", state(1, (0, 4)), batch(2, 5), OUT_OF_ORDER
    ),
    "newer-epoch-old-sequences": CheckCase(
        "a newer epoch must start at 0: no retry of an older epoch's batch",
        state(1, (0, 1), (2, 4)),
        batch(2, 2, 3),
        OUT_OF_ORDER,
    ),
}
IN_ORDER_CASES = {  # IDEM-2
    "next-batch": CheckCase(
        "the batch after the last one", state(0, (0, 1), (2, 4)), batch(0, 5, 2), APPENDED
    ),
    "known-producer-no-batch-at-0": CheckCase(
        "no batch remembered (a marker bumped the epoch): 0 follows -1",
        state(3),
        batch(3, 0, 2),
        APPENDED,
    ),
    "after-int32-max-comes-0": CheckCase(
        "0 follows 2**31 - 1", state(0, (END - 2, END)), batch(0, 0, 2), APPENDED
    ),
    "a-batch-across-the-wrap": CheckCase(
        "a batch may wrap, here from 2**31 - 2 to 1",
        state(0, (END - 4, END - 2)),
        batch(0, END - 1, 4),
        APPENDED,
    ),
    "after-a-batch-across-the-wrap": CheckCase(
        "after a batch that wrapped to 1 comes 2", state(0, (END - 1, 1)), batch(0, 2), APPENDED
    ),
}
DUPLICATE_CASES = {  # IDEM-3: the index of the remembered batch the retry duplicates
    **{
        f"retry-of-the-{nth}-of-five": CheckCase(
            f"a retry of the {nth} remembered batch returns it",
            FIVE,
            batch(0, FIVE.batches[i].first_seq, FIVE.batches[i].offset_delta + 1),
            i,
        )
        for i, nth in enumerate(["oldest", "second", "third", "fourth", "newest"])
    },
    "retry-of-a-batch-across-the-wrap": CheckCase(
        "a retry of a batch that wrapped (its last sequence is 1) returns it",
        state(0, (END - 4, END - 2), (END - 1, 1), (2, 2)),
        batch(0, END - 1, 4),
        1,
    ),
    "retry-of-a-batch-ending-at-int32-max": CheckCase(
        "a retry of a batch ending at 2**31 - 1 returns it",
        state(0, (END - 2, END), (0, 0)),
        batch(0, END - 2, 3),
        0,
    ),
}
OUT_OF_ORDER_CASES = {  # IDEM-4
    "gap": CheckCase("a gap", state(0, (0, 1), (2, 4)), batch(0, 6), OUT_OF_ORDER),
    "known-producer-no-batch-not-at-0": CheckCase(
        "no batch remembered: only 0 follows (the producer is known)",
        state(3),
        batch(3, 4),
        OUT_OF_ORDER,
    ),
    "sequence-0-again": CheckCase(
        "0 again in the same epoch", state(0, (0, 1), (2, 4)), batch(0, 0, 1), OUT_OF_ORDER
    ),
    "inside-a-remembered-batch": CheckCase(
        "it ends like a remembered batch but starts inside it: not a retry",
        state(0, (0, 1), (2, 4)),
        batch(0, 3, 2),
        OUT_OF_ORDER,
    ),
    "longer-than-a-remembered-batch": CheckCase(
        "it starts like a remembered batch but is longer: not a retry",
        state(0, (0, 1), (2, 4)),
        batch(0, 2, 4),
        OUT_OF_ORDER,
    ),
    "shorter-than-a-remembered-batch": CheckCase(
        "it starts like a remembered batch but is shorter: not a retry",
        state(0, (0, 1), (2, 4)),
        batch(0, 2, 2),
        OUT_OF_ORDER,
    ),
    "retry-older-than-the-five": CheckCase(
        "a retry of a batch older than the five remembered",
        state(0, (5, 5), (6, 7), (8, 8), (9, 10), (11, 11)),
        batch(0, 3, 2),
        OUT_OF_ORDER,
    ),
}
CHECK_CASES = (
    INVALID_CASES
    | UNKNOWN_PRODUCER_CASES
    | OLDER_EPOCH_CASES
    | NEWER_EPOCH_CASES
    | IN_ORDER_CASES
    | DUPLICATE_CASES
    | OUT_OF_ORDER_CASES
)


def answer(case: CheckCase):
    """What the check answers: None, a remembered batch, or the error it raised."""
    try:
        return producer_entry.check_client_batch(PID, case.entry, case.header)
    except Exception as e:  # an error is an answer here
        return e


def check(case: CheckCase) -> None:
    """The check answers `case` as the rules say, or the test fails saying so in words."""
    if isinstance(case.expected, int):
        expected = case.entry.batches[case.expected]
    else:
        expected = None if case.expected == APPENDED else case.expected
    got = answer(case)
    if isinstance(expected, type):
        right = isinstance(got, expected)
    else:
        right = type(got) is type(expected) and got == expected
    unexpected = isinstance(got, Exception) and not isinstance(got, KafkaError) and str(got)
    detail = f" ({got})" if unexpected else ""
    assert right, (
        f"{described_state(case.entry)}; {described_batch(case.header)}: {case.why}; "
        f"expected {described_answer(expected)}, got {described_answer(got)}{detail}"
    )


@pytest.mark.spec("IDEM-8")
@pytest.mark.parametrize("case", INVALID_CASES.values(), ids=INVALID_CASES.keys())
def test_a_negative_sequence_or_epoch_is_an_invalid_record(case):
    check(case)


@pytest.mark.spec("IDEM-7")
@pytest.mark.parametrize("case", UNKNOWN_PRODUCER_CASES.values(), ids=UNKNOWN_PRODUCER_CASES.keys())
def test_a_producer_without_state_starts_at_0(case):
    check(case)


@pytest.mark.spec("IDEM-5")
@pytest.mark.parametrize("case", OLDER_EPOCH_CASES.values(), ids=OLDER_EPOCH_CASES.keys())
def test_an_older_epoch_is_fenced(case):
    check(case)


@pytest.mark.spec("IDEM-6")
@pytest.mark.parametrize("case", NEWER_EPOCH_CASES.values(), ids=NEWER_EPOCH_CASES.keys())
def test_a_newer_epoch_starts_at_0(case):
    check(case)


@pytest.mark.spec("IDEM-2")
@pytest.mark.parametrize("case", IN_ORDER_CASES.values(), ids=IN_ORDER_CASES.keys())
def test_the_next_batch_is_appended(case):
    check(case)


@pytest.mark.spec("IDEM-3")
@pytest.mark.parametrize("case", DUPLICATE_CASES.values(), ids=DUPLICATE_CASES.keys())
def test_a_retry_of_one_of_the_last_five_returns_it(case):
    check(case)


@pytest.mark.spec("IDEM-4")
@pytest.mark.parametrize("case", OUT_OF_ORDER_CASES.values(), ids=OUT_OF_ORDER_CASES.keys())
def test_anything_else_is_out_of_order(case):
    check(case)


@pytest.mark.spec("IDEM-4", "IDEM-5", "IDEM-7", "IDEM-8")
@pytest.mark.parametrize(
    "name", ["negative-sequence", "unknown-producer-not-at-0", "older-epoch", "gap"]
)
def test_every_error_says_what_was_wrong(name):
    """Each refusal carries a message for the producer, not only the error's code."""
    case = CHECK_CASES[name]
    inputs = f"{described_state(case.entry)}; {described_batch(case.header)}"
    got = answer(case)
    assert isinstance(got, case.expected), (
        f"{inputs}: expected {case.expected.__name__}, got {described_answer(got)}"
    )
    message = got.args[0] if got.args else ""
    assert message and message != got.code.name, (
        f"{inputs}: {case.expected.__name__} without a message; say what was wrong"
    )


@pytest.mark.spec("IDEM-3", "IDEM-4")
def test_a_real_log_returns_the_original_offsets_of_the_last_five(tmp_path):
    log_duplicates(tmp_path)


@pytest.mark.spec("IDEM-2", "IDEM-3")
def test_a_real_log_wraps_sequences(tmp_path):
    log_wrap(tmp_path)


@pytest.mark.spec("IDEM-5", "IDEM-6")
def test_a_real_log_fences_zombies(tmp_path):
    log_epochs(tmp_path)


@pytest.mark.spec("IDEM-3", "IDEM-4")
def test_hypothesis_finds_no_duplicate_and_no_reordering():
    run_state_machine_as_test(
        IdempotentProducers,
        settings=settings(
            max_examples=40,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
