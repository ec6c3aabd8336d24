"""Compaction as a consumer sees it: the latest value of every key survives, offsets never move.

Compaction is invisible in the protocol until it has run, and when it runs is the broker's
business, so these tests need the `compaction` capability: a broker whose cleaner runs
within seconds (kafka-ref's target runs with log.cleaner.backoff.ms=100). The topic rolls a
segment every few batches (segment.bytes=300) so that most of the log is cleanable, and a
dirty ratio of 0.01 makes any duplicate worth cleaning. The test waits until the log has
visibly shrunk, then compares what is left with what was produced, offset by offset.
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.conformance.wire import batch, decode_batches

INVALID_RECORD = 87
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "300",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
}


@pytest.fixture
def compacted(target, wire):
    target.require("create-topics", "compaction")
    name = target.topic_name("compact")
    assert wire.create_topic(name, **COMPACTED) == 0
    return name


def wait_until_cleaned(wire, topic: str, keys: list[bytes], timeout: float = 20.0) -> list:
    """The log once no key of `keys` appears twice: every superseded value is gone.

    Compaction may run while the test still produces, and a round that ran before the last
    values arrived proves nothing about them; so wait for the end state, not the first
    shrink."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = wire.read_all(topic)
        counts = [sum(1 for r in records if r.key == k) for k in keys]
        if max(counts) <= 1:
            return records
        time.sleep(0.1)
    pytest.fail(f"{topic} still holds superseded values after {timeout:g}s")


@pytest.mark.spec("COMPACT-1", "COMPACT-2", "COMPACT-11", "COMPACT-8")
def test_compaction_keeps_every_keys_latest_value_at_its_offset(wire, compacted):
    keys = [f"key{i}".encode() for i in range(5)]
    produced: dict[int, tuple[bytes, bytes]] = {}
    for round_ in range(4):
        for key in keys:
            value = key + b"@" + str(round_).encode()
            resp = wire.produce(compacted, 0, batch([value], keys=[key]))
            assert resp.error_code == 0
            produced[resp.base_offset] = (key, value)
    # Fillers after them, twice, so that the latest values leave the active segment; once
    # the fillers' first copies are gone, a round has mapped offsets past the latest values,
    # so the latest values went through that round too (a round that ran while they were
    # still in the active segment could not have dropped them, and would prove nothing).
    fillers = [b"filler%d" % i for i in range(8)]
    for copy in (b"f", b"g"):
        for key in fillers:
            resp = wire.produce(compacted, 0, batch([copy], keys=[key]))
            produced[resp.base_offset] = (key, copy)
    for i in range(8):  # and the second copies out of the active segment
        key, value = b"pusher%d" % i, b"p"
        produced[wire.produce(compacted, 0, batch([value], keys=[key])).base_offset] = (key, value)
    records = wait_until_cleaned(wire, compacted, keys + fillers)
    # COMPACT-2: whatever is left sits at the offset it was written at
    for r in records:
        assert produced[r.offset] == (r.key, r.value), f"offset {r.offset} changed"
    assert [r.offset for r in records] == sorted(r.offset for r in records)
    # COMPACT-1/11: reading from the start, the last value of each key is its latest one
    last = {r.key: r.value for r in records if r.key in keys}
    assert last == {k: k + b"@3" for k in keys}


@pytest.mark.spec("LOG-17")
def test_a_compacted_topic_refuses_a_record_without_key(wire, compacted):
    assert wire.produce(compacted, 0, batch([b"no key"])).error_code == INVALID_RECORD
    assert wire.produce(compacted, 0, batch([b"v"], keys=[b"k"])).base_offset == 0


@pytest.mark.spec("COMPACT-6")
def test_a_tombstone_survives_until_its_delete_horizon(target, wire):
    target.require("create-topics", "compaction")
    name = target.topic_name("tomb")
    assert wire.create_topic(name, **COMPACTED, **{"delete.retention.ms": "1500"}) == 0
    assert wire.produce(name, 0, batch([b"old"], keys=[b"gone"])).error_code == 0
    tomb = wire.produce(name, 0, batch([None], keys=[b"gone"])).base_offset
    for i in range(8):  # roll the tombstone out of the active segment
        assert wire.produce(name, 0, batch([b"f"], keys=[b"filler%d" % i])).error_code == 0
    # the first round drops the old value and keeps the tombstone, marked with its horizon
    records = wait_until_cleaned(wire, name, [b"gone"])
    cleaned_at = time.time() * 1000
    kept = [r for r in records if r.key == b"gone"]
    assert [(r.offset, r.value) for r in kept] == [(tomb, None)], "the deletion is visible"
    holder = next(
        b
        for b in decode_batches(wire.fetch(name, 0, tomb).records)
        if b.base_offset <= tomb <= b.last_offset
    )
    assert holder.header.attributes & 0x40, "hasDeleteHorizonMs set by the round"
    assert cleaned_at - 5000 <= holder.header.base_timestamp - 1500 <= cleaned_at + 1000
    # after the horizon a later round drops it; more writes keep the cleaner busy
    deadline = time.monotonic() + 20
    i = 0
    while any(r.key == b"gone" for r in wire.read_all(name)):
        assert time.monotonic() < deadline, "the tombstone outlived its horizon"
        wire.produce(name, 0, batch([b"f"], keys=[b"filler%d" % (i % 8)]))
        i += 1
        time.sleep(0.2)
