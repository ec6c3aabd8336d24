"""Crash recovery, index rebuilds and interrupted segment replacement (DUR-1..DUR-5,
DUR-11, INDEX-7)."""

import os
import random
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kafka_ref.config import LogConfig
from kafka_ref.log import recovery as log_recovery
from kafka_ref.log.abstract_index import IndexCorruptError
from kafka_ref.log.log import Log
from kafka_ref.log.segment import Segment
from kafka_ref.log.segment_recovery import check_segment
from tests.unit.log.conftest import (
    T0,
    make_batch,
    open_log,
    read_everything,
    segment_files,
    temp_dir,
)

CONFIG = dict(segment_bytes=900, index_interval_bytes=120)
# Segment replacement is the cleaner's: its gaps are legitimate only on a compacted log
# (on a delete-policy log a gap between segments is a lost tail, DUR-3).
COMPACTED = dict(CONFIG, cleanup_policy=("compact",))


def _write(d, counts, config=CONFIG):
    log = open_log(d, **config)
    for i, count in enumerate(counts):
        log.append(make_batch(count, ts=T0 + i, value_size=7 + i % 5))
    return log


def _crash(log: Log) -> None:
    """A crash: the files stay as they are, nothing is trimmed, checkpointed or closed."""
    for segment in log.segments:
        segment.offset_index.flush()
        segment.time_index.flush()


def _reopen(d, config=CONFIG, **kw) -> Log:
    return Log.open(d, LogConfig(**config), _FixedClock(), **kw)


def _snapshot(log):
    return [(h.base_offset, raw) for h, raw in read_everything(log)]


class _FixedClock:
    def milliseconds(self):
        return T0


@pytest.mark.spec("DUR-1", "DUR-2", "DUR-3")
@given(counts=st.lists(st.integers(1, 6), min_size=1, max_size=40), data=st.data())
def test_a_torn_tail_is_cut_and_the_rest_is_a_prefix(counts, data):
    with temp_dir() as d:
        log = _write(d, counts)
        before = _snapshot(log)
        _crash(log)
        victim = data.draw(st.sampled_from(log.segments))
        cut = data.draw(st.integers(0, victim.size))
        if victim is not log.active_segment:
            # Inside an older segment only a cut through a batch is visible to recovery:
            # whole batches lost at its end look like a segment that ended there (DUR-2).
            sizes = [len(r) for b, r in before if victim.base_offset <= b < victim.next_offset]
            boundaries = {sum(sizes[:i]) for i in range(len(sizes) + 1)}
            assume(cut not in boundaries)
        os.truncate(victim.log.path, cut)
        recovered = _reopen(d)  # recovery point 0, unclean: everything is checked
        after = _snapshot(recovered)
        assert after == before[: len(after)]  # a prefix, same offsets, same bytes
        # all batches that lay wholly before the cut survive; nothing after the cut does
        survivors = [b for b in before if b[0] < victim.base_offset]
        position = 0
        for base, raw in before:
            if victim.base_offset <= base and position + len(raw) <= cut:
                survivors.append((base, raw))
            if base >= victim.base_offset:
                position += len(raw)
        assert after == survivors
        last = after[-1] if after else None
        expected_end = last[0] + _count(last[1]) if last else 0
        assert recovered.log_end_offset == expected_end
        assert recovered.append(make_batch(1)).first_offset == expected_end
        recovered.close()


def _count(raw: bytes) -> int:
    return int.from_bytes(raw[23:27], "big") + 1


@pytest.mark.spec("DUR-1", "DUR-3")
@given(counts=st.lists(st.integers(1, 4), min_size=2, max_size=30), data=st.data())
def test_a_flipped_byte_truncates_at_that_batch_and_drops_later_segments(counts, data):
    with temp_dir() as d:
        log = _write(d, counts)
        before = _snapshot(log)
        _crash(log)
        segment = data.draw(st.sampled_from(log.segments[:-1] or log.segments))
        in_segment = [(b, r) for b, r in before if segment.base_offset <= b < segment.next_offset]
        k = data.draw(st.integers(0, len(in_segment) - 1))
        hit, raw = in_segment[k]
        # every byte the CRC covers, plus the length and magic (the base offset and leader
        # epoch are outside the CRC: see the next test)
        inside = data.draw(st.sampled_from([*range(8, 12), *range(16, len(raw))]))
        position = sum(len(r) for _, r in in_segment[:k]) + inside
        with open(segment.log.path, "r+b") as f:
            f.seek(position)
            byte = f.read(1)[0]
            f.seek(position)
            f.write(bytes([byte ^ (1 << data.draw(st.integers(0, 7)))]))
        recovered = _reopen(d)
        after = _snapshot(recovered)
        assert [b for b, _ in after] == [b for b, _ in before if b < hit]
        assert after == before[: len(after)]
        assert all(s.base_offset <= hit for s in recovered.segments)
        assert recovered.log_end_offset == hit
        recovered.close()


@pytest.mark.spec("DUR-1")
@pytest.mark.parametrize("new_base", [0, 10**6])
def test_a_base_offset_out_of_order_is_treated_as_corrupt(tmp_path, new_base):
    log = _write(tmp_path, [2] * 40)
    before = _snapshot(log)
    _crash(log)
    first, second = log.segments[:2]
    victim = [b for b, _ in before if first.base_offset < b < first.next_offset][2]
    position = sum(len(r) for b, r in before if first.base_offset <= b < victim)
    with open(first.log.path, "r+b") as f:  # offsets backwards, or past the next segment
        f.seek(position)
        f.write(new_base.to_bytes(8, "big"))
    recovered = _reopen(tmp_path)
    assert [b for b, _ in _snapshot(recovered)] == [b for b, _ in before if b < victim]
    assert second.base_offset > victim


@pytest.mark.spec("DUR-2", "DUR-5")
def test_recovery_starts_at_the_recovery_point_segment(tmp_path, monkeypatch):
    log = _write(tmp_path, [3] * 30)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    log.flush(bases[2] + 1)  # flushed up to inside the third segment
    recovery_point = log.recovery_point
    _crash(log)
    # damage a flushed segment: recovery must trust it (it was fsynced), not cut it
    with open(log.segments[0].log.path, "r+b") as f:
        f.seek(100)
        f.write(b"\xff")
    visited = []
    real = log_recovery.recover_segment

    def spy(segment, *args):
        visited.append(segment.base_offset)
        return real(segment, *args)

    monkeypatch.setattr(log_recovery, "recover_segment", spy)
    recovered = _reopen(tmp_path, recovery_point=recovery_point)
    assert visited == bases[2:]
    assert recovered.log_end_offset == 90 and recovered.recovery_point == recovery_point
    assert [s.base_offset for s in recovered.segments] == bases


@pytest.mark.spec("DUR-6")
def test_a_clean_shutdown_skips_recovery(tmp_path, monkeypatch):
    log = _write(tmp_path, [2] * 20)
    before = _snapshot(log)
    log.close()
    monkeypatch.setattr(
        log_recovery, "recover_segment", lambda segment, *a: pytest.fail("recovered")
    )
    reopened = _reopen(tmp_path, clean_shutdown=True)
    assert _snapshot(reopened) == before
    assert reopened.recovery_point == reopened.log_end_offset == 40


@pytest.mark.spec("DUR-4")
@given(counts=st.lists(st.integers(1, 5), min_size=1, max_size=40), data=st.data())
def test_deleting_index_files_is_always_safe(counts, data):
    with temp_dir() as d:
        log = _write(d, counts)
        before = _snapshot(log)
        probes = {o: log.read(o, 300).slices[0].position for o in range(log.log_end_offset)}
        times = {t: log.offset_for_timestamp(T0 + t) for t in range(-1, len(counts) + 1)}
        clean = data.draw(st.booleans())
        (log.close if clean else lambda: _crash(log))()
        originals = {n: Path(d, n).read_bytes() for n in segment_files(d)}
        index_files = [n for n in segment_files(d) if n.endswith((".index", ".timeindex"))]
        doomed = data.draw(st.lists(st.sampled_from(index_files), min_size=1, unique=True))
        for name in doomed:
            os.unlink(os.path.join(d, name))
        reopened = _reopen(d, clean_shutdown=clean, recovery_point=10**9 if not clean else 0)
        assert _snapshot(reopened) == before
        assert {o: reopened.read(o, 300).slices[0].position for o in probes} == probes
        assert {t: reopened.offset_for_timestamp(T0 + t) for t in times} == times
        reopened.close()
        for name in doomed:  # rebuilt from the log, entry for entry (one batch per append)
            if clean:
                assert Path(d, name).read_bytes() == originals[name]


@pytest.mark.spec("DUR-4")
def test_an_orphaned_index_file_is_deleted(tmp_path):
    log = _write(tmp_path, [2] * 3)
    log.close()
    (tmp_path / "00000000000000000999.index").write_bytes(b"\x00" * 8)
    (tmp_path / "notes.txt").write_text("mine")
    _reopen(tmp_path, clean_shutdown=True).close()
    assert not (tmp_path / "00000000000000000999.index").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.spec("INDEX-7")
@pytest.mark.parametrize("damage", ["garbage", "odd-size", "beyond-log", "mid-batch"])
def test_a_corrupt_index_is_rebuilt_on_load(tmp_path, damage):
    log = _write(tmp_path, [2] * 40)
    before = _snapshot(log)
    probes = {o: log.read(o, 200).first_offset for o in range(log.log_end_offset)}
    log.close()
    segment = log.segments[0]
    path = segment.offset_index.path
    raw = bytearray(Path(path).read_bytes())
    assert len(raw) >= 16
    if damage == "garbage":
        raw[8:16] = os.urandom(4) + b"\x00\x00\x00\x01"
    elif damage == "odd-size":
        raw += b"\x01\x02\x03"
    elif damage == "beyond-log":
        raw += (10**6).to_bytes(4, "big") + (10**7).to_bytes(4, "big")
    else:  # the last entry points into the middle of a batch
        raw[-4:] = (int.from_bytes(raw[-4:], "big") + 7).to_bytes(4, "big")
    Path(path).write_bytes(bytes(raw))
    with pytest.raises(IndexCorruptError):
        check_segment(Segment(tmp_path, 0, LogConfig(**CONFIG), _FixedClock()))
    reopened = _reopen(tmp_path, clean_shutdown=True)
    assert _snapshot(reopened) == before
    assert {o: reopened.read(o, 200).first_offset for o in probes} == probes
    check_segment(reopened.segments[0])


@pytest.mark.spec("DUR-11")
def test_an_uncommitted_replacement_is_rolled_back(tmp_path):
    log = _write(tmp_path, [2] * 30)
    before = _snapshot(log)
    old = list(log.segments[:2])
    cleaned = log.new_cleaned_segment(old[0].base_offset)
    for _, raw in read_everything(log)[:3]:
        cleaned.append(raw)
    cleaned.flush()
    # a crash before the commit, with one .swap already renamed (a higher base) and the
    # lower one still .cleaned: the whole replacement must roll back
    second = log.new_cleaned_segment(old[1].base_offset)
    second.change_suffix(".cleaned", ".swap")
    _crash(log)
    reopened = _reopen(tmp_path)
    assert _snapshot(reopened) == before
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".cleaned", ".swap"))]


@pytest.mark.spec("DUR-11")
@pytest.mark.parametrize("crash_after", ["commit", "old-deleted", "done"])
def test_a_committed_replacement_is_completed(tmp_path, crash_after, monkeypatch):
    log = _write(tmp_path, [2] * 30, COMPACTED)
    before = _snapshot(log)
    old = list(log.segments[:2])
    keep = {base for base, _ in before if base % 4 == 0 and base < old[1].next_offset}
    cleaned = log.new_cleaned_segment(old[0].base_offset)
    for base, raw in before:
        if base in keep:
            cleaned.append(raw)
    if crash_after == "done":
        log.replace_segments([cleaned], old)
    else:
        calls = []
        real_change = Segment.change_suffix

        def crash_midway(self, old_suffix, new_suffix):
            calls.append(new_suffix)
            if crash_after == "old-deleted" and len(calls) == 2:
                raise KeyboardInterrupt  # old segments are deleted, .swap not yet renamed
            real_change(self, old_suffix, new_suffix)
            if crash_after == "commit":
                raise KeyboardInterrupt  # renamed to .swap, old segments still there

        monkeypatch.setattr(Segment, "change_suffix", crash_midway)
        with pytest.raises(KeyboardInterrupt):
            log.replace_segments([cleaned], old)
        monkeypatch.undo()
    _crash(log)
    reopened = _reopen(tmp_path, COMPACTED)
    expected = [(b, r) for b, r in before if b in keep or b >= old[1].next_offset]
    assert _snapshot(reopened) == expected
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".cleaned", ".swap", ".deleted"))]


@pytest.mark.spec("DUR-11")
def test_leftover_deleted_files_are_removed(tmp_path):
    log = _write(tmp_path, [2] * 5)
    log.close()
    (tmp_path / "00000000000000000000.log.deleted").write_bytes(b"old")
    (tmp_path / "00000000000000000000.index.deleted").write_bytes(b"old")
    reopened = _reopen(tmp_path, clean_shutdown=True)
    assert reopened.log_end_offset == 10
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".deleted")]


@pytest.mark.spec("DUR-2")
def test_reopen_after_clean_close_keeps_everything(tmp_path):
    rng = random.Random(3)
    log = _write(tmp_path, [rng.randint(1, 9) for _ in range(60)])
    before, end = _snapshot(log), log.log_end_offset
    log.close()
    for clean in (True, False):
        reopened = _reopen(tmp_path, clean_shutdown=clean)
        assert (_snapshot(reopened), reopened.log_end_offset) == (before, end)
        assert reopened.active_segment.offset_index.max_entries > 1  # room to grow again
        reopened.close()
