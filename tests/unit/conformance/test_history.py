"""The history checker on hand-built histories: each anomaly is found, a clean run passes.

This is mutation testing of the oracle (CONF-3's idea applied to the checker): a checker
that reports nothing would make every conformance run using it green.
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance.history import FAILED, History, check

K = ("t", 0)


def clean() -> History:
    h = History()
    for i in range(4):
        h.send("p", K, f"v{i}", offset=i)
    h.poll("c", {K: [(0, "v0"), (1, "v1")]})
    h.poll("c", {K: [(2, "v2"), (3, "v3")]})
    return h


@pytest.mark.spec("HIST-1", "HIST-2", "HIST-3", "HIST-4", "HIST-5", "HIST-6")
def test_a_clean_history_is_valid():
    result = check(clean())
    assert result.valid, str(result)
    assert result.unseen == {}


@pytest.mark.spec("HIST-3")
def test_a_clean_history_with_an_unknown_send_and_lag_is_valid():
    h = History()
    h.send("p", K, "a", offset=0)
    h.send("p", K, "b", offset=None)  # a timeout: maybe written, maybe not
    h.send("p", K, "c", offset=2)
    h.poll("c", {K: [(0, "a")]})  # lagging: c not read yet, and that is not a loss
    result = check(h)
    assert result.valid, str(result)
    assert result.unseen == {K: {"c"}}


@pytest.mark.spec("HIST-1")
def test_two_values_at_one_offset_are_inconsistent():
    h = clean()
    h.poll("c2", {K: [(1, "other")]})
    found = check(h).anomalies["inconsistent-offsets"]
    assert found == [{"key": K, "offset": 1, "values": ["other", "v1"]}]


@pytest.mark.spec("HIST-2")
def test_one_value_at_two_offsets_is_a_duplicate():
    h = clean()
    h.send("p", K, "v4", offset=4)
    h.poll("c2", {K: [(3, "v3"), (4, "v4"), (5, "v4")]})
    assert "duplicate" in check(h).kinds()


@pytest.mark.spec("HIST-3")
def test_an_acknowledged_write_read_past_is_lost():
    h = History()
    for i in range(3):
        h.send("p", K, f"v{i}", offset=i)
    h.poll("c", {K: [(0, "v0"), (2, "v2")]})  # v1 acknowledged at 1, never read
    result = check(h)
    assert result.anomalies["lost-write"] == [{"key": K, "value": "v1", "offset": 1}]


@pytest.mark.spec("HIST-4")
def test_a_consumer_skipping_or_going_back_is_flagged():
    h = clean()
    h.poll("c2", {K: [(0, "v0")]})
    h.poll("c2", {K: [(2, "v2")]})  # skipped v1
    h.poll("c2", {K: [(1, "v1")]})  # went back
    kinds = check(h).kinds()
    assert {"poll-skip", "nonmonotonic-poll"} <= kinds


@pytest.mark.spec("HIST-4")
def test_an_assign_resets_the_poll_order():
    h = clean()
    h.assign("c", [K])  # seek to the beginning: reading v0 again is fine
    h.poll("c", {K: [(0, "v0")]})
    assert check(h).valid


@pytest.mark.spec("HIST-5")
def test_a_later_send_at_a_lower_offset_is_nonmonotonic():
    h = History()
    h.send("p", K, "a", offset=5)
    h.send("p", K, "b", offset=3)
    assert "nonmonotonic-send" in check(h).kinds()


@pytest.mark.spec("HIST-6")
def test_reading_an_aborted_or_failed_value_is_an_aborted_read():
    h = clean()
    h.send("p", K, "bad", status=FAILED)
    h.poll("c2", {K: [(4, "bad")]})
    assert "aborted-read" in check(h).kinds()
    h2 = clean()
    assert "aborted-read" in check(h2, aborted={"v3"}).kinds()
