"""Offset ranges, their JSON, and how a read is cut into tasks (SPARK-5, SPARK-8), without Spark."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.common import TopicPartition
from kafka_ref.spark.offsets import OffsetRange, from_json, rate_limit, split_ranges, to_json

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


@pytest.mark.spec("SPARK-7")
def test_offsets_json_is_kafkas_layout_and_round_trips():
    offsets = {A0: 5, A1: 7, B0: 0}
    assert to_json(offsets) == {"a": {"0": 5, "1": 7}, "b": {"0": 0}}
    assert from_json(to_json(offsets)) == offsets
    assert from_json('{"a": {"1": 3}}') == {A1: 3}


@pytest.mark.spec("SPARK-4")
def test_a_range_pickles_as_a_plain_value():
    r = OffsetRange("a", 1, 10, 20)
    assert pickle.loads(pickle.dumps(r)) == r and r.size == 10


@pytest.mark.spec("SPARK-5")
def test_max_records_per_partition_cuts_big_ranges():
    ranges = split_ranges([OffsetRange("a", 0, 0, 25), OffsetRange("a", 1, 5, 9)], None, 10)
    assert ranges == [
        OffsetRange("a", 0, 0, 8),
        OffsetRange("a", 0, 8, 16),
        OffsetRange("a", 0, 16, 25),
        OffsetRange("a", 1, 5, 9),
    ]


@pytest.mark.spec("SPARK-5")
def test_min_partitions_splits_in_proportion_and_drops_empty_ranges():
    ranges = split_ranges(
        [OffsetRange("a", 0, 0, 90), OffsetRange("a", 1, 0, 10), OffsetRange("b", 0, 4, 4)], 10
    )
    sizes = {}
    for r in ranges:
        sizes.setdefault(r.partition, []).append(r.size)
    assert sizes == {0: [10] * 9, 1: [10]}  # 90% of the offsets get 90% of the tasks
    # Enough ranges already: nothing is split.
    assert split_ranges([OffsetRange("a", 0, 0, 90)], 1) == [OffsetRange("a", 0, 0, 90)]


@pytest.mark.spec("SPARK-5")
@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=6),
    st.one_of(st.none(), st.integers(1, 40)),
    st.one_of(st.none(), st.integers(1, 300)),
)
def test_splitting_covers_every_offset_exactly_once(bounds, min_partitions, max_records):
    ranges = [OffsetRange("t", p, min(a, b), max(a, b)) for p, (a, b) in enumerate(bounds)]
    pieces = split_ranges(ranges, min_partitions, max_records)
    for r in ranges:
        mine = [p for p in pieces if p.partition == r.partition]
        covered = [o for p in mine for o in range(p.from_offset, p.until_offset)]
        assert covered == list(range(r.from_offset, r.until_offset))
        assert all(p.size > 0 for p in mine)
        if max_records and not min_partitions:
            assert all(p.size <= max_records for p in mine)


@pytest.mark.spec("SPARK-8")
def test_rate_limit_shares_the_cap_by_lag_and_never_starves_a_partition():
    start = {A0: 0, A1: 100, B0: 50}
    end = {A0: 1000, A1: 101, B0: 50}
    limited = rate_limit(start, end, 100)
    # A0 lags 1000 of 1001: floor(99.9) = 99; A1 lags 1: a share of 0.0999 rounds up to 1.
    assert limited == {A0: 99, A1: 101, B0: 50}
    assert rate_limit(start, end, 10_000) == end
    assert rate_limit({A0: 5}, {A0: 5}, 10) == {A0: 5}
