"""kafka-ref dump-log on real segment files written by the log."""

import os
import struct

import pytest

from kafka_ref.cli import main
from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.record.batch import build_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Record


@pytest.fixture
def segment_dir(tmp_path):
    """A log of 40 batches of 10 records, indexed every batch, closed cleanly."""
    config = LogConfig.from_properties({"index.interval.bytes": 0})
    clock = ManualClock()
    log = Log.open(tmp_path / "t-0", config, clock, producer_state=ProducerStateManager)
    for n in range(40):
        clock.advance(5)
        records = [
            Record(b"k%d" % i, b"value-%d-%d" % (n, i), clock.milliseconds()) for i in range(10)
        ]
        log.append(build_batch(records, compression=Compression.GZIP if n % 2 else 0))
    log.close()
    return tmp_path / "t-0"


def run(capsys, *args):
    code = main(["--log-level", "ERROR", "dump-log", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.spec("TOOLS-1")
def test_log_dump_lists_every_batch_and_record(segment_dir, capsys):
    code, out, _ = run(capsys, segment_dir / "00000000000000000000.log", "--print-data")
    assert code == 0
    batch_lines = [line for line in out.splitlines() if line.startswith("baseOffset:")]
    assert len(batch_lines) == 40
    assert batch_lines[1].startswith("baseOffset: 10 lastOffset: 19 count: 10 ")
    assert "compresscodec: gzip" in batch_lines[1] and "isvalid: true" in batch_lines[1]
    records = [line for line in out.splitlines() if line.startswith("| offset:")]
    assert len(records) == 400
    assert records[13].startswith("| offset: 13 ") and records[13].endswith("payload: value-1-3")


@pytest.mark.spec("TOOLS-1")
def test_log_dump_flags_a_crc_mismatch_and_a_torn_tail(segment_dir, capsys):
    path = segment_dir / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    data[61 + 5] ^= 0xFF  # a byte inside the first batch's records
    path.write_bytes(bytes(data) + b"\x00" * 30)
    code, out, _ = run(capsys, path)
    assert code == 1
    lines = out.splitlines()
    assert "isvalid: false" in lines[2] and "isvalid: true" in lines[3]
    assert "Found 30 invalid bytes" in out


@pytest.mark.spec("TOOLS-2")
def test_index_dump_agrees_with_its_log(segment_dir, capsys):
    code, out, _ = run(capsys, segment_dir / "00000000000000000000.index")
    assert code == 0
    entries = [line for line in out.splitlines() if line.startswith("offset:")]
    assert entries and "Mismatches" not in out
    code, out, _ = run(capsys, segment_dir / "00000000000000000000.timeindex")
    assert code == 0 and "Mismatches" not in out
    assert any(line.startswith("timestamp:") for line in out.splitlines())


@pytest.mark.spec("TOOLS-2")
def test_index_dump_reports_an_entry_that_points_at_the_wrong_batch(segment_dir, capsys):
    path = segment_dir / "00000000000000000000.index"
    data = bytearray(path.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, relative + 3, position)  # claims an offset it lacks
    path.write_bytes(bytes(data))
    code, out, _ = run(capsys, path)
    assert code == 1
    assert f"Index offset: {relative + 3}, log offset: {relative}" in out


@pytest.mark.spec("TOOLS-2")
def test_time_index_dump_reports_a_wrong_timestamp(segment_dir, capsys):
    path = segment_dir / "00000000000000000000.timeindex"
    data = bytearray(path.read_bytes())
    (timestamp,) = struct.unpack_from(">q", data, 12)
    struct.pack_into(">q", data, 12, timestamp + 1)
    path.write_bytes(bytes(data))
    code, out, _ = run(capsys, path)
    assert code == 1 and "Index timestamp" in out


@pytest.mark.spec("TOOLS-3")
def test_missing_file_and_wrong_flag_are_one_line(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "00000000000000000000.log")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_info:
        main(["dump-log", "--no-such-flag", os.devnull])
    assert exit_info.value.code == 2


@pytest.fixture
def txn_dir(tmp_path):
    """A log where producer 1 commits (offsets 0-1, marker 2) and producer 2 aborts (3-4,
    marker 5, coordinator epoch 7), written through the log as the coordinator would."""
    from kafka_ref.log.validator import AppendOrigin
    from kafka_ref.record.control import ControlRecordType, EndTransactionMarker
    from tests.unit.log.test_txn_log import Producer

    log = Log.open(
        tmp_path / "t-0",
        LogConfig.from_properties({}),
        ManualClock(),
        producer_state=ProducerStateManager,
    )
    committer, aborter = Producer(1, epoch=4), Producer(2)
    log.append(committer.batch(2))
    log.append(
        committer.marker(EndTransactionMarker(ControlRecordType.COMMIT, 0)),
        origin=AppendOrigin.COORDINATOR,
    )
    log.append(aborter.batch(2))
    log.append(
        aborter.marker(EndTransactionMarker(ControlRecordType.ABORT, 7)),
        origin=AppendOrigin.COORDINATOR,
    )
    log.close()
    return tmp_path / "t-0"


@pytest.mark.spec("TOOLS-23")
def test_markers_print_as_kafkas_end_txn_marker_lines(txn_dir, capsys):
    code, out, _ = run(capsys, txn_dir / "00000000000000000000.log", "--print-data")
    assert code == 0
    lines = out.splitlines()
    commit = next(i for i, line in enumerate(lines) if line.startswith("baseOffset: 2 "))
    assert "producerId: 1 producerEpoch: 4" in lines[commit]
    assert "isTransactional: true isControl: true" in lines[commit]
    assert lines[commit + 1].startswith("| offset: 2 ")
    assert lines[commit + 1].endswith(
        "keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 0"
    )
    abort = next(line for line in lines if line.startswith("| offset: 5 "))
    assert abort.endswith("endTxnMarker: ABORT coordinatorEpoch: 7")
    data = [line for line in lines if line.startswith("| offset: 3 ")]
    assert data[0].endswith("payload: 2-0")  # a transactional record prints its data


@pytest.mark.spec("TOOLS-23")
def test_a_txnindex_prints_each_aborted_transaction(txn_dir, capsys):
    path = txn_dir / "00000000000000000000.txnindex"
    code, out, _ = run(capsys, path)
    assert code == 0
    assert out.splitlines()[1:] == [
        "version: 0 producerId: 2 firstOffset: 3 lastOffset: 5 lastStableOffset: 6"
    ]
    path.write_bytes(path.read_bytes() + b"\x00" * 5)  # a torn entry at the end
    code, out, _ = run(capsys, path)
    assert code == 1 and "Found 5 invalid bytes at the end" in out
