"""Bad input to the storage engine, from an adversary's point of view.

Malformed appends (every truncation, every flipped byte, every header field out of range),
damaged index files of every kind in every position, strangers in the partition and data
directories, and a disk that fills up in the middle of a write. In every case the engine
must answer with a typed `KafkaError` carrying the right code (never a stray `struct.error`
or `IndexError`), leave the log exactly as it was, and never delete what it does not own.

The log engineer's tests (test_log_append.py, test_recovery.py, test_indexes.py,
test_checkpoints_and_manager.py) hold one example of most cases; these sweep them.
"""

from __future__ import annotations

import errno
import os
import struct

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError, KafkaStorageError
from kafka_ref.log import file_records
from kafka_ref.log.log import Log
from kafka_ref.log.log_manager import LogManager
from kafka_ref.log.segment_recovery import check_segment
from kafka_ref.record.batch import build_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.legacy import build_message_set
from kafka_ref.record.record import Record
from tests.unit.log.conftest import T0, read_everything, temp_dir

CONFIG = dict(segment_bytes=700, index_interval_bytes=90, segment_index_bytes=120)
APPEND_ERRORS = {
    ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.INVALID_RECORD,
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE,
}


def batch(n: int = 3, *, key: bytes = b"k", ts: int = T0, codec=Compression.NONE, pad: int = 8):
    records = [Record(key + b"%d" % i, b"v" * pad + b"%d" % i, ts + i) for i in range(n)]
    return build_batch(records, compression=codec)


def recrc(buf: bytearray, pos: int = 0) -> bytes:
    """Recompute the CRC of the batch at `pos`, so that only the field we broke is wrong."""
    size = struct.unpack_from(">i", buf, pos + 8)[0] + 12
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21 : pos + size])))
    return bytes(buf)


def filled_log(path, clock: ManualClock | None = None, **config) -> Log:
    """A log of several segments (a few index entries each) with varied batches."""
    log = Log.open(path, LogConfig(**{**CONFIG, **config}), clock or ManualClock(T0))
    codecs = list(Compression)
    for i in range(14):
        log.append(batch(1 + i % 4, key=b"k%d-" % i, ts=T0 + 10 * i, codec=codecs[i % 5]))
    assert len(log.segments) >= 3
    return log


def snapshot(log: Log):
    """Everything an append must not change: offsets, segments, bytes of every file."""
    files = {}
    for name in sorted(os.listdir(log.dir)):
        path = os.path.join(log.dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                files[name] = f.read()
    return (
        log.log_start_offset,
        log.log_end_offset,
        log.recovery_point,
        [(s.base_offset, s.size) for s in log.segments],
        read_everything(log),
        files,
    )


def assert_rejected(log: Log, data, code: ErrorCode, **kwargs) -> None:
    with pytest.raises(KafkaError) as err:
        log.append(data, **kwargs)
    assert err.value.code == code, f"{err.value!r}: expected {code.name}"


# ---------------------------------------------------------------------- appends
@pytest.mark.spec("LOG-8", "BATCH-2")
def test_every_truncation_of_a_two_batch_append_is_rejected_whole(tmp_path):
    log = filled_log(tmp_path)
    before = snapshot(log)
    size = log.size_in_bytes
    first, second = batch(3), batch(5, codec=Compression.LZ4)
    data = first + second
    for cut in range(1, len(data)):
        if cut == len(first):
            continue  # a whole first batch: a valid append
        assert_rejected(log, data[:cut], ErrorCode.CORRUPT_MESSAGE)
        assert (log.log_end_offset, log.size_in_bytes) == (before[1], size), cut
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "LOG-10", "BATCH-3", "BATCH-4")
def test_every_flipped_byte_of_a_two_batch_append(tmp_path):
    """A flip in the CRC-covered bytes or the length is CORRUPT_MESSAGE, in the magic or
    the base offset (a producer sends 0) INVALID_RECORD; the leader epoch is the broker's
    to overwrite."""
    log = filled_log(tmp_path)
    first, second = batch(2), batch(4, codec=Compression.GZIP)
    data = first + second
    for i in range(len(data)):
        pos = i if i < len(first) else i - len(first)
        mutated = bytearray(data)
        mutated[i] ^= 1 << (i % 8)
        before = snapshot(log) if i % 23 == 0 else None
        leo = log.log_end_offset
        if 12 <= pos < 16:  # partitionLeaderEpoch: not checked
            info = log.append(bytes(mutated), leader_epoch=3)
            assert (info.first_offset, info.last_offset) == (leo, leo + 5)
            stored = [raw for _, raw in read_everything(log)[-2:]]
            expected = bytearray(data)
            struct.pack_into(">qiib", expected, 0, leo, len(first) - 12, 3, 2)
            struct.pack_into(">qiib", expected, len(first), leo + 2, len(second) - 12, 3, 2)
            assert b"".join(stored) == bytes(expected)
            continue
        code = ErrorCode.INVALID_RECORD if pos < 8 or pos == 16 else ErrorCode.CORRUPT_MESSAGE
        assert_rejected(log, bytes(mutated), code)
        assert log.log_end_offset == leo
        if before is not None:
            assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "LEGACY-3")
@pytest.mark.parametrize("magic", [0, 1, 3, 0x7F, 0xFF])
@pytest.mark.parametrize("which", ["first", "second"])
def test_a_batch_with_another_magic_is_invalid_record(tmp_path, magic, which):
    log = filled_log(tmp_path)
    before = snapshot(log)
    good, bad = batch(3), bytearray(batch(2))
    bad[16] = magic
    data = bytes(bad) + good if which == "first" else good + bytes(bad)
    assert_rejected(log, data, ErrorCode.INVALID_RECORD)
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "LEGACY-3")
@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_message_set_is_not_written_to_the_log(tmp_path, magic):
    log = filled_log(tmp_path)
    before = snapshot(log)
    legacy = build_message_set([Record(b"k", b"v", T0)] * 3, magic=magic)
    with pytest.raises(KafkaError) as err:
        log.append(legacy)
    assert err.value.code in (ErrorCode.INVALID_RECORD, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT)
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "BATCH-2")
@pytest.mark.parametrize(
    "length",
    [-1, -(2**31), 0, 1, 48, 2**31 - 1, "one-more", "one-less", "swallow-next"],
)
@pytest.mark.parametrize("which", ["first", "second"])
def test_a_batch_length_out_of_range_is_corrupt(tmp_path, length, which):
    log = filled_log(tmp_path)
    before = snapshot(log)
    first, second = bytearray(batch(3)), bytearray(batch(4))
    victim = first if which == "first" else second
    real = len(victim) - 12
    value = {"one-more": real + 1, "one-less": real - 1, "swallow-next": real + len(second)}
    struct.pack_into(">i", victim, 8, value.get(length, length))
    data = bytes(first) + bytes(second)
    assert_rejected(log, data, ErrorCode.CORRUPT_MESSAGE)
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "BATCH-8")
@pytest.mark.parametrize(
    "count_delta",
    [(4, 4), (2, 2), (0, 2), (0, 0), (-1, 2), (3, -1), (0, -1), (2**31 - 1, 2), (3, 2**31 - 1)],
)
def test_a_records_count_that_disagrees_with_last_offset_delta_is_invalid(tmp_path, count_delta):
    count, delta = count_delta
    log = filled_log(tmp_path)
    before = snapshot(log)
    bad = bytearray(batch(3))  # three records: recordsCount 3, lastOffsetDelta 2
    struct.pack_into(">i", bad, 57, count)
    struct.pack_into(">i", bad, 23, delta)
    assert_rejected(log, batch(2) + recrc(bad), ErrorCode.INVALID_RECORD)
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8")
def test_a_batch_without_records_is_rejected(tmp_path):
    log = filled_log(tmp_path)
    before = snapshot(log)
    assert_rejected(log, build_batch([]), ErrorCode.INVALID_RECORD)
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "CODEC-1")
@pytest.mark.parametrize("codec", [5, 6, 7])
def test_an_unknown_codec_is_unsupported_compression_type(tmp_path, codec):
    log = filled_log(tmp_path)
    before = snapshot(log)
    bad = bytearray(batch(3))
    struct.pack_into(">h", bad, 21, codec)
    assert_rejected(log, batch(1) + recrc(bad), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    assert snapshot(log) == before


@pytest.mark.spec("LOG-9", "SEG-6")
def test_size_limits_are_exact_and_reject_the_whole_append(tmp_path):
    small, big = batch(2), batch(6, pad=40)
    log = filled_log(tmp_path, max_message_bytes=len(big))
    before = snapshot(log)
    assert_rejected(log, small + batch(6, pad=41), ErrorCode.MESSAGE_TOO_LARGE)  # one over
    assert snapshot(log) == before
    leo = log.log_end_offset
    assert log.append(small + big).first_offset == leo  # exactly at the limit: accepted
    # SEG-6: an append of small batches that no segment could hold, and one that just fits
    exact = CONFIG["segment_bytes"]
    pieces = [batch(1, pad=p) for p in range(1, 40)]
    total, parts = 0, []
    for piece in pieces:
        if total + len(piece) > exact:
            break
        parts.append(piece)
        total += len(piece)
    filler = exact - total  # pad the last batch so that the append is exactly segment.bytes
    parts[-1] = batch(1, pad=len(parts[-1]) - 61 - 12 + filler)
    assert len(b"".join(parts)) in range(exact - 2, exact + 1)
    before = snapshot(log)
    assert_rejected(log, b"".join(parts) + batch(1), ErrorCode.RECORD_LIST_TOO_LARGE)
    assert snapshot(log) == before
    info = log.append(b"".join(parts))
    assert info.batch_count == len(parts) and log.active_segment.size == info.size


@pytest.mark.spec("LOG-1", "LOG-8")
@pytest.mark.parametrize("empty", [b"", bytearray(), memoryview(b"")])
def test_an_empty_append_changes_nothing(tmp_path, empty):
    log = filled_log(tmp_path, flush_messages=1)
    before = snapshot(log)
    info = log.append(empty)
    assert (info.first_offset, info.last_offset, info.record_count) == (-1, -1, 0)
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "BATCH-2", "BATCH-3")
@given(garbage=st.binary(max_size=400))
def test_random_bytes_are_a_typed_error_and_change_nothing(garbage):
    with temp_dir() as d:
        log = Log.open(d, LogConfig(**CONFIG), ManualClock(T0))
        log.append(batch(2))
        before = snapshot(log)
        if garbage:
            with pytest.raises(KafkaError) as err:
                log.append(garbage)
            assert err.value.code in APPEND_ERRORS
        else:
            log.append(garbage)
        assert snapshot(log) == before
        log.close()


@pytest.mark.spec("LOG-8", "LOG-10")
@given(
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(0, 30), st.binary(max_size=30)),
        min_size=1,
        max_size=3,
    )
)
def test_spliced_appends_are_all_or_nothing(edits):
    """Cut, insert and overwrite byte ranges of a valid three-batch append: the log takes
    it all, with the bytes it was sent, or raises a typed error and takes nothing."""
    data = bytearray(batch(2) + batch(3, codec=Compression.SNAPPY) + batch(1))
    for where, remove, insert in edits:
        where %= len(data) + 1
        data[where : where + remove] = insert
    with temp_dir() as d:
        log = Log.open(d, LogConfig(**CONFIG), ManualClock(T0))
        log.append(batch(2))
        before = snapshot(log)
        try:
            info = log.append(bytes(data))
        except KafkaError as err:
            assert err.code in APPEND_ERRORS
            assert snapshot(log) == before
        else:
            stored = b"".join(raw for _, raw in read_everything(log)[-info.batch_count :])
            assert len(stored) == len(data) and stored[8:12] == bytes(data[8:12])
            assert log.log_end_offset == info.last_offset + 1 == 2 + info.record_count
        log.close()


@pytest.mark.spec("LOG-8", "LOG-17", "BATCH-5")
def test_a_batch_whose_records_do_not_parse_is_rejected_on_a_compacted_topic(tmp_path):
    """A compacted topic decodes what it takes (LOG-17): a CRC-valid batch whose records
    section is garbage would otherwise stop the cleaner on every round."""
    log = filled_log(tmp_path, cleanup_policy=("compact",))
    before = snapshot(log)
    bad = bytearray(batch(3))
    bad[61:] = b"\x7f" * (len(bad) - 61)  # the records section is garbage; count and CRC fine
    with pytest.raises(KafkaError) as err:
        log.append(recrc(bad))
    assert err.value.code == ErrorCode.INVALID_RECORD
    assert snapshot(log) == before


@pytest.mark.spec("LOG-17")
def test_a_compacted_topic_rejects_a_record_without_a_key(tmp_path):
    log = filled_log(tmp_path, cleanup_policy=("compact", "delete"))
    before = snapshot(log)
    keyless = build_batch([Record(b"k", b"v", T0), Record(None, b"v", T0)])
    with pytest.raises(KafkaError) as err:
        log.append(batch(2) + keyless)  # the good first batch is not written either
    assert err.value.code == ErrorCode.INVALID_RECORD
    assert snapshot(log) == before


@pytest.mark.spec("LOG-8", "LOG-17")
def test_a_delete_policy_topic_keeps_records_opaque(tmp_path):
    """The documented departure from Kafka (LOG-17): without compaction the append checks
    the header and CRC only, so a keyless record and even an unparsable records section
    are stored as they came (a consumer's decoder finds the latter)."""
    log = filled_log(tmp_path)
    keyless = build_batch([Record(None, b"v", T0)])
    bad = bytearray(batch(3))
    bad[61:] = b"\x7f" * (len(bad) - 61)
    first = log.append(keyless).first_offset
    assert log.append(recrc(bad)).first_offset == first + 1


# ---------------------------------------------------------------------- index files
def _probe(log: Log):
    ends = log.log_end_offset
    reads = {}
    for o in range(ends):
        info = log.read(o, 1)
        reads[o] = (info.first_offset, info.slices[0].position, info.next_offset)
    times = {t: log.offset_for_timestamp(T0 + t) for t in range(-1, 14 * 10 + 2, 3)}
    return read_everything(log), reads, times


def _damage(path: str, kind: str, damage: str) -> None:
    entry = 8 if kind == ".index" else 12
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    if damage == "odd-size":
        raw += b"\x01\x02\x03\x04\x05\x06\x07"[: entry - 1]
    elif damage == "decreasing":  # the last two entries swapped, or two made up
        if len(raw) >= 2 * entry and any(raw):
            n = len(raw) // entry
            raw = raw[: n * entry]
            a, b = raw[(n - 2) * entry : (n - 1) * entry], raw[(n - 1) * entry :]
            raw[(n - 2) * entry :] = b + a
        elif kind == ".index":
            raw = bytearray(struct.pack(">iiii", 2, 200, 1, 100))
        else:
            raw = bytearray(struct.pack(">qiqi", T0 + 200, 2, T0 + 100, 3))
    elif damage == "trailing-garbage":
        raw += bytes(entry * 3) + b"\x01" + bytes(entry - 1)
    elif damage == "beyond-log":
        if kind == ".index":
            raw += struct.pack(">ii", 10**6, 10**7)
        else:
            raw += struct.pack(">qi", 2**62, 10**6)
    elif damage == "empty":
        raw = bytearray()
    with open(path, "wb") as f:
        f.write(bytes(raw))


@pytest.mark.spec("INDEX-7", "TIDX-2", "DUR-4", "DUR-2")
@pytest.mark.parametrize("kind", [".index", ".timeindex"])
@pytest.mark.parametrize(
    "damage", ["odd-size", "decreasing", "trailing-garbage", "beyond-log", "empty", "deleted"]
)
@pytest.mark.parametrize("which", [0, 1, -1])
@pytest.mark.parametrize("clean", [True, False])
def test_a_damaged_index_is_rebuilt_and_nothing_is_lost(tmp_path, kind, damage, which, clean):
    clock = ManualClock(T0)
    log = filled_log(tmp_path, clock)
    expected = _probe(log)
    base = log.segments[which].base_offset
    if clean:
        log.close()
    else:  # crash: the maps go, nothing is trimmed or flushed
        for segment in log.segments:
            segment.offset_index.close_handler()
            segment.time_index.close_handler()
            segment.log.close()
    path = os.path.join(tmp_path, f"{base:020d}{kind}")
    if damage == "deleted":
        os.unlink(path)
    else:
        _damage(path, kind, damage)
    reopened = Log.open(
        tmp_path, LogConfig(**CONFIG), clock, recovery_point=0, clean_shutdown=clean
    )
    assert _probe(reopened) == expected
    for segment in reopened.segments:
        check_segment(segment)
    reopened.close()
    again = Log.open(tmp_path, LogConfig(**CONFIG), clock, clean_shutdown=True)
    assert _probe(again) == expected
    again.close()


# ---------------------------------------------------------------------- strangers
STRAY_FILES = {
    "README.txt": b"operator notes",
    "foo.log": b"not a segment",
    "12345.log": b"a number, not 20 digits",
    "000000000000000000001.log": b"21 digits",
    "00000000000000000000.log.bak": b"a backup of segment 0",
    "00000000000000000000.LOG": b"upper case",
    "00000000000000000000": b"no extension",
    ".hidden": b"dot file",
    "00000000000000000000.log.swp": b"an editor's swap file",
    "00000000000000000000.txt": b"a per-segment file of a kind the loader does not know",
}
ORPHANS = ["00000000000000000999.index", "00000000000000000999.timeindex"]


def _write_strays(path) -> None:
    for name, content in STRAY_FILES.items():
        (path / name).write_bytes(content)
    (path / "archive").mkdir()
    (path / "archive" / "00000000000000000000.log").write_bytes(b"an old copy")
    for name in ORPHANS:
        (path / name).write_bytes(bytes(24))


def _assert_strays_intact(path) -> None:
    for name, content in STRAY_FILES.items():
        assert (path / name).read_bytes() == content, name
    assert (path / "archive" / "00000000000000000000.log").read_bytes() == b"an old copy"
    for name in ORPHANS:  # DUR-4: an index without its .log is derived data and goes
        assert not (path / name).exists(), name


@pytest.mark.spec("DUR-10", "DUR-2")
@pytest.mark.parametrize("clean", [True, False])
def test_stray_files_in_a_partition_directory_are_left_alone(tmp_path, clean):
    clock = ManualClock(T0)
    log = filled_log(tmp_path, clock)
    expected = _probe(log)
    log.close()
    _write_strays(tmp_path)
    reopened = Log.open(tmp_path, LogConfig(**CONFIG), clock, clean_shutdown=clean)
    assert _probe(reopened) == expected
    _assert_strays_intact(tmp_path)
    # life goes on around them: appends, rolls, retention, truncation, restarts
    leo = reopened.log_end_offset
    for i in range(8):
        assert reopened.append(batch(3, ts=T0 + 1000 + i)).first_offset == leo + 3 * i
    reopened.delete_records_before(reopened.segments[2].base_offset)
    reopened.truncate_to(leo + 5)
    reopened.close()
    again = Log.open(tmp_path, LogConfig(**CONFIG), clock, clean_shutdown=False)
    assert again.log_end_offset == leo + 3
    _assert_strays_intact(tmp_path)
    again.close()


@pytest.mark.spec("DUR-10", "DUR-4")
@pytest.mark.parametrize(
    "name",
    [
        "00000000000000000500.log",
        "00000000000000000900.index",
        "00000000000000000000.swap",
        "00000000000000000000.log.bak",
    ],
)
def test_a_subdirectory_named_like_a_segment_file_is_left_alone(tmp_path, name):
    """Kafka's loader only looks at regular files (`file.isFile`); a directory that merely
    looks like a segment file is neither a segment nor an orphaned index to delete."""
    clock = ManualClock(T0)
    log = filled_log(tmp_path, clock)
    expected = _probe(log)
    log.close()
    (tmp_path / name).mkdir()
    (tmp_path / name / "keep.txt").write_text("mine")
    reopened = Log.open(tmp_path, LogConfig(**CONFIG), clock, clean_shutdown=False)
    assert _probe(reopened) == expected
    assert (tmp_path / name / "keep.txt").read_text() == "mine"
    reopened.close()


@pytest.mark.spec("DUR-10", "DUR-12")
def test_a_data_directory_with_strangers_and_dotted_dashed_topics(tmp_path):
    clock = ManualClock(T0)
    topics = [("my.topic-v1.2-prod", 7), ("a-b-c", 0), ("x", 12), ("__consumer_offsets", 49)]
    manager = LogManager(tmp_path, LogConfig(**CONFIG), clock)
    for n, (topic, partition) in enumerate(topics):
        log = manager.get_or_create_log(topic, partition)
        for i in range(n + 2):
            log.append(batch(2, key=topic.encode(), ts=T0 + i))
    strays = {
        "lost+found": None,
        "backups": None,
        "orders": None,  # no partition
        "orders-x": None,  # partition not a number
        "orders-1.5": None,
        "orders-9.bak": None,
    }
    for name in strays:
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.bin").write_bytes(name.encode())
    (tmp_path / "orders-3").write_bytes(b"a file named like a partition")
    (tmp_path / "README").write_text("mine")
    manager.close()
    reopened = LogManager(tmp_path, LogConfig(**CONFIG), clock)
    assert sorted(reopened.logs) == sorted(topics)
    for n, (topic, partition) in enumerate(topics):
        log = reopened.get_log(topic, partition)
        assert log.log_end_offset == 2 * (n + 2)
        assert os.path.basename(log.dir) == f"{topic}-{partition}"
    stray_names = sorted(os.path.basename(p) for p in reopened.stray_paths)
    assert stray_names == sorted([*strays, "orders-3", "README"])
    reopened.close()
    for name in strays:
        assert (tmp_path / name / "data.bin").read_bytes() == name.encode()
    assert (tmp_path / "orders-3").read_bytes() == b"a file named like a partition"
    assert (tmp_path / "README").read_text() == "mine"


# ---------------------------------------------------------------------- a full disk
def _failing_pwrite(monkeypatch, *, partial: int | None, truncate_fails: bool = False):
    """Make the next .log write put `partial` bytes on disk (None: none), then fail with
    ENOSPC; optionally make the clean-up ftruncate fail too (EIO)."""
    real_pwrite, real_ftruncate = os.pwrite, os.ftruncate
    calls = []

    def pwrite(fd, data, offset):
        calls.append(len(data))
        if len(calls) == 1 and partial:
            return real_pwrite(fd, bytes(data)[:partial], offset)
        raise OSError(errno.ENOSPC, "No space left on device")

    def ftruncate(fd, length):
        if truncate_fails:
            raise OSError(errno.EIO, "Input/output error")
        return real_ftruncate(fd, length)

    monkeypatch.setattr(file_records.os, "pwrite", pwrite)
    monkeypatch.setattr(file_records.os, "ftruncate", ftruncate)
    return calls


@pytest.mark.spec("LOG-8", "DUR-1", "DUR-2")
@pytest.mark.parametrize("partial", [None, 1, 61, 100, "first-batch"])
@pytest.mark.parametrize("truncate_fails", [False, True])
def test_a_full_disk_fails_the_append_cleanly(tmp_path, monkeypatch, partial, truncate_fails):
    clock = ManualClock(T0)
    log = filled_log(tmp_path, clock)
    acked = read_everything(log)
    before = snapshot(log)
    first, second = batch(2, pad=30), batch(3, pad=30)
    if partial == "first-batch":
        partial = len(first) + 10  # a whole batch reaches the disk, then the rest fails
    calls = _failing_pwrite(monkeypatch, partial=partial, truncate_fails=truncate_fails)
    with pytest.raises(KafkaStorageError) as err:
        log.append(first + second)
    assert err.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert calls, "the fault was never injected"
    monkeypatch.undo()
    assert (log.log_end_offset, log.size_in_bytes) == (before[1], sum(s for _, s in before[3]))
    assert read_everything(log) == acked
    if not truncate_fails:
        assert snapshot(log) == before
    # the disk has room again: offsets continue with no gap and no reuse
    leo = log.log_end_offset
    info = log.append(batch(1))
    assert info.first_offset == leo
    acked = read_everything(log)
    # a crash now: recovery must find exactly what was acknowledged
    for segment in log.segments:
        segment.offset_index.close_handler()
        segment.time_index.close_handler()
        segment.log.close()
    recovered = Log.open(tmp_path, LogConfig(**CONFIG), clock, recovery_point=0)
    assert read_everything(recovered) == acked
    assert recovered.log_end_offset == leo + 1
    recovered.close()


@pytest.mark.spec("DUR-1", "DUR-2")
@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("partial", [80, "first-batch"])
def test_a_full_disk_then_a_restart_keeps_a_valid_prefix(tmp_path, monkeypatch, clean, partial):
    """The write failed and even the clean-up failed, and nothing else was appended: after
    a restart the log holds the acknowledged batches, then at most whole batches of the
    failed append at the offsets it would have had (a failed write is ambiguous, as in
    Kafka), and nothing torn."""
    clock = ManualClock(T0)
    log = filled_log(tmp_path, clock)
    acked = read_everything(log)
    leo = log.log_end_offset
    first, second = batch(2, pad=30), batch(3, pad=30)
    if partial == "first-batch":
        partial = len(first) + 10
    _failing_pwrite(monkeypatch, partial=partial, truncate_fails=True)
    with pytest.raises(KafkaStorageError):
        log.append(first + second)
    monkeypatch.undo()
    if clean:
        log.close()
    else:
        for segment in log.segments:
            segment.offset_index.close_handler()
            segment.time_index.close_handler()
            segment.log.close()
    reopened = Log.open(tmp_path, LogConfig(**CONFIG), clock, clean_shutdown=clean)
    found = read_everything(reopened)
    assert found[: len(acked)] == acked
    extra = [(h.base_offset, raw[16:]) for h, raw in found[len(acked) :]]
    assert extra in ([], [(leo, first[16:])]), extra  # nothing torn, nothing misplaced
    assert reopened.log_end_offset == leo + 2 * len(extra)
    assert reopened.append(batch(1)).first_offset == reopened.log_end_offset - 1
    reopened.close()


# ---------------------------------------------------------------------- found by the state machine
@pytest.mark.spec("DUR-2", "DUR-3")
@pytest.mark.parametrize("keep", [0, 1])
def test_a_middle_segment_that_lost_whole_batches_leaves_no_hole(tmp_path, keep):
    """An OS crash loses the unflushed page cache: a rolled but never fsynced segment can
    come back shorter, ending exactly between two batches, while the later segment's file
    survives. The recovered log must still be a prefix of the log before the crash
    (Kafka `LogLoader.recoverLog`), so the later segments must go (DUR-3)."""
    clock = ManualClock(T0)
    log = Log.open(tmp_path, LogConfig(**CONFIG), clock)
    for i in range(12):
        log.append(batch(2, ts=T0 + i))
    first, second = log.segments[0], log.segments[1]
    assert len(log.segments) >= 2 and log.recovery_point == 0
    before = read_everything(log)
    positions = [0, *(p.end for p in first.log.batch_positions())]
    cut = positions[keep]  # segment 0 keeps `keep` whole batches and loses the rest
    for segment in log.segments:
        segment.offset_index.close_handler()
        segment.time_index.close_handler()
        segment.log.close()
    os.truncate(os.path.join(tmp_path, f"{first.base_offset:020d}.log"), cut)
    recovered = Log.open(tmp_path, LogConfig(**CONFIG), clock, recovery_point=0)
    after = read_everything(recovered)
    assert after == before[: len(after)], "the recovered log is not a prefix"
    assert recovered.log_end_offset == 2 * keep < second.base_offset
    recovered.close()


@pytest.mark.spec("TIDX-4", "SEG-7", "INDEX-6")
def test_a_smaller_segment_index_bytes_after_a_restart_keeps_the_indexes_consistent(tmp_path):
    """Operators change `segment.index.bytes` (log.index.size.max.bytes). Reopening the
    active segment with a size below its entries must leave indexes that hold their rules
    when the segment rolls: the time index ends with the segment's largest timestamp."""
    clock = ManualClock(T0)
    config = dict(CONFIG, segment_index_bytes=120, index_interval_bytes=1)
    log = Log.open(tmp_path, LogConfig(**config), clock)
    for i in range(5):
        log.append(batch(1, ts=T0 + i))
    log.close()
    smaller = LogConfig(**dict(config, segment_index_bytes=24))
    log = Log.open(tmp_path, smaller, clock, clean_shutdown=True)
    active = log.active_segment
    index = active.time_index
    assert index.last_entry() == index.entry(index.entries - 1), "stale cached last entry"
    log.roll()
    entries = [index.entry(i) for i in range(index.entries)]
    assert entries[-1].timestamp == T0 + 4, entries
    log.close()
