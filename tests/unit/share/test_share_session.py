"""Share sessions: epochs 0, n and -1, and the cache's limit (KIP-932's ShareSessionCache)."""

from __future__ import annotations

import uuid

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.share.share_session import MAX_EPOCH, ShareSessionCache, next_epoch

TOPIC = uuid.uuid4()


@pytest.mark.spec("SHARE-13")
def test_epochs_open_step_and_close():
    cache = ShareSessionCache(max_sessions=10)
    assert cache.step("g", "m", 1) == (None, ErrorCode.SHARE_SESSION_NOT_FOUND)
    session, replaced, error = cache.open("g", "m", "conn-1")
    assert (replaced, error) == (None, ErrorCode.NO_ERROR)
    session.update({(TOPIC, 0), (TOPIC, 1)}, set())
    assert cache.step("g", "m", 2) == (None, ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    assert cache.step("g", "m", 1) == (session, ErrorCode.NO_ERROR)
    assert cache.step("g", "m", 1) == (None, ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    assert cache.step("g", "m", 2) == (session, ErrorCode.NO_ERROR)
    session.update(set(), {(TOPIC, 0)})
    assert session.partitions == {(TOPIC, 1)}
    assert cache.step("g", "m", -1) == (session, ErrorCode.NO_ERROR)
    assert cache.get("g", "m") is None
    assert next_epoch(MAX_EPOCH) == 1


@pytest.mark.spec("SHARE-14")
def test_opening_again_replaces_the_session():
    cache = ShareSessionCache(max_sessions=10)
    first, _, _ = cache.open("g", "m", "conn-1")
    second, replaced, error = cache.open("g", "m", "conn-2")
    assert (replaced, error) == (first, ErrorCode.NO_ERROR)
    assert cache.get("g", "m") is second and second.epoch == 1


@pytest.mark.spec("SHARE-15")
def test_the_cache_holds_at_most_max_sessions():
    cache = ShareSessionCache(max_sessions=2)
    cache.open("g", "a", None)
    cache.open("g", "b", None)
    assert cache.open("g", "c", None) == (None, None, ErrorCode.SHARE_SESSION_LIMIT_REACHED)
    assert cache.open("g", "a", None)[2] == ErrorCode.NO_ERROR  # a replacement fits
    cache.remove("g", "b")
    assert cache.open("g", "c", None)[2] == ErrorCode.NO_ERROR


@pytest.mark.spec("SHARE-25")
def test_a_closed_connection_takes_the_sessions_opened_on_it():
    cache = ShareSessionCache(max_sessions=10)
    a, _, _ = cache.open("g", "a", "conn-1")
    b, _, _ = cache.open("h", "b", "conn-1")
    cache.open("g", "c", "conn-2")
    cache.open("g", "d", "conn-1")
    d, _, _ = cache.open("g", "d", "conn-3")  # opened again elsewhere: conn-3's now
    assert cache.step("g", "a", 1) == (a, ErrorCode.NO_ERROR)  # stepping keeps its connection
    assert cache.remove_connection("conn-1") == [a, b]
    assert cache.get("g", "a") is None and cache.get("h", "b") is None
    assert cache.get("g", "d") is d and cache.get("g", "c") is not None
    assert cache.remove_connection("conn-1") == []
    assert cache.step("g", "c", -1)[1] == ErrorCode.NO_ERROR  # closed by epoch -1
    assert cache.remove_connection("conn-2") == []
    assert cache.by_connection == {"conn-3": {("g", "d")}}
