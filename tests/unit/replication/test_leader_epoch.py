"""The leader epoch cache (Kafka `LeaderEpochFileCache`) and its checkpoint file."""

from __future__ import annotations

import os
import pathlib

import pytest

from kafka_ref.errors import KafkaStorageError
from kafka_ref.replication.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    UNDEFINED,
    EpochEndOffset,
    EpochEntry,
    LeaderEpochFileCache,
)


def cache(*entries: tuple[int, int]) -> LeaderEpochFileCache:
    c = LeaderEpochFileCache(None)
    for epoch, offset in entries:
        c.assign(epoch, offset)
    return c


@pytest.mark.spec("REPL-9")
def test_assign_keeps_epochs_and_start_offsets_increasing():
    c = cache((0, 0), (0, 5), (2, 10))
    assert [tuple(e) for e in c.entries] == [(0, 0), (2, 10)]  # (0, 5): same epoch, later
    assert c.assign(2, 12) is False
    c.assign(3, 8)  # a lower start removes the entries it would contradict (Kafka)
    assert [tuple(e) for e in c.entries] == [(0, 0), (3, 8)]
    c.assign(3, 6)  # same epoch, earlier start: replaced
    assert [tuple(e) for e in c.entries] == [(0, 0), (3, 6)]
    with pytest.raises(ValueError):
        c.assign(-1, 0)
    assert c.latest_epoch == 3 and c.epoch_for_offset(5) == 0 and c.epoch_for_offset(6) == 3


@pytest.mark.spec("TRUNC-4")
def test_end_offset_for_follows_kafka_semantics():
    c = cache((1, 0), (3, 10), (5, 20))
    leo = 25
    assert c.end_offset_for(5, leo) == EpochEndOffset(5, 25)  # latest: the LEO
    assert c.end_offset_for(3, leo) == EpochEndOffset(3, 20)  # next epoch's start
    assert c.end_offset_for(4, leo) == EpochEndOffset(3, 20)  # unknown: floor epoch (KIP-279)
    assert c.end_offset_for(2, leo) == EpochEndOffset(1, 10)
    assert c.end_offset_for(0, leo) == EpochEndOffset(0, 0)  # below all: first start
    assert c.end_offset_for(6, leo) == UNDEFINED  # above all
    assert c.end_offset_for(-1, leo) == UNDEFINED
    assert cache().end_offset_for(0, 0) == UNDEFINED


@pytest.mark.spec("TRUNC-4")
def test_truncation_from_end_and_start():
    c = cache((1, 0), (3, 10), (5, 20))
    c.truncate_from_end(20)
    assert [tuple(e) for e in c.entries] == [(1, 0), (3, 10)]
    c.truncate_from_start(15)
    assert [tuple(e) for e in c.entries] == [(3, 15)]
    c.truncate_from_start(15)
    assert [tuple(e) for e in c.entries] == [(3, 15)]
    c.clear()
    assert c.latest_epoch == -1


@pytest.mark.spec("REPL-9")
def test_the_checkpoint_file_has_kafkas_format_and_survives_reload(tmp_path):
    c = LeaderEpochFileCache.load(tmp_path)
    assert c.entries == ()
    c.assign(0, 0)
    c.assign(4, 120)
    path = os.path.join(tmp_path, LEADER_EPOCH_CHECKPOINT)
    assert pathlib.Path(path).read_text() == "0\n2\n0 0\n4 120\n"
    assert not os.path.exists(path + ".tmp")  # written atomically, through a rename
    assert LeaderEpochFileCache.load(tmp_path).entries == c.entries
    c.truncate_from_end(100)
    assert pathlib.Path(path).read_text() == "0\n1\n0 0\n"


@pytest.mark.spec("REPL-9")
@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\n0 0\n", "0\n1\nx y\n", "0\n1\n3 1\n"[:-3]])
def test_a_malformed_checkpoint_is_a_storage_error(tmp_path, text):
    with open(os.path.join(tmp_path, LEADER_EPOCH_CHECKPOINT), "w") as f:
        f.write(text)
    with pytest.raises(KafkaStorageError):
        LeaderEpochFileCache.load(tmp_path)


def test_entries_must_increase():
    with pytest.raises(ValueError):
        LeaderEpochFileCache(None, (EpochEntry(2, 0), EpochEntry(1, 5)))


@pytest.mark.spec("TRUNC-9")
def test_a_cache_out_of_order_is_caught_at_its_next_change(tmp_path):
    cache = LeaderEpochFileCache(tmp_path / "leader-epoch-checkpoint")
    cache.assign(1, 0)
    cache.assign(3, 10)
    assert [tuple(e) for e in cache.entries] == [(1, 0), (3, 10)]
    cache._entries.insert(1, EpochEntry(5, 5))  # a bug: an epoch out of order
    with pytest.raises(AssertionError, match="out of order"):
        cache.assign(7, 20)
