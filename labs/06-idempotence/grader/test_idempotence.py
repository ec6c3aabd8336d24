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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from kafka_ref.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
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
    expected = oracle(entry, header.producer_epoch, header.base_sequence,
                      header.last_offset_delta)  # fmt: skip
    if isinstance(expected, type):
        return  # the errors are the next test's
    assert producer_entry.check_client_batch(PID, entry, header) == expected


@pytest.mark.spec("IDEM-4", "IDEM-5")
@given(cases())
def test_the_check_refuses_gaps_zombies_strangers_and_bad_batches(case):
    entry, header = case
    expected = oracle(entry, header.producer_epoch, header.base_sequence,
                      header.last_offset_delta)  # fmt: skip
    if not isinstance(expected, type):
        assert producer_entry.check_client_batch(PID, entry, header) == expected
        return
    with pytest.raises(expected):
        producer_entry.check_client_batch(PID, entry, header)


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
            max_examples=40, stateful_step_count=40, deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )  # fmt: skip
