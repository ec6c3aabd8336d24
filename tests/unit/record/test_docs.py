"""The hex dumps in docs/record-format.md are what the code builds, not what someone typed."""

import pathlib

import pytest

from kafka_ref.record.batch import RecordBatch, build_batch, validate_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.legacy import build_message_set, iter_records
from kafka_ref.record.record import Header, Record

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "record-format.md"
RECORDS = [
    Record(b"k1", b"hello", 1700000000000, (Header("h", b"v"),)),
    Record(None, b"kafka", 1700000000005),
]


def hexdump(data: bytes) -> str:
    """The dump format the page uses: a 4-digit offset, then 16 bytes a line."""
    lines = []
    for start in range(0, len(data), 16):
        chunk = " ".join(f"{byte:02x}" for byte in data[start : start + 16])
        lines.append(f"{start:04x}  {chunk}")
    return "\n".join(lines)


@pytest.mark.spec("BATCH-1", "BATCH-10")
def test_uncompressed_dump_is_current():
    batch = build_batch(RECORDS)
    assert hexdump(batch) in DOC.read_text()
    header = validate_batch(batch)
    assert (header.size, header.crc) == (91, 0xB795472B)  # the values the tables explain
    assert [r.offset for r in RecordBatch(batch).records()] == [0, 1]


@pytest.mark.spec("CODEC-4")
def test_lz4_dump_is_current():
    batch = build_batch(RECORDS, compression=Compression.LZ4)
    assert hexdump(batch) in DOC.read_text()
    assert batch[61:68].hex() == "04224d18604082" and batch[68:72].hex() == "1e000080"


@pytest.mark.spec("LEGACY-1")
def test_legacy_v1_dump_is_current():
    data = build_message_set([Record(r.key, r.value, r.timestamp) for r in RECORDS], magic=1)
    assert hexdump(data) in DOC.read_text()
    assert len(data) == 80 and [r.offset for r in iter_records(data)] == [0, 1]
