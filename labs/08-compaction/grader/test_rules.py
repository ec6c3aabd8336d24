"""Lab 08 grader, the two rules as functions: the offset map (COMPACT-1, COMPACT-5) and
whether a record is kept (COMPACT-1, COMPACT-5, COMPACT-6, COMPACT-9).

Your functions are called through kafka-ref's modules (kafka_ref/log/offset_map.py and
cleaner.py), where the seams put them. The oracles are the rules as spec/retention.md states
them, and examples worked out by hand.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.log import cleaner, offset_map

KEYS = st.sampled_from([b"a", b"b", b"c", b"d", b"e", None])


@st.composite
def dirty_sections(draw):
    """Batches in offset order, as the map sees them, with gaps (from earlier rounds) and
    transaction markers (no records); and a start offset somewhere in them."""
    batches, offset = [], draw(st.integers(0, 5))
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 9)) == 0:  # a marker
            batches.append((offset, []))
            offset += 1
            continue
        size = draw(st.integers(1, 5))
        present = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        records = [(offset + i, draw(KEYS)) for i in range(size) if present[i] or i == 0]
        batches.append((offset + size - 1, records))
        offset += size + draw(st.integers(0, 2))
    start = draw(st.integers(0, offset))
    return [b for b in batches if b[0] >= start], start


def expected_map(batches, start):
    """COMPACT-1: each key's last offset at or after start; the last batch's last offset."""
    offsets = {}
    for _, records in batches:
        for offset, key in records:
            if key is not None and offset >= start:
                offsets[key] = offset
    return offsets, (batches[-1][0] if batches else -1)


@pytest.mark.spec("COMPACT-1")
@given(section=dirty_sections())
def test_the_map_holds_each_keys_latest_offset(section):
    batches, start = section
    assert offset_map.build_offset_map(iter(batches), start, 1000) == expected_map(batches, start)


class Reading:
    """The batches, counting how many were read."""

    def __init__(self, batches):
        self.batches, self.read = batches, 0

    def __iter__(self):
        for batch in self.batches:
            self.read += 1
            yield batch


@pytest.mark.spec("COMPACT-5")
@given(section=dirty_sections(), max_keys=st.integers(1, 4))
def test_a_full_map_ends_the_round_early(section, max_keys):
    batches, start = section
    reading = Reading(batches)
    offsets, latest = offset_map.build_offset_map(reading, start, max_keys)
    # the rule, step by step: where does the map fill up?
    mapped, end, stopped_in = {}, -1, None
    for n, (last_offset, records) in enumerate(batches, 1):
        for offset, key in records:
            if key is None or offset < start:
                continue
            if len(mapped) >= max_keys:
                stopped_in = n
                break
            mapped[key], end = offset, offset
        if stopped_in:
            break
        end = last_offset
    assert (offsets, latest) == (mapped, end)
    if stopped_in:
        assert reading.read == stopped_in, "a full map must not read further batches"


def retain(offset, key, tombstone, latest, map_end, horizon, now):
    return cleaner.should_retain(offset, key, tombstone, latest, map_end, horizon, now)


@pytest.mark.spec("COMPACT-1", "COMPACT-5", "COMPACT-6", "COMPACT-9")
@given(
    offset=st.integers(0, 20),
    key=st.sampled_from([b"k", None]),
    tombstone=st.booleans(),
    latest=st.integers(-1, 20),
    map_end=st.integers(-1, 20),
    horizon=st.none() | st.integers(0, 20),
    now=st.integers(0, 20),
)
def test_a_record_is_kept_by_the_rule(offset, key, tombstone, latest, map_end, horizon, now):
    got = retain(offset, key, tombstone, latest, map_end, horizon, now)
    if offset > map_end:
        assert got, "past the map's end: not this round's to judge (COMPACT-5)"
    elif key is None:
        assert not got, "no key: dropped (COMPACT-9)"
    elif offset < latest:
        assert not got, "superseded by a later record of its key (COMPACT-1)"
    elif tombstone and horizon is not None and now >= horizon:
        assert not got, "a tombstone past its delete horizon goes (COMPACT-6)"
    else:
        assert got, "the key's latest record stays (COMPACT-1, COMPACT-6)"


# ------------------------------------------------------------------ the map, by hand
A, B, C, D = b"a", b"b", b"c", b"d"


def described_batches(batches) -> str:
    """ "batch to 2: a@0 b@1 a@2 | marker 3 | batch to 6: b@4 -@6" (-: no key)."""
    shown = []
    for last_offset, records in batches:
        if not records:
            shown.append(f"marker {last_offset}")
            continue
        keys = " ".join(f"{'-' if k is None else k.decode()}@{o}" for o, k in records)
        shown.append(f"batch to {last_offset}: {keys}")
    return " | ".join(shown) or "no batch"


def described_map(offsets) -> str:
    if not isinstance(offsets, dict):
        return repr(offsets)
    shown = (f"{k.decode() if isinstance(k, bytes) else k}@{o}" for k, o in offsets.items())
    return "{" + ", ".join(shown) + "}"


class MapCase(NamedTuple):
    why: str
    batches: list
    start: int
    max_keys: int
    expected: tuple[dict[bytes, int], int]


MAP_CASES = {  # COMPACT-1: what the map holds and covers
    "last-write-wins": MapCase(
        "each key maps to its last record",
        [(2, [(0, A), (1, B), (2, A)])],
        0,
        10,
        ({A: 2, B: 1}, 2),
    ),
    "last-write-wins-across-batches": MapCase(
        "each key maps to its last record, in any batch",
        [(1, [(0, A), (1, B)]), (3, [(2, B), (3, A)])],
        0,
        10,
        ({A: 3, B: 2}, 3),
    ),
    "from-start-on": MapCase(
        "the record at start is mapped, those before it are not",
        [(2, [(0, A), (1, B), (2, C)])],
        1,
        10,
        ({B: 1, C: 2}, 2),
    ),
    "no-key-not-mapped": MapCase(
        "a record without a key is not mapped",
        [(2, [(0, A), (1, None), (2, B)])],
        0,
        10,
        ({A: 0, B: 2}, 2),
    ),
    "a-batch-ending-in-a-gap": MapCase(
        "the map covers a batch up to its last offset, past its last record",
        [(4, [(0, A), (2, B)])],
        0,
        10,
        ({A: 0, B: 2}, 4),
    ),
    "a-marker-at-the-end": MapCase(
        "a marker (no records) is covered",
        [(1, [(0, A), (1, B)]), (2, [])],
        0,
        10,
        ({A: 0, B: 1}, 2),
    ),
    "markers-only": MapCase(
        "markers only: covered, nothing mapped", [(0, []), (1, [])], 0, 10, ({}, 1)
    ),
    "no-keys-only": MapCase(
        "records without keys only: covered, nothing mapped",
        [(1, [(0, None), (1, None)])],
        0,
        10,
        ({}, 1),
    ),
    "nothing-dirty": MapCase("no batch: nothing covered", [], 0, 10, ({}, -1)),
    "the-map-of-the-old-example": MapCase(
        "each key's last record at or after start 3, and the last batch's end",
        [(2, [(0, A), (1, B), (2, A)]), (3, []), (6, [(4, B), (6, None)])],
        3,
        10,
        ({B: 4}, 6),
    ),
}
FULL_MAP_CASES = {  # COMPACT-5: a full map ends the round early
    "full-stops-even-for-a-mapped-key": MapCase(
        "two keys fit: at offset 2 the map is full, though a is mapped already",
        [(1, [(0, A), (1, B)]), (3, [(2, A), (3, C)]), (4, [(4, D)])],
        0,
        2,
        ({A: 0, B: 1}, 1),
    ),
    "full-in-the-middle-of-a-batch": MapCase(
        "full at offset 2: covered up to the last record mapped, not the batch's end",
        [(3, [(0, A), (1, B), (2, C), (3, A)])],
        0,
        2,
        ({A: 0, B: 1}, 1),
    ),
    "no-more-than-max-keys": MapCase(
        "two keys fit, not three", [(2, [(0, A), (1, B), (2, C)])], 0, 2, ({A: 0, B: 1}, 1)
    ),
    "full-after-a-whole-batch": MapCase(
        "full at the next batch's first key: covered to the end of the last whole batch, 3",
        [(3, [(0, A), (1, B)]), (5, [(4, C)])],
        0,
        2,
        ({A: 0, B: 1}, 3),
    ),
    "full-after-a-marker": MapCase(
        "full at offset 3: the marker at 2 before it is covered",
        [(1, [(0, A), (1, B)]), (2, []), (4, [(3, C), (4, D)])],
        0,
        2,
        ({A: 0, B: 1}, 2),
    ),
    "full-but-no-keyed-record-follows": MapCase(
        "the map fills at offset 1, but only records without keys follow: all is covered",
        [(2, [(0, A), (1, B), (2, None)]), (4, [(3, None), (4, None)])],
        0,
        2,
        ({A: 0, B: 1}, 4),
    ),
    "full-exactly-at-the-end": MapCase(
        "the map fills with the last record: the whole section is covered",
        [(1, [(0, A)]), (4, [(3, B)])],
        0,
        2,
        ({A: 0, B: 3}, 4),
    ),
}


def check_map(case: MapCase) -> None:
    inputs = f"{described_batches(case.batches)}; start {case.start}, max_keys {case.max_keys}"
    got = call(inputs, offset_map.build_offset_map, iter(case.batches), case.start, case.max_keys)
    offsets, latest = case.expected
    shown = got
    if isinstance(got, tuple) and len(got) == 2:
        shown = f"{described_map(got[0])} covering to {got[1]}"
    assert got == case.expected, (
        f"{inputs}: {case.why}; expected {described_map(offsets)} covering to {latest}, got {shown}"
    )


@pytest.mark.spec("COMPACT-1")
@pytest.mark.parametrize("case", MAP_CASES.values(), ids=MAP_CASES.keys())
def test_the_map_by_hand(case):
    check_map(case)


@pytest.mark.spec("COMPACT-5")
@pytest.mark.parametrize("case", FULL_MAP_CASES.values(), ids=FULL_MAP_CASES.keys())
def test_a_full_map_by_hand(case):
    check_map(case)


@pytest.mark.spec("COMPACT-5")
def test_a_full_map_reads_no_further_batch():
    batches = [(1, [(0, A), (1, B)]), (3, [(2, C)]), (4, [(4, D)]), (5, [(5, A)])]
    reading = Reading(batches)
    inputs = f"{described_batches(batches)}; start 0, max_keys 2"
    call(inputs, offset_map.build_offset_map, reading, 0, 2)
    assert reading.read == 2, (
        f"{inputs}: the map is full at offset 2, in the second batch, yet {reading.read} "
        "batches were read: stop at once, the rest of the log is the next round's"
    )


# ------------------------------------------------------------------ the rule, by hand
class RetainCase(NamedTuple):
    why: str
    offset: int
    key: bytes | None
    tombstone: bool
    latest: int
    map_end: int
    horizon: int | None
    now: int
    keep: bool


KEEP, DROP = True, False
MAP_END_CASES = {  # COMPACT-5: past the map's end, nothing is judged
    "past-the-map-end": RetainCase("past the map's end: kept", 12, A, False, -1, 10, None, 0, KEEP),
    "no-key-past-the-map-end": RetainCase(
        "past the map's end, even without a key: not this round's",
        12,
        None,
        False,
        -1,
        10,
        None,
        0,
        KEEP,
    ),
    "expired-tombstone-past-the-map-end": RetainCase(
        "past the map's end, even a tombstone past its horizon", 12, A, True, -1, 10, 5, 100, KEEP
    ),
    "no-key-at-the-map-end": RetainCase(
        "at the map's end the record is judged: no key, dropped",
        10,
        None,
        False,
        -1,
        10,
        None,
        0,
        DROP,
    ),
    "expired-tombstone-at-the-map-end": RetainCase(
        "at the map's end the record is judged: a tombstone past its horizon goes",
        10,
        A,
        True,
        10,
        10,
        5,
        100,
        DROP,
    ),
}
NO_KEY_CASES = {  # COMPACT-9
    "no-key": RetainCase("a record without a key", 5, None, False, -1, 10, None, 0, DROP),
}
LATEST_CASES = {  # COMPACT-1
    "superseded": RetainCase("a later a at 7 supersedes it", 3, A, False, 7, 10, None, 0, DROP),
    "the-latest": RetainCase("the latest a", 7, A, False, 7, 10, None, 0, KEEP),
    "key-not-in-the-map": RetainCase(
        "no dirty record of a: this clean one is the latest", 2, A, False, -1, 10, None, 0, KEEP
    ),
    "superseded-tombstone": RetainCase(
        "a tombstone superseded by a later a goes, horizon or not", 3, A, True, 7, 10, None, 0, DROP
    ),
    "superseded-tombstone-before-its-horizon": RetainCase(
        "a superseded tombstone goes, even before its horizon", 3, A, True, 7, 10, 500, 100, DROP
    ),
    "a-value-in-a-batch-past-its-horizon": RetainCase(
        "the horizon is for tombstones: the latest value stays", 7, A, False, 7, 10, 500, 600, KEEP
    ),
}
TOMBSTONE_CASES = {  # COMPACT-6
    "tombstone-no-horizon-yet": RetainCase(
        "a tombstone not yet stamped with a horizon stays", 7, A, True, 7, 10, None, 100, KEEP
    ),
    "tombstone-before-its-horizon": RetainCase(
        "a tombstone stays until its horizon", 7, A, True, 7, 10, 500, 499, KEEP
    ),
    "tombstone-at-its-horizon": RetainCase(
        "a tombstone goes at its horizon (now >= horizon)", 7, A, True, 7, 10, 500, 500, DROP
    ),
    "tombstone-after-its-horizon": RetainCase(
        "a tombstone goes after its horizon", 7, A, True, 7, 10, 500, 501, DROP
    ),
    "clean-tombstone-before-its-horizon": RetainCase(
        "a tombstone from before the dirty section stays until its horizon",
        2,
        A,
        True,
        -1,
        10,
        500,
        400,
        KEEP,
    ),
    "clean-tombstone-after-its-horizon": RetainCase(
        "a tombstone from before the dirty section goes after its horizon",
        2,
        A,
        True,
        -1,
        10,
        500,
        600,
        DROP,
    ),
}


def check_retain(case: RetainCase) -> None:
    what = "a tombstone" if case.tombstone else "a value"
    key = "no key" if case.key is None else f"key {case.key.decode()}"
    inputs = (
        f"{what} at {case.offset}, {key}, latest {case.latest}, map end {case.map_end}, "
        f"horizon {case.horizon}, now {case.now}"
    )
    arguments = (case.offset, case.key, case.tombstone, case.latest, case.map_end)
    got = call(inputs, cleaner.should_retain, *arguments, case.horizon, case.now)
    verdict = {True: "kept", False: "dropped"}
    assert got is case.keep or (isinstance(got, bool) and got == case.keep), (
        f"{inputs}: {case.why}; expected {verdict[case.keep]}, got {verdict.get(got, got)}"
    )


@pytest.mark.spec("COMPACT-5")
@pytest.mark.parametrize("case", MAP_END_CASES.values(), ids=MAP_END_CASES.keys())
def test_past_the_maps_end_nothing_is_judged(case):
    check_retain(case)


@pytest.mark.spec("COMPACT-9")
@pytest.mark.parametrize("case", NO_KEY_CASES.values(), ids=NO_KEY_CASES.keys())
def test_a_record_without_a_key_goes(case):
    check_retain(case)


@pytest.mark.spec("COMPACT-1")
@pytest.mark.parametrize("case", LATEST_CASES.values(), ids=LATEST_CASES.keys())
def test_only_the_latest_record_of_a_key_stays(case):
    check_retain(case)


@pytest.mark.spec("COMPACT-6")
@pytest.mark.parametrize("case", TOMBSTONE_CASES.values(), ids=TOMBSTONE_CASES.keys())
def test_a_tombstone_stays_until_its_delete_horizon(case):
    check_retain(case)


def call(inputs: str, function, *args):
    """function(*args); an exception it raises fails the test, naming the inputs."""
    try:
        return function(*args)
    except Exception as e:  # the student's code raised: say on what, below
        error = e
    # Outside the `except`, so that the report's first line is this one, not the traceback.
    message = f": {error}" if str(error) else ""
    pytest.fail(f"{inputs}: raised {type(error).__name__}{message}")
