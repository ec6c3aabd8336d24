"""Compression codecs: a whole batch's records compressed as one blob.

A producer compresses the *records section* of a v2 batch (everything after the 61-byte
header) as one unit, and sets the codec in attributes bits 0-2. Compressing many records
together is why batching pays twice: fewer requests, and a compressor that sees the
repetition between records. The broker stores the compressed batch as it arrived and a
consumer decompresses it: the broker need not touch the records at all.

| id | codec  | format on the wire |
|----|--------|--------------------|
| 0  | none   | records as they are |
| 1  | gzip   | a gzip stream (RFC 1952) |
| 2  | snappy | raw snappy (librdkafka) **or** xerial framing (the Java client, kafka-python) |
| 3  | lz4    | the LZ4 *frame* format, independent blocks |
| 4  | zstd   | a zstd frame |

Snappy is the trap: two framings exist and a broker that decompresses must accept both.
Xerial framing starts with the magic `\\x82SNAPPY\\x00`, then two int32 (version 1,
compatible version 1), then blocks of (int32 big-endian length, raw snappy block).

Kafka's names: `CompressionType`, `KafkaLZ4BlockOutputStream`, `SnappyFactory`.
Rules: CODEC-1..CODEC-4 in spec/record.md.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam

from kafka_ref.errors import CorruptRecordError, UnsupportedCompressionTypeError


class Compression(IntEnum):
    """The codec ids of attributes bits 0-2 (Kafka's CompressionType)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def from_attributes(cls, attributes: int) -> Compression:
        codec = attributes & 0x07
        try:
            return cls(codec)
        except ValueError:
            raise UnsupportedCompressionTypeError(f"compression codec id {codec}") from None

    @classmethod
    def from_name(cls, name: str) -> Compression:
        """From a config value such as `lz4` (`none` and `uncompressed` are the same)."""
        key = name.strip().upper()
        if key == "UNCOMPRESSED":
            key = "NONE"
        try:
            return cls[key]
        except KeyError:
            raise UnsupportedCompressionTypeError(f"unknown compression type {name!r}") from None


XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # the block size kafka-python and snappy-java write


def compress(codec: Compression, data: bytes | memoryview, *, xerial: bool = True) -> bytes:
    """Compress `data` with `codec`. Snappy is written xerial-framed unless `xerial=False`."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == Compression.SNAPPY:
        return _xerial_encode(data) if xerial else bytes(cramjam.snappy.compress_raw(data))
    if codec == Compression.LZ4:
        # Independent blocks and no content checksum: what Kafka's own LZ4 stream writes,
        # and what strict readers (some Go clients) require.
        compressor = cramjam.lz4.Compressor(block_linked=False, content_checksum=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise UnsupportedCompressionTypeError(f"compression codec id {int(codec)}")


def decompress(codec: Compression, data: bytes | memoryview) -> bytes:
    """Decompress `data`; garbage raises CorruptRecordError, an unknown codec its own error."""
    if codec == Compression.NONE:
        return bytes(data)
    try:
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Compression.SNAPPY:
            if bytes(data[:8]) == XERIAL_MAGIC:
                return _xerial_decode(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as err:
        raise CorruptRecordError(f"{codec.name.lower()} data does not decompress: {err}") from None
    raise UnsupportedCompressionTypeError(f"compression codec id {int(codec)}")


def _xerial_encode(data: bytes | memoryview) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _xerial_decode(data: bytes | memoryview) -> bytes:
    view = memoryview(data)
    if len(view) < 16:
        raise CorruptRecordError("xerial snappy header is truncated")
    pos, out = 16, []
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptRecordError("xerial snappy block length is truncated")
        (length,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if length < 0 or pos + length > len(view):
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the data")
        out.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + length])))
        pos += length
    return b"".join(out)
