"""The two follower truncation rules, on leader epoch caches built by hand."""

from __future__ import annotations

import pytest

from kafka_ref.replication.leader_epoch import LeaderEpochFileCache
from kafka_ref.replication.truncation import (
    TruncationRule,
    TruncationStep,
    high_watermark_truncation,
    truncation_step,
)


def cache(*entries):
    c = LeaderEpochFileCache(None)
    for epoch, offset in entries:
        c.assign(epoch, offset)
    return c


@pytest.mark.spec("TRUNC-1")
def test_high_watermark_rule_cuts_to_the_local_hw():
    assert high_watermark_truncation(3, 10) == 3
    assert high_watermark_truncation(12, 10) == 10
    assert TruncationRule.parse("high-watermark") is TruncationRule.HIGH_WATERMARK
    with pytest.raises(ValueError, match=r"replica\.truncation"):
        TruncationRule.parse("none")


@pytest.mark.spec("TRUNC-5")
def test_same_epoch_truncates_to_the_shorter_end():
    follower = cache((0, 0), (1, 5))
    # the leader's epoch 1 ends at 7 (it wrote 5, 6 in it); ours ends at our LEO 9
    assert truncation_step(follower, 9, 0, 1, 7) == TruncationStep(7, True)
    # the leader holds more of epoch 1 than we do: nothing to cut
    assert truncation_step(follower, 6, 0, 1, 12) == TruncationStep(6, True)


@pytest.mark.spec("TRUNC-6", "TRUNC-7")
def test_kafka_6361_needs_the_kip_279_iteration():
    """Offsets of KAFKA-6361's report: B holds epoch 0 at 0-9, its own epoch 1 at 10-15; A
    holds epoch 0 at 0-20 and leads epoch 2 from 21. B asks for the end of epoch 1."""
    a = cache((0, 0), (2, 21))
    b = cache((0, 0), (1, 10))
    answer = a.end_offset_for(1, 21)
    assert tuple(answer) == (0, 21)  # the largest epoch <= 1 that A knows, and its end
    kip101_only = min(answer.end_offset, 16)  # KIP-101 alone: min(leader end, own LEO)
    assert kip101_only == 16  # nothing cut: B keeps its epoch-1 records (the bug)
    step = truncation_step(b, 16, 0, answer.epoch, answer.end_offset)
    assert step == TruncationStep(10, True)  # own end of epoch 0, the shared epoch


@pytest.mark.spec("TRUNC-6")
def test_an_unknown_epoch_steps_back_and_asks_again():
    follower = cache((0, 0), (2, 10), (4, 20))
    # the leader's answer is epoch 3 (it never had 4), which we do not know either
    step = truncation_step(follower, 25, 0, 3, 22)
    assert step == TruncationStep(20, False)  # drop epoch 4, ask again about epoch 2
    follower.truncate_from_end(step.offset)
    assert follower.latest_epoch == 2


@pytest.mark.spec("TRUNC-5")
def test_undefined_answers():
    follower = cache((0, 0))
    assert truncation_step(follower, 5, 2, -1, -1) == TruncationStep(2, True)  # HW fallback
    assert truncation_step(follower, 5, 2, -1, 3) == TruncationStep(3, True)
    empty = cache()
    assert truncation_step(empty, 5, 0, 1, 3) == TruncationStep(3, True)
