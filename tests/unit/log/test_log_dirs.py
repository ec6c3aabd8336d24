"""Several data directories (`log.dirs`): placement, per-directory files, startup checks,
a directory failing while the broker runs (DUR-13, DUR-14, DUR-16). Real directories on
disk, several per test."""

from __future__ import annotations

import errno
import os

import pytest

from kafka_ref.config import LogConfig
from kafka_ref.errors import KafkaStorageError
from kafka_ref.log import recovery as log_recovery
from kafka_ref.log.checkpoints import OffsetCheckpointFile
from kafka_ref.log.log_manager import (
    CLEAN_SHUTDOWN_FILE,
    LogDirError,
    LogManager,
    is_log_dir_failure,
)
from tests.unit.log.conftest import make_batch, read_everything


@pytest.fixture
def dirs(tmp_path) -> list[str]:
    return [str(tmp_path / name) for name in ("a", "b", "c")]


def where(manager: LogManager, topic: str, partition: int) -> str:
    """The name of the log dir holding the partition ("a", "b" or "c")."""
    log = manager.get_log(topic, partition)
    assert log is not None
    return os.path.basename(os.path.dirname(log.dir))


def checkpoint(log_dir: str, name: str) -> dict:
    return OffsetCheckpointFile(os.path.join(log_dir, name)).read()


@pytest.mark.spec("DUR-13")
def test_a_new_partition_goes_to_the_dir_with_the_fewest_partitions(dirs, clock):
    first = LogManager(dirs[:1], clock=clock)
    first.get_or_create_log("x", 0)
    first.get_or_create_log("x", 1)
    first.close()
    manager = LogManager(dirs, clock=clock)  # a holds 2, b and c none
    assert where(manager, "x", 0) == where(manager, "x", 1) == "a"
    placed = []
    for p in range(5):
        manager.get_or_create_log("y", p)
        placed.append(where(manager, "y", p))
    # b (0) < c (0) by order; then c (0); then b, c tie at 1; then c; then a, b, c all at 2
    assert placed == ["b", "c", "b", "c", "a"]
    assert os.path.isdir(os.path.join(dirs[1], "y-0"))
    assert manager.delete_log("y", 0)  # removed from b, its own directory
    assert not os.path.exists(os.path.join(dirs[1], "y-0"))
    assert sorted(os.listdir(dirs[1])) == ["y-2"]
    manager.get_or_create_log("z", 0)
    assert where(manager, "z", 0) == "b"  # b is the emptiest again
    assert manager.delete_log("y", 2)  # from b again: a 3, b 1, c 2
    manager.get_or_create_log("z", 1)
    assert where(manager, "z", 1) == "b"  # the counts follow every deletion
    assert manager.get_or_create_log("y", 1) is manager.get_log("y", 1)  # existing: not moved


@pytest.mark.spec("DUR-13")
def test_each_dir_keeps_its_own_checkpoints_and_marker_and_logs_reload(dirs, clock):
    config = LogConfig(segment_bytes=400)
    manager = LogManager(dirs[:2], config, clock)
    for p in range(4):  # t-0, t-2 in a; t-1, t-3 in b
        log = manager.get_or_create_log("t", p)
        for _ in range(p + 2):
            log.append(make_batch(3))
    manager.get_log("t", 3).delete_records_before(4)
    before = {p: read_everything(manager.get_log("t", p)) for p in range(4)}
    manager.close()
    a, b = dirs[:2]
    assert checkpoint(a, "recovery-point-offset-checkpoint") == {("t", 0): 6, ("t", 2): 12}
    assert checkpoint(b, "recovery-point-offset-checkpoint") == {("t", 1): 9, ("t", 3): 15}
    assert checkpoint(a, "log-start-offset-checkpoint") == {("t", 0): 0, ("t", 2): 0}
    assert checkpoint(b, "log-start-offset-checkpoint") == {("t", 1): 0, ("t", 3): 4}
    assert all(os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_FILE)) for d in (a, b))

    reopened = LogManager(dirs[:2], config, clock)
    assert reopened.clean_shutdown == {a: True, b: True}
    assert [where(reopened, "t", p) for p in range(4)] == ["a", "b", "a", "b"]
    assert {p: read_everything(reopened.get_log("t", p)) for p in range(4)} == before
    assert reopened.get_log("t", 3).log_start_offset == 4
    reopened.close()

    os.unlink(os.path.join(b, CLEAN_SHUTDOWN_FILE))  # b as after a crash, a closed cleanly
    recovered: list[str] = []
    real = log_recovery.recover_segment

    def spy(segment, *args):
        recovered.append(os.path.basename(os.path.dirname(segment.dir)))
        return real(segment, *args)

    log_recovery.recover_segment = spy
    try:
        third = LogManager(dirs[:2], config, clock)
    finally:
        log_recovery.recover_segment = real
    assert third.clean_shutdown == {a: True, b: False}
    assert recovered and set(recovered) == {"b"}  # only b's logs were recovered
    assert {p: read_everything(third.get_log("t", p)) for p in range(4)} == before


@pytest.mark.spec("DUR-14")
def test_a_partition_in_two_dirs_refuses_to_start(dirs, clock):
    manager = LogManager(dirs[:1], clock=clock)
    manager.get_or_create_log("t", 0).append(make_batch(2))
    manager.close()
    os.makedirs(os.path.join(dirs[1], "t-0"))  # a second copy of t-0, in b
    with pytest.raises(LogDirError, match="Duplicate log directories for t-0") as err:
        LogManager(dirs[:2], clock=clock)
    assert os.path.join(dirs[0], "t-0") in str(err.value)
    assert os.path.join(dirs[1], "t-0") in str(err.value)


@pytest.mark.spec("DUR-14")
def test_a_dir_listed_twice_or_not_creatable_refuses_to_start(dirs, tmp_path, clock):
    with pytest.raises(LogDirError, match="Duplicate log directory found"):
        LogManager([dirs[0], dirs[1], dirs[0] + "/."], clock=clock)
    os.symlink(dirs[0], tmp_path / "link")
    with pytest.raises(LogDirError, match="Duplicate log directory found"):
        LogManager([dirs[0], str(tmp_path / "link")], clock=clock)
    (tmp_path / "plain-file").write_text("not a directory")
    blocked = str(tmp_path / "plain-file" / "logs")
    with pytest.raises(LogDirError, match=f"Failed to create data directory {blocked}"):
        LogManager([dirs[1], blocked], clock=clock)
    with pytest.raises(LogDirError, match="Failed to create data directory"):
        LogManager([str(tmp_path / "plain-file")], clock=clock)


def fail_dir(log_dir: str) -> None:
    """Replace a log dir by a file, as a disk that is gone: the open files still work, the
    next file opened in it fails with ENOTDIR, a real I/O error (DUR-16)."""
    os.rename(log_dir, log_dir + ".failed")
    with open(log_dir, "w") as f:
        f.write("not a directory any more\n")


@pytest.mark.spec("DUR-16")
def test_a_failed_dir_goes_offline_once_and_the_others_keep_serving(dirs, clock):
    manager = LogManager(dirs[:2], clock=clock)
    failed: list[str] = []
    manager.log_dir_failure_listeners.append(failed.append)
    for p in range(2):  # t-0 in a, t-1 in b
        manager.get_or_create_log("t", p).append(make_batch(1))
    fail_dir(dirs[0])
    manager.checkpoint()  # the checkpoint in a fails: a goes offline
    assert failed == [dirs[0]] and manager.offline_dirs == {dirs[0]}
    assert manager.get_log("t", 0) is None  # dropped with its directory
    manager.get_log("t", 1).append(make_batch(2))  # b serves on
    manager.get_or_create_log("u", 0)
    assert where(manager, "u", 0) == "b"  # new partitions only go to online dirs
    manager.checkpoint()
    manager.flush_logs()
    assert failed == [dirs[0]]  # once
    assert set(checkpoint(dirs[1], "recovery-point-offset-checkpoint")) == {("t", 1), ("u", 0)}
    manager.close()
    assert os.path.exists(os.path.join(dirs[1], CLEAN_SHUTDOWN_FILE))
    os.unlink(dirs[0])  # repaired: the directory is back, without a clean-shutdown marker
    os.rename(dirs[0] + ".failed", dirs[0])
    again = LogManager(dirs[:2], clock=clock)
    assert again.clean_shutdown == {dirs[0]: False, dirs[1]: True}
    assert again.get_log("t", 0).log_end_offset == 1  # what it held when it failed
    assert again.get_log("t", 1).log_end_offset == 3


@pytest.mark.spec("DUR-16")
def test_when_every_dir_is_offline_no_partition_can_be_created(dirs, clock):
    manager = LogManager(dirs[:2], clock=clock)
    manager.get_or_create_log("t", 0)
    for log_dir in dirs[:2]:
        assert not manager.all_dirs_offline
        fail_dir(log_dir)
        manager.checkpoint()
    assert manager.all_dirs_offline and manager.logs == {}
    with pytest.raises(KafkaStorageError):
        manager.get_or_create_log("t", 1)


@pytest.mark.spec("DUR-16")
def test_a_full_disk_is_not_a_failed_dir_but_other_io_errors_are():
    assert not is_log_dir_failure(OSError(errno.ENOSPC, "No space left on device"))
    assert not is_log_dir_failure(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert is_log_dir_failure(OSError(errno.EIO, "Input/output error"))
    assert is_log_dir_failure(OSError(errno.EROFS, "Read-only file system"))
    try:
        raise KafkaStorageError("write failed") from OSError(errno.EIO, "Input/output error")
    except KafkaStorageError as wrapped:
        assert is_log_dir_failure(wrapped)
    assert not is_log_dir_failure(KafkaStorageError("a corrupt snapshot"))  # not the disk
