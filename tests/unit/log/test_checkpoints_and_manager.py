"""Checkpoint files and the log manager (DUR-6..DUR-8, DUR-10, DUR-12)."""

import logging
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref import files
from kafka_ref.config import LogConfig
from kafka_ref.log import recovery as log_recovery
from kafka_ref.log.checkpoints import CheckpointError, OffsetCheckpointFile
from kafka_ref.log.log_manager import (
    CLEAN_SHUTDOWN_FILE,
    LogManager,
    log_dir_name,
    parse_topic_partition,
)
from tests.unit.log.conftest import T0, make_batch, read_everything, temp_dir

topics = st.text("abcXYZ019._-", min_size=1, max_size=30).filter(lambda t: t not in (".", ".."))


# ---------------------------------------------------------------------- checkpoints
@pytest.mark.spec("DUR-7")
@given(
    offsets=st.dictionaries(
        st.tuples(topics, st.integers(0, 10_000)), st.integers(-1, 2**63 - 1), max_size=20
    )
)
def test_checkpoint_round_trip(offsets):
    with temp_dir() as d:
        checkpoint = OffsetCheckpointFile(os.path.join(d, "recovery-point-offset-checkpoint"))
        checkpoint.write(offsets)
        assert checkpoint.read() == offsets
        assert sorted(os.listdir(d)) == ["recovery-point-offset-checkpoint"]  # no .tmp left


@pytest.mark.spec("DUR-7")
def test_checkpoint_text_format_is_kafkas(tmp_path):
    path = tmp_path / "log-start-offset-checkpoint"
    OffsetCheckpointFile(path).write({("orders", 1): 1488, ("orders", 0): 1500})
    assert path.read_text() == "0\n2\norders 0 1500\norders 1 1488\n"


@pytest.mark.spec("DUR-7")
def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "replication-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write({("t", 0): 5})
    synced = []
    monkeypatch.setattr(files, "fsync_directory", lambda p: synced.append(p))

    def crash(src, dst):
        raise OSError("power cut before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        checkpoint.write({("t", 0): 6})
    assert checkpoint.read() == {("t", 0): 5}  # the old file is whole
    monkeypatch.undo()
    monkeypatch.setattr(files, "fsync_directory", lambda p: synced.append(p))
    checkpoint.write({("t", 0): 7})
    assert checkpoint.read() == {("t", 0): 7} and synced == [str(tmp_path)]


@pytest.mark.spec("DUR-8")
@pytest.mark.parametrize(
    "content",
    [
        "1\n1\nt 0 5\n",  # unknown version
        "0\n2\nt 0 5\n",  # fewer entries than declared
        "0\n1\nt 0 5\nu 0 6\n",  # more
        "0\n1\nt 0\n",  # a missing field
        "0\n1\nt x 5\n",  # partition not a number
        "0\n1\nt 0 five\n",
        "0\n1\nt -1 5\n",
        "0\n1\nt  0 5\n",
        "zero\n",
        "0\n",
        b"0\n1\n\xff 0 5\n",
    ],
)
def test_a_malformed_checkpoint_raises_a_typed_error(tmp_path, content):
    path = tmp_path / "cp"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(CheckpointError, match=str(path)):
        OffsetCheckpointFile(path).read()


@pytest.mark.spec("DUR-8")
def test_missing_or_empty_checkpoint_has_no_entries(tmp_path):
    assert OffsetCheckpointFile(tmp_path / "absent").read() == {}
    (tmp_path / "empty").write_text("")
    assert OffsetCheckpointFile(tmp_path / "empty").read() == {}


# ---------------------------------------------------------------------- log manager
@pytest.mark.spec("DUR-12")
@given(topic=topics, partition=st.integers(0, 100_000))
def test_partition_directory_names_round_trip(topic, partition):
    assert parse_topic_partition(log_dir_name(topic, partition)) == (topic, partition)


@pytest.mark.spec("DUR-12")
def test_the_partition_is_after_the_last_dash(tmp_path, clock):
    assert parse_topic_partition("my-topic-with-dashes-12") == ("my-topic-with-dashes", 12)
    for name in ("orders", "orders-", "-3", "orders-x", "orders-1-delete", "a b-1", "orders-٣"):
        assert parse_topic_partition(name) is None
    manager = LogManager(tmp_path, clock=clock)
    manager.get_or_create_log("my-topic-with-dashes", 12).append(make_batch(2))
    manager.close()
    reopened = LogManager(tmp_path, clock=clock)
    assert list(reopened.logs) == [("my-topic-with-dashes", 12)]
    assert reopened.get_log("my-topic-with-dashes", 12).log_end_offset == 2


@pytest.mark.spec("DUR-10")
def test_stray_files_and_directories_are_reported_and_kept(tmp_path, clock, caplog):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "lost+found").mkdir()
    (tmp_path / "not-a-partition").mkdir()
    (tmp_path / "not-a-partition" / "data").write_text("keep")
    (tmp_path / "meta.properties").write_text("broker.id=1")
    with caplog.at_level(logging.WARNING, logger="kafka_ref.log"):
        manager = LogManager(tmp_path, clock=clock)
    assert sorted(os.path.basename(p) for p in manager.stray_paths) == [
        "lost+found",
        "not-a-partition",
        "notes.txt",
    ]
    assert "notes.txt" in caplog.text
    manager.get_or_create_log("t", 0).append(make_batch(1))
    manager.close()
    LogManager(tmp_path, clock=clock).close()
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "not-a-partition" / "data").read_text() == "keep"
    assert (tmp_path / "lost+found").is_dir()


@pytest.mark.spec("DUR-6")
def test_clean_shutdown_marker_lifecycle(tmp_path, clock, monkeypatch):
    marker = tmp_path / CLEAN_SHUTDOWN_FILE
    manager = LogManager(tmp_path, LogConfig(segment_bytes=500), clock)
    assert not manager.had_clean_shutdown
    log = manager.get_or_create_log("orders", 0)
    for _ in range(20):
        log.append(make_batch(3))
    before = read_everything(log)
    assert not marker.exists()
    manager.close()
    assert marker.exists()
    assert OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint").read() == {
        ("orders", 0): 60
    }
    monkeypatch.setattr(
        log_recovery, "recover_segment", lambda segment, *a: pytest.fail("recovered")
    )
    reopened = LogManager(tmp_path, LogConfig(segment_bytes=500), clock)
    assert reopened.had_clean_shutdown and not marker.exists()  # removed at startup
    assert read_everything(reopened.get_log("orders", 0)) == before
    monkeypatch.undo()
    # a crash now (no close): the next start has no marker and recovers
    recovered = []
    real = log_recovery.recover_segment
    monkeypatch.setattr(
        log_recovery,
        "recover_segment",
        lambda segment, *a: (recovered.append(segment.base_offset), real(segment, *a))[1],
    )
    third = LogManager(tmp_path, LogConfig(segment_bytes=500), clock)
    assert not third.had_clean_shutdown and recovered
    assert read_everything(third.get_log("orders", 0)) == before


@pytest.mark.spec("DUR-8")
def test_a_malformed_checkpoint_falls_back_to_full_recovery(tmp_path, clock):
    manager = LogManager(tmp_path, clock=clock)
    manager.get_or_create_log("t", 0).append(make_batch(4, ts=T0))
    manager.get_or_create_log("t", 1)
    manager.checkpoint()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n5\ngarbage\n")
    (tmp_path / "log-start-offset-checkpoint").write_text("7\n")
    reopened = LogManager(tmp_path, clock=clock)
    log = reopened.get_log("t", 0)
    assert (log.recovery_point, log.log_start_offset, log.log_end_offset) == (0, 0, 4)


@pytest.mark.spec("DUR-7", "LOG-14")
def test_log_start_offsets_survive_a_restart(tmp_path, clock):
    manager = LogManager(tmp_path, LogConfig(segment_bytes=300), clock)
    log = manager.get_or_create_log("t", 0)
    for _ in range(10):
        log.append(make_batch(2))
    log.delete_records_before(7)
    assert manager.delete_log("t", 9) is False
    manager.get_or_create_log("gone", 0).append(make_batch(1))
    assert manager.delete_log("gone", 0)
    manager.close()
    assert not any(name.startswith("gone") for name in os.listdir(tmp_path))
    reopened = LogManager(tmp_path, LogConfig(segment_bytes=300), clock)
    assert reopened.get_log("t", 0).log_start_offset == 7
    assert reopened.get_log("gone", 0) is None
