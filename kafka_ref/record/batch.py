"""The record batch (magic 2): the unit Kafka writes, stores, replicates and sends.

Since Kafka 0.11 every producer request, every segment file and every fetch response holds
*record batches*. A batch is a 61-byte header and a list of records (compressed as one blob
when a codec is set). The broker treats a batch as an opaque, checksummed block: it reads
the header, checks the CRC, writes the base offset and its leader epoch, and appends the
bytes unchanged. That is why Kafka is fast. (Kafka: `DefaultRecordBatch`.)

    offset  field                 type    notes
    0       baseOffset            int64   the producer sends 0; the broker writes the real one
    8       batchLength           int32   bytes after this field (total size - 12)
    12      partitionLeaderEpoch  int32   written by the leader; not covered by the CRC
    16      magic                 int8    2
    17      crc                   uint32  CRC-32C (Castagnoli) of bytes [21, end)
    21      attributes            int16   bits 0-2 codec, 3 timestampType, 4 isTransactional,
                                          5 isControl, 6 hasDeleteHorizonMs
    23      lastOffsetDelta       int32   offset of the last record - baseOffset
    27      baseTimestamp         int64
    35      maxTimestamp          int64   the broker's time when LogAppendTime
    43      producerId            int64   -1 unless idempotent or transactional
    51      producerEpoch         int16
    53      baseSequence          int32
    57      recordsCount          int32
    61      records...

The CRC starts at `attributes`, so the two fields the broker must change on append
(baseOffset and partitionLeaderEpoch) are outside it: assigning offsets needs no
decompression and no new checksum. Only LogAppendTime changes covered bytes.

Every format keeps its magic byte at position 16 (v0/v1: offset 8, size 4, crc 4, magic),
so a reader can tell a v2 batch from a legacy message set before trusting anything else
(`peek_magic`). Failures carry Kafka's codes: a bad length, magic or CRC is CORRUPT_MESSAGE;
a record that does not parse inside a CRC-valid batch, or a count that disagrees with the
offsets, is INVALID_RECORD; an unknown codec is UNSUPPORTED_COMPRESSION_TYPE.

Rules: BATCH-1..BATCH-4, BATCH-7..BATCH-11 in spec/record.md.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from crc32c import crc32c

from kafka_ref.errors import CorruptRecordError, InvalidRecordError
from kafka_ref.record.compression import Compression, compress, decompress
from kafka_ref.record.record import MalformedRecordError, Record, decode_record, encode_record

MAGIC_V2 = 2
HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: what precedes the length-counted bytes
MAGIC_OFFSET = 16  # the same position in every message format, v0 to v2
CRC_START = 21
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_STRUCT = _HEADER  # the whole 61-byte header, as `walk_batches` unpacks it
_OFFSET_AND_EPOCH = struct.Struct(">q")  # baseOffset at 0
_EPOCH = struct.Struct(">i")  # partitionLeaderEpoch at 12
_LENGTH_AND_MAGIC = struct.Struct(">qiib")

ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1


class TimestampType(IntEnum):
    """Attributes bit 3: whose clock the timestamps come from."""

    CREATE_TIME = 0  # the producer's
    LOG_APPEND_TIME = 1  # the broker's, at append


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The 61-byte header of a v2 batch, decoded."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @classmethod
    def parse(cls, buf: bytes | memoryview, pos: int = 0) -> BatchHeader:
        """Decode the header at `pos`. Checks only what is needed to trust its fields."""
        available = len(buf) - pos
        if available < LOG_OVERHEAD + 5:
            raise CorruptRecordError(f"{available} bytes cannot hold a batch header")
        _, batch_length, _, magic = _LENGTH_AND_MAGIC.unpack_from(buf, pos)
        if magic != MAGIC_V2:
            raise CorruptRecordError(f"magic {magic} where a v2 batch (magic 2) was expected")
        if batch_length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batchLength {batch_length} is below the header's 49")
        if available < HEADER_SIZE:
            raise CorruptRecordError(f"{available} bytes cannot hold a batch header")
        return cls(*_HEADER.unpack_from(buf, pos))

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Compression:
        return Compression.from_attributes(self.attributes)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes & ATTR_TIMESTAMP_TYPE) >> 3)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def is_compressed(self) -> bool:
        return self.attributes & 0x07 != 0

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the cleaner has set bit 6, baseTimestamp holds the delete horizon (KIP-534)."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None


def peek_magic(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The magic byte of the batch or message at `pos`: 0, 1 (legacy.py) or 2 (this module)."""
    if len(buf) - pos < MAGIC_OFFSET + 1:
        raise CorruptRecordError(f"{len(buf) - pos} bytes cannot hold a magic byte")
    magic = buf[pos + MAGIC_OFFSET]
    return magic - 256 if magic > 127 else magic


def compute_crc(buf: bytes | memoryview, pos: int, size: int) -> int:
    """CRC-32C of a batch's covered bytes: from attributes to the end."""
    return crc32c(memoryview(buf)[pos + CRC_START : pos + size])


def validate_batch(buf: bytes | memoryview, pos: int = 0, *, check_count: bool = True):
    """Check the batch at `pos` and return its header (Kafka: `ensureValid`).

    Checks the header, that the whole batch is in `buf`, and its CRC. With `check_count`
    (a producer's batch) it also checks recordsCount == lastOffsetDelta + 1; a batch the
    log cleaner has thinned keeps its lastOffsetDelta with fewer records, so recovery and
    replication pass check_count=False.
    """
    header = BatchHeader.parse(buf, pos)
    if header.size > len(buf) - pos:
        raise CorruptRecordError(
            f"batch of {header.size} bytes at position {pos} is truncated to {len(buf) - pos}"
        )
    actual = compute_crc(buf, pos, header.size)
    if actual != header.crc:
        raise CorruptRecordError(
            f"CRC mismatch at base offset {header.base_offset}: "
            f"stored {header.crc:#010x}, computed {actual:#010x}"
        )
    Compression.from_attributes(header.attributes)  # unknown codec: typed error
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise InvalidRecordError("negative lastOffsetDelta or recordsCount")
    if check_count and header.records_count != header.last_offset_delta + 1:
        raise InvalidRecordError(
            f"recordsCount {header.records_count} but lastOffsetDelta "
            f"{header.last_offset_delta}: the offsets of a new batch must be dense"
        )
    return header


def stamp_batch(buf: bytearray | memoryview, pos: int, base_offset: int, leader_epoch: int):
    """Write the offset and leader epoch the log assigns; the CRC stays valid."""
    _OFFSET_AND_EPOCH.pack_into(buf, pos, base_offset)
    _EPOCH.pack_into(buf, pos + 12, leader_epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Mark the batch LogAppendTime with the broker's `timestamp`, and re-checksum it.

    The CRC covers both changed fields, so it is computed again (Kafka: setMaxTimestamp).
    Consumers then read every record's timestamp as `timestamp` (BATCH-9).
    """
    header = BatchHeader.parse(buf, pos)
    if header.size > len(buf) - pos:
        raise CorruptRecordError(f"batch at position {pos} is truncated")
    struct.pack_into(">h", buf, pos + 21, header.attributes | ATTR_TIMESTAMP_TYPE)
    struct.pack_into(">q", buf, pos + 35, timestamp)
    struct.pack_into(">I", buf, pos + 17, compute_crc(buf, pos, header.size))


class BatchSpan(NamedTuple):
    """Where one batch lies, and its first header fields: its position and size in the
    source, the fields `header` unpacked (base offset, batch length, partition leader
    epoch, magic, then whatever else it asks for), and bytes `chunk` that hold the header
    from `chunk[at]`."""

    position: int
    size: int
    fields: tuple
    chunk: bytes | memoryview
    at: int


WALK_CHUNK = 16 * 1024  # a file is read this much at a time when only headers are needed
WALK_HEADER = _LENGTH_AND_MAGIC  # the fields every walk needs: base offset, length, epoch, magic


def walk_batches(
    read: Callable[[int, int], bytes | memoryview],
    start: int,
    end: int,
    *,
    header: struct.Struct = WALK_HEADER,
    header_bytes: int | None = None,
    chunk_size: int = WALK_CHUNK,
    partial_tail: bool = False,
) -> Iterator[BatchSpan]:
    """Each v2 batch from `start` (a batch boundary) to `end`, header first: the one walker
    every reader of batches uses, over a produce request, a fetch answer, a `.log` file or
    a segment in recovery.

    Batches lie end to end, each opening with its base offset and its length (the bytes
    after these 12), so a reader goes from one to the next by its length alone, reading
    `chunk_size` bytes at a time with `read(position, length)`, and never decodes a record.
    `header` (a struct opening with `>qiib`) is unpacked once per batch and handed over;
    `header_bytes` (default: the struct's size) must be in the chunk. Checked here: the
    magic (2) and a length that can hold the header. A header that fails them, or a batch
    running past `end`, raises CorruptRecordError, unless `partial_tail`: then a last
    batch cut short ends the walk (a fetch answer may end in one, KIP-74).
    """
    assert header.format.startswith(">qiib"), f"{header.format} does not open a batch header"
    need = max(header.size, header_bytes or 0)
    unpack = header.unpack_from
    pos, chunk, chunk_pos = start, b"", start
    while pos < end:
        at = pos - chunk_pos
        if at + need > len(chunk):
            chunk, chunk_pos, at = read(pos, max(chunk_size, need)), pos, 0
        if len(chunk) - at < need:
            if partial_tail:
                return
            raise CorruptRecordError(f"partial batch header at position {pos}")
        fields = unpack(chunk, at)
        length = fields[1]
        if fields[3] != MAGIC_V2:
            raise CorruptRecordError(f"magic {fields[3]} where a v2 batch (magic 2) was expected")
        if length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batchLength {length} is below the header's 49")
        size = length + LOG_OVERHEAD
        if pos + size > end:
            if partial_tail:
                return
            raise CorruptRecordError(f"partial batch at position {pos}")
        yield BatchSpan(pos, size, fields, chunk, at)
        pos += size


def walk_buffer(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    header: struct.Struct = WALK_HEADER,
    header_bytes: int | None = None,
    partial_tail: bool = False,
) -> Iterator[BatchSpan]:
    """`walk_batches` over batches in memory: the whole buffer is the one chunk."""
    view = memoryview(buf).cast("B")
    return walk_batches(
        lambda position, _: view[position:],
        pos,
        view.nbytes,
        header=header,
        header_bytes=header_bytes,
        partial_tail=partial_tail,
    )


def iter_batch_headers(buf: bytes | memoryview, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each batch in a buffer of whole batches; no CRC check."""
    for span in walk_buffer(buf, pos, header=_HEADER):
        yield span.position, BatchHeader(*span.fields)


class RecordBatch:
    """One batch's bytes with its header; records are decoded only when asked for."""

    __slots__ = ("buffer", "header")

    def __init__(self, buf: bytes | memoryview, pos: int = 0) -> None:
        self.header = BatchHeader.parse(buf, pos)
        if self.header.size > len(buf) - pos:
            raise CorruptRecordError(
                f"batch of {self.header.size} bytes at position {pos} is truncated "
                f"to {len(buf) - pos}"
            )
        self.buffer = memoryview(buf)[pos : pos + self.header.size]

    def records(self, *, max_size: int | None = None) -> Iterator[Record]:
        """Decode the records lazily, decompressing the records section once.

        `max_size` bounds the decompressed records section (CODEC-5). The records must use
        up the section exactly; a LogAppendTime batch gives every record its maxTimestamp.
        """
        header = self.header
        if header.records_count < 0:
            raise MalformedRecordError(f"negative recordsCount {header.records_count}")
        data: bytes | memoryview = self.buffer[HEADER_SIZE:]
        if header.compression != Compression.NONE:
            data = decompress(header.compression, data, max_size=max_size)
        append_time = None
        if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
            append_time = header.max_timestamp
        pos = 0
        for _ in range(header.records_count):
            record, pos = decode_record(
                data, pos, header.base_offset, header.base_timestamp, log_append_time=append_time
            )
            yield record
        if pos != len(data):
            raise MalformedRecordError(
                f"{len(data) - pos} bytes left after {header.records_count} records"
            )

    def __len__(self) -> int:
        return self.header.size

    def __bytes__(self) -> bytes:
        return bytes(self.buffer)


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Encode `records` as one v2 batch, byte for byte as Kafka's client builds it.

    Offsets are base_offset + 0, 1, 2 ... unless `offset_deltas` says otherwise (the log
    cleaner keeps each surviving record's delta, and the batch's `last_offset_delta`).
    baseTimestamp is the first record's timestamp (-1 for no records), maxTimestamp the
    largest; with `delete_horizon_ms` (the cleaner, KIP-534) baseTimestamp is the horizon
    and attributes bit 6 is set. A record that cannot be encoded raises InvalidRecordError.
    """
    deltas = list(range(len(records))) if offset_deltas is None else list(offset_deltas)
    if len(deltas) != len(records):
        raise InvalidRecordError(f"{len(deltas)} offset deltas for {len(records)} records")
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if deltas else 0
    base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    body = b"".join(
        encode_record(r, delta, r.timestamp - base_timestamp)
        for r, delta in zip(records, deltas, strict=True)
    )
    if compression != Compression.NONE:
        body = compress(compression, body)
    attributes = int(compression) | (int(timestamp_type) << 3)
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
    batch = bytearray(HEADER_SIZE + len(body))
    try:
        _HEADER.pack_into(
            batch,
            0,
            base_offset,
            len(batch) - LOG_OVERHEAD,
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    except struct.error as err:
        raise InvalidRecordError(f"a batch header field is out of range: {err}") from None
    batch[HEADER_SIZE:] = body
    struct.pack_into(">I", batch, 17, compute_crc(batch, 0, len(batch)))
    return bytes(batch)
