"""The legacy message format, magic 0 and 1: how Kafka stored data before record batches.

**v0 (Kafka 0.8).** A *message set* is a plain sequence of entries, and every entry carries
its own offset, size and checksum (Kafka: `LegacyRecord`, `AbstractLegacyRecordBatch`):

    offset       int64    the message's offset in the partition
    messageSize  int32    bytes that follow
    crc          uint32   CRC-32 (IEEE, zlib's) of magic .. the end of the message
    magic        int8     0 or 1
    attributes   int8     bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4); bit 3 (v1 only)
                          timestamp type, 0 CreateTime, 1 LogAppendTime
    timestamp    int64    v1 only
    key          int32 length (-1 null), bytes
    value        int32 length (-1 null), bytes

The overhead is 26 bytes a message in v0 and 34 in v1, even for a one-byte value.
Compression wraps a whole inner message set, compressed, into the value of one *wrapper*
message whose attributes name the codec. In v0 the inner messages carry absolute offsets,
so to accept a compressed set the broker had to decompress it, rewrite every inner offset,
compress it again and re-checksum every message: the costliest step on the produce path.

**v1 (Kafka 0.10).** KIP-32 adds the 8-byte timestamp and attributes bit 3, so retention
and segment rolling can follow event time, and the time index (KIP-33) becomes possible.
KIP-31 makes the inner offsets *relative* (0, 1, ... n-1) and gives the wrapper the
absolute offset of the *last* inner message: the broker assigns offsets by writing the
wrapper's offset alone, inner offset i becoming `wrapper - (n - 1) + i`. (A producer writes
wrapper offset 0; librdkafka and kafka-python do, so Kafka reads 0 as "base offset 0".)
With LogAppendTime the broker writes its clock into the wrapper, and every inner message
takes the wrapper's timestamp.

**v2 (Kafka 0.11, batch.py).** Exactly-once (KIP-98) needs a producer id, epoch and
sequence number on every batch, and headers (KIP-82) need room in every record. Rather than
grow the message again, v2 turns the wrapper into the *batch header*: offsets, timestamps,
producer state and one CRC-32C live once per batch, the records inside shrink to varint
deltas (a few bytes of overhead instead of 34), a compressed and an uncompressed batch have
the same shape, and the CRC no longer covers the offset or the new partition leader epoch,
so assigning offsets never re-checksums. Kafka 3.0 deprecated v0/v1 (KIP-724); Kafka 4.0
stopped reading them from clients (KIP-896).

**The LZ4 checksum bug (KAFKA-3160).** Kafka 0.8/0.9 computed the LZ4 frame's header
checksum over the frame magic *and* the descriptor instead of the descriptor alone, so
standard LZ4 readers refused Kafka's data. KIP-57 fixed it together with magic 1: a magic-1
wrapper has the correct checksum, while a magic-0 wrapper keeps the broken one so that old
clients can still read it. Kafka writes the broken checksum for magic 0 and ignores the
checksum when reading magic 0. kafka-ref does the same: v0 LZ4 is written with the broken
checksum and read whatever its checksum is; v1 LZ4 must have the correct one.

kafka-ref stores v2 only: `to_v2_batch` converts a legacy message set into one v2 batch
(Kafka: `LogValidator` "up-conversion"); the broker refuses magic < 2 on produce.
Rules: LEGACY-1..LEGACY-9 in spec/record.md.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

from kafka_ref.errors import (
    CorruptRecordError,
    InvalidRecordError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)
from kafka_ref.record.batch import TimestampType, build_batch, peek_magic
from kafka_ref.record.compression import Compression, compress, decompress
from kafka_ref.record.record import Record

MAGIC_V0, MAGIC_V1 = 0, 1
LOG_OVERHEAD = 12  # offset + messageSize
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22  # ... and the timestamp
NO_TIMESTAMP = -1
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE = 0x08
_PREFIX = struct.Struct(">qi")
_HEAD = struct.Struct(">IbB")  # crc, magic, attributes


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """One entry of a message set: a plain message, or a wrapper around compressed ones."""

    offset: int
    magic: int
    attributes: int
    timestamp: int  # NO_TIMESTAMP in v0
    key: bytes | None
    value: bytes | None
    crc: int

    @property
    def compression(self) -> Compression:
        """The codec; zstd (4) and 5-7 do not exist in v0/v1 (zstd came with v2, KIP-110)."""
        codec = self.attributes & _CODEC_MASK
        if codec > Compression.LZ4:
            raise UnsupportedCompressionTypeError(f"codec {codec} in a magic {self.magic} message")
        return Compression(codec)

    @property
    def timestamp_type(self) -> TimestampType | None:
        """None in v0, which has no timestamps."""
        if self.magic == MAGIC_V0:
            return None
        return TimestampType((self.attributes & _TIMESTAMP_TYPE) >> 3)

    @property
    def size(self) -> int:
        """Bytes of the whole entry, the 12-byte offset/size prefix included."""
        overhead = RECORD_OVERHEAD_V0 if self.magic == MAGIC_V0 else RECORD_OVERHEAD_V1
        key = len(self.key) if self.key is not None else 0
        value = len(self.value) if self.value is not None else 0
        return LOG_OVERHEAD + overhead + key + value


def encode_message(
    offset: int,
    key: bytes | None,
    value: bytes | None,
    *,
    magic: int = MAGIC_V1,
    timestamp: int = NO_TIMESTAMP,
    attributes: int = 0,
) -> bytes:
    """One message-set entry: offset, size, CRC-32 and the message (v0 ignores timestamp)."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise UnsupportedForMessageFormatError(f"magic {magic} is not a legacy message format")
    try:
        parts = [struct.pack(">bB", magic, attributes)]
        if magic == MAGIC_V1:
            parts.append(struct.pack(">q", timestamp))
        for field in (key, value):
            if field is None:
                parts.append(b"\xff\xff\xff\xff")
            else:
                parts += [struct.pack(">i", len(field)), bytes(field)]
        body = b"".join(parts)
        return _PREFIX.pack(offset, 4 + len(body)) + struct.pack(">I", zlib.crc32(body)) + body
    except struct.error as err:
        raise InvalidRecordError(f"a message field is out of range: {err}") from None


def read_message(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[LegacyMessage, int]:
    """Decode and check the entry at `pos`; returns (message, position after it).

    Sizes, magic, CRC and every length are checked: a defect raises CorruptRecordError.
    """
    view = memoryview(buf)
    available = len(view) - pos
    if available < LOG_OVERHEAD:
        raise CorruptRecordError(f"{available} bytes cannot hold a message-set entry")
    offset, size = _PREFIX.unpack_from(view, pos)
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(f"message size {size} is below the minimum {RECORD_OVERHEAD_V0}")
    if size > available - LOG_OVERHEAD:
        raise CorruptRecordError(f"message of {size} bytes at {pos} is truncated")
    start, end = pos + LOG_OVERHEAD, pos + LOG_OVERHEAD + size
    crc, magic, attributes = _HEAD.unpack_from(view, start)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise CorruptRecordError(f"magic {magic} where a legacy message (0 or 1) was expected")
    if magic == MAGIC_V1 and size < RECORD_OVERHEAD_V1:
        raise CorruptRecordError(f"v1 message size {size} is below {RECORD_OVERHEAD_V1}")
    computed = zlib.crc32(view[start + 4 : end])
    if computed != crc:
        raise CorruptRecordError(
            f"CRC mismatch at offset {offset}: stored {crc:#010x}, computed {computed:#010x}"
        )
    field, timestamp = start + 6, NO_TIMESTAMP
    if magic == MAGIC_V1:
        (timestamp,) = struct.unpack_from(">q", view, field)
        field += 8
    key, field = _read_bytes(view, field, end)
    value, field = _read_bytes(view, field, end)
    if field != end:
        raise CorruptRecordError(f"message size {size} disagrees with its key and value")
    return LegacyMessage(offset, magic, attributes, timestamp, key, value, crc), end


def _read_bytes(view: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("message ends inside a length field")
    (length,) = struct.unpack_from(">i", view, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or pos + length > end:
        raise CorruptRecordError(f"key or value length {length} overruns the message")
    return bytes(view[pos : pos + length]), pos + length


def iter_messages(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[LegacyMessage]:
    """The shallow entries of a message set, one at a time; wrappers are not opened."""
    while pos < len(buf):
        message, pos = read_message(buf, pos)
        yield message


def iter_records(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, max_size: int | None = None
) -> Iterator[Record]:
    """Every record of a message set with its absolute offset, opening wrappers lazily.

    `max_size` bounds each decompressed wrapper value (CODEC-5).
    """
    for message in iter_messages(buf, pos):
        yield from unwrap(message, max_size=max_size)


def unwrap(message: LegacyMessage, *, max_size: int | None = None) -> list[Record]:
    """The records of one shallow entry: itself, or the inner messages of a wrapper.

    The checks are Kafka's `DeepRecordsIterator`: the wrapper has a value, the inner set is
    not empty, not compressed again, of the wrapper's magic, and a v1 wrapper's offset is
    0 or at least the last inner offset. A violation raises InvalidRecordError.
    """
    codec = message.compression
    if codec == Compression.NONE:
        return [Record(message.key, message.value, message.timestamp, (), message.offset)]
    if message.value is None:
        raise InvalidRecordError(f"compressed wrapper at offset {message.offset} has no value")
    data = decompress(
        codec, message.value, max_size=max_size, lz4_broken_checksum=message.magic == MAGIC_V0
    )
    inner = list(iter_messages(data))
    if not inner:
        raise InvalidRecordError(f"compressed wrapper at offset {message.offset} is empty")
    for entry in inner:
        if entry.attributes & _CODEC_MASK:
            raise InvalidRecordError("inner messages must not be compressed")
        if entry.magic != message.magic:
            raise InvalidRecordError(
                f"inner magic {entry.magic} does not match wrapper magic {message.magic}"
            )
    base = 0  # v0: inner offsets are absolute
    if message.magic == MAGIC_V1 and message.offset != 0:
        if message.offset < inner[-1].offset:
            raise InvalidRecordError(
                f"wrapper offset {message.offset} is below its last inner offset {inner[-1].offset}"
            )
        base = message.offset - inner[-1].offset
    append_time = message.timestamp_type == TimestampType.LOG_APPEND_TIME
    return [
        Record(
            entry.key,
            entry.value,
            message.timestamp if append_time else entry.timestamp,
            (),
            base + entry.offset,
        )
        for entry in inner
    ]


def build_message_set(
    records: Sequence[Record],
    *,
    magic: int = MAGIC_V1,
    compression: Compression = Compression.NONE,
    base_offset: int = 0,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    xerial: bool = True,
) -> bytes:
    """Encode `records` as a v0/v1 message set, as Kafka's MemoryRecordsBuilder does.

    Uncompressed: one entry per record at base_offset, base_offset + 1 ... Compressed: one
    wrapper (key null) holding the inner set; v1 inner offsets are 0..n-1 and the wrapper
    has the last absolute offset and the largest timestamp; v0 inner offsets are absolute.
    Headers (v2 only) raise UnsupportedForMessageFormatError, zstd an unsupported codec.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise UnsupportedForMessageFormatError(f"magic {magic} is not a legacy message format")
    if compression not in (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4):
        raise UnsupportedCompressionTypeError(f"{compression!r} needs magic 2")
    if any(record.headers for record in records):
        raise UnsupportedForMessageFormatError(f"magic {magic} messages cannot carry headers")
    ts_bit = _TIMESTAMP_TYPE if magic == MAGIC_V1 and timestamp_type else 0
    relative = compression != Compression.NONE and magic == MAGIC_V1
    entries = b"".join(
        encode_message(
            i if relative else base_offset + i,
            record.key,
            record.value,
            magic=magic,
            timestamp=record.timestamp,
            attributes=ts_bit,
        )
        for i, record in enumerate(records)
    )
    if compression == Compression.NONE or not records:
        return entries
    value = compress(compression, entries, xerial=xerial, lz4_broken_checksum=magic == MAGIC_V0)
    max_timestamp = max(record.timestamp for record in records)
    return encode_message(
        base_offset + len(records) - 1,
        None,
        value,
        magic=magic,
        timestamp=max_timestamp,
        attributes=int(compression) | ts_bit,
    )


def to_v2_batch(
    buf: bytes | bytearray | memoryview,
    *,
    compression: Compression | None = None,
    max_size: int | None = None,
) -> bytes:
    """Convert a legacy message set into one v2 batch (Kafka's up-conversion).

    Every record keeps its offset (as a delta from the first) and timestamp; v0 records get
    NO_TIMESTAMP (-1). The codec is the first wrapper's unless `compression` is given; the
    timestamp type is the first v1 message's. Offsets must increase, or InvalidRecordError.
    """
    if len(buf) and peek_magic(buf) > MAGIC_V1:
        raise CorruptRecordError("the data is already a v2 batch, not a legacy message set")
    messages = list(iter_messages(buf))
    if not messages:
        raise InvalidRecordError("an empty message set converts to no batch")
    records = [record for message in messages for record in unwrap(message, max_size=max_size)]
    offsets = [record.offset for record in records]
    if any(b <= a for a, b in pairwise(offsets)):
        raise InvalidRecordError("legacy offsets do not increase")
    first = messages[0]
    return build_batch(
        records,
        base_offset=offsets[0],
        compression=first.compression if compression is None else compression,
        timestamp_type=first.timestamp_type or TimestampType.CREATE_TIME,
        offset_deltas=[offset - offsets[0] for offset in offsets],
    )
