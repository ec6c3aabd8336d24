"""Compression codecs: a whole batch's records compressed as one blob.

A producer compresses the *records section* of a v2 batch (everything after the 61-byte
header) as one unit, and sets the codec in attributes bits 0-2. Compressing many records
together is why batching pays twice: fewer requests, and a compressor that sees the
repetition between records. The broker stores the compressed batch as it arrived and a
consumer decompresses it: the broker need not touch the records at all. (In the v0/v1
format the compressed blob is instead the value of a "wrapper" message: legacy.py.)

| id | codec  | format on the wire |
|----|--------|--------------------|
| 0  | none   | records as they are |
| 1  | gzip   | a gzip stream (RFC 1952); several members in a row are allowed |
| 2  | snappy | raw snappy (librdkafka) **or** xerial framing (the Java client, kafka-python) |
| 3  | lz4    | the LZ4 *frame* format, independent blocks (Kafka's KafkaLZ4BlockOutputStream) |
| 4  | zstd   | zstd frames (KIP-110; v2 batches only) |
| 5-7| -      | unknown: UNSUPPORTED_COMPRESSION_TYPE |

**Snappy** is the first trap: two framings exist and a broker that decompresses must accept
both. Xerial framing starts with the magic `\\x82SNAPPY\\x00`, then two int32 (version 1,
compatible version 1; some writers get their byte order wrong, so they are not checked),
then blocks of (int32 big-endian length, raw snappy block of at most 32 KiB of input).

**LZ4** is the second. Kafka writes the LZ4 frame format by hand (`Lz4BlockOutputStream`):
magic `04 22 4d 18`, FLG `0x60` (version 01, independent blocks, no checksums, no content
size), BD `0x40` (64 KiB blocks), the header checksum HC (the second byte of xxHash32 of FLG
and BD: `0x82`), then blocks (int32 little-endian length, top bit set when the block is
stored uncompressed) and a zero end mark. kafka-ref writes exactly that, and reads what
Kafka's `Lz4BlockInputStream` reads: block and content checksums and a content size are
accepted, dependent blocks and dictionaries are refused. The magic-0 format's broken HC
(KAFKA-3160) is `lz4_broken_checksum`, explained in legacy.py.

**Bombs.** A few kilobytes of zstd can expand to gigabytes. `decompress(..., max_size=n)`
refuses to return more than `n` bytes, with MESSAGE_TOO_LARGE: before decompressing when
the format states its size (the snappy preamble, a zstd or LZ4 content size; the decoders
check that the size told is the size found), while decompressing for gzip, and after for
the rest (LZ4 cannot expand more than about 255 times; a zstd frame without a size can, so
a broker should keep `max_size` near `max.message.bytes`). Garbage raises CORRUPT_MESSAGE,
never a library's own exception.

Kafka's names: `CompressionType`, `Lz4BlockOutputStream`, `SnappyFactory`, `ZstdFactory`.
Rules: CODEC-1..CODEC-6 in spec/record.md.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import cramjam

from kafka_ref.errors import (
    CorruptRecordError,
    MessageTooLargeError,
    UnsupportedCompressionTypeError,
)
from kafka_ref.record.varint import decode_uvarint


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

LZ4_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
_LZ4_FLG = 0x60  # version 01, block independence; no checksums, no content size
_LZ4_BD = 0x40  # block maximum size 4: 64 KiB
_LZ4_BLOCK = 64 * 1024
_LZ4_STORED = 0x80000000  # block length top bit: the block is not compressed
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def compress(
    codec: Compression,
    data: bytes | bytearray | memoryview,
    *,
    xerial: bool = True,
    lz4_broken_checksum: bool = False,
) -> bytes:
    """Compress `data` with `codec`, the way the Java client does.

    Snappy is written xerial-framed unless `xerial=False` (raw, as librdkafka writes it).
    `lz4_broken_checksum` writes the magic-0 header checksum (KAFKA-3160, legacy.py).
    """
    codec = _known(codec)
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == Compression.SNAPPY:
        return _xerial_encode(data) if xerial else bytes(cramjam.snappy.compress_raw(data))
    if codec == Compression.LZ4:
        return _lz4_encode(data, lz4_broken_checksum)
    return bytes(cramjam.zstd.compress(data))


def decompress(
    codec: Compression,
    data: bytes | bytearray | memoryview,
    *,
    max_size: int | None = None,
    lz4_broken_checksum: bool = False,
) -> bytes:
    """Decompress `data`.

    Garbage raises CorruptRecordError, an unknown codec UnsupportedCompressionTypeError,
    output beyond `max_size` MessageTooLargeError. `lz4_broken_checksum` accepts an LZ4
    header checksum of either kind (Kafka ignores it for magic 0).
    """
    codec = _known(codec)
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    if codec == Compression.NONE:
        out = bytes(view)
    elif codec == Compression.GZIP:
        out = _gunzip(view, max_size)
    elif codec == Compression.SNAPPY:
        out = _snappy_decode(view, max_size)
    elif codec == Compression.LZ4:
        content_size, frame = _lz4_check(view, lz4_broken_checksum)
        _check_bound(codec, content_size, max_size)
        out = _cramjam(codec, cramjam.lz4.decompress, frame)
    else:
        _check_bound(codec, _zstd_content_size(view), max_size)
        out = _cramjam(codec, cramjam.zstd.decompress, view)
    _check_bound(codec, len(out), max_size)
    return out


def _known(codec: int) -> Compression:
    try:
        return Compression(codec)
    except ValueError:
        raise UnsupportedCompressionTypeError(f"compression codec id {codec}") from None


def _check_bound(codec: Compression, size: int | None, max_size: int | None) -> None:
    if size is not None and max_size is not None and size > max_size:
        raise MessageTooLargeError(
            f"{codec.name.lower()} data expands to {size} bytes, over the limit of {max_size}"
        )


def _cramjam(codec: Compression, function, data) -> bytes:
    try:
        return bytes(function(data))
    except cramjam.DecompressionError as err:
        raise CorruptRecordError(f"{codec.name.lower()} data does not decompress: {err}") from None


# -- gzip ------------------------------------------------------------------------------


def _gunzip(view, max_size: int | None) -> bytes:
    """Every gzip member in `view`, through zlib so the output can stop at `max_size`."""
    out = bytearray()
    rest = bytes(view)
    try:
        while True:
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            if max_size is None:
                out += inflater.decompress(rest)
            else:
                out += inflater.decompress(rest, max_size + 1 - len(out))
                _check_bound(Compression.GZIP, len(out), max_size)
            if not inflater.eof:
                raise CorruptRecordError("gzip data is truncated")
            rest = inflater.unused_data
            if not rest:
                return bytes(out)
    except zlib.error as err:
        raise CorruptRecordError(f"gzip data does not decompress: {err}") from None


# -- snappy ----------------------------------------------------------------------------


def _snappy_decode(view, max_size: int | None) -> bytes:
    if bytes(view[:8]) == XERIAL_MAGIC:
        return _xerial_decode(view, max_size)
    _check_bound(Compression.SNAPPY, decode_uvarint(view, 0)[0], max_size)
    return _cramjam(Compression.SNAPPY, cramjam.snappy.decompress_raw, view)


def _xerial_encode(data) -> bytes:
    view = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _xerial_decode(view, max_size: int | None) -> bytes:
    if len(view) < 16:
        raise CorruptRecordError("xerial snappy header is truncated")
    pos, out, total = 16, [], 0
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptRecordError("xerial snappy block length is truncated")
        (length,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if length <= 0 or pos + length > len(view):
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the data")
        block = view[pos : pos + length]
        total += decode_uvarint(block, 0)[0]
        _check_bound(Compression.SNAPPY, total, max_size)
        out.append(_cramjam(Compression.SNAPPY, cramjam.snappy.decompress_raw, block))
        pos += length
    return b"".join(out)


# -- lz4 -------------------------------------------------------------------------------


def _lz4_encode(data, broken_checksum: bool) -> bytes:
    """One LZ4 frame as Kafka's Lz4BlockOutputStream writes it (see the module docstring)."""
    view = memoryview(data).cast("B")
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    checked = LZ4_MAGIC + descriptor if broken_checksum else descriptor
    parts = [LZ4_MAGIC, descriptor, bytes((lz4_header_checksum(checked),))]
    for start in range(0, len(view), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):  # incompressible: store it as it is
            parts += [struct.pack("<I", len(chunk) | _LZ4_STORED), bytes(chunk)]
        else:
            parts += [struct.pack("<I", len(block)), block]
    parts.append(b"\x00\x00\x00\x00")  # end mark
    return b"".join(parts)


def _lz4_check(view, ignore_checksum: bool):
    """Walk an LZ4 frame as Kafka's Lz4BlockInputStream reads it, without decompressing.

    Returns (the content size if the frame states it, else None; the frame to decompress).
    With `ignore_checksum` a wrong header checksum is replaced by the right one.
    """
    if len(view) < 7 or bytes(view[:4]) != LZ4_MAGIC:
        raise CorruptRecordError("lz4 data is not an LZ4 frame (magic 04 22 4d 18)")
    flg, bd = view[4], view[5]
    if flg >> 6 != 1 or flg & 0x03 or not flg & 0x20:
        raise CorruptRecordError(
            f"lz4 frame flags {flg:#04x}: need version 01, independent blocks, no dictionary"
        )
    if bd & 0x8F or (bd >> 4) & 7 < 4:
        raise CorruptRecordError(f"lz4 block descriptor {bd:#04x} is invalid")
    block_max = 1 << (2 * ((bd >> 4) & 7) + 8)
    pos = 14 if flg & 0x08 else 6
    if pos >= len(view):
        raise CorruptRecordError("lz4 frame descriptor is truncated")
    content_size = struct.unpack_from("<Q", view, 6)[0] if flg & 0x08 else None
    frame = view
    checksum = lz4_header_checksum(view[4:pos])
    if view[pos] != checksum:
        if not ignore_checksum:
            raise CorruptRecordError("lz4 frame descriptor checksum mismatch")
        frame = bytearray(view)
        frame[pos] = checksum
    pos += 1
    trailer = 4 if flg & 0x10 else 0  # a block checksum after each block
    while True:
        if pos + 4 > len(view):
            raise CorruptRecordError("lz4 frame is truncated")
        (size,) = struct.unpack_from("<I", view, pos)
        pos += 4
        if size == 0:
            break
        if size & ~_LZ4_STORED > block_max:
            raise CorruptRecordError(f"lz4 block of {size & ~_LZ4_STORED} bytes > {block_max}")
        pos += (size & ~_LZ4_STORED) + trailer
    pos += 4 if flg & 0x04 else 0  # the content checksum
    if pos != len(view):
        raise CorruptRecordError(f"lz4 frame ends at byte {pos} of {len(view)}")
    return content_size, frame


def lz4_header_checksum(descriptor: bytes | memoryview) -> int:
    """The LZ4 frame's HC byte: the second byte of xxHash32(descriptor, seed 0)."""
    return (xxhash32(descriptor) >> 8) & 0xFF


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxhash32(data: bytes | memoryview, seed: int = 0) -> int:
    """xxHash32, the hash LZ4 frames use for their checksums (a pure-Python reference).

    Only the few bytes of a frame descriptor are hashed on the hot path.
    """
    data, n, pos = bytes(data), len(data), 0
    if n >= 16:
        acc = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos : pos + 4], "little")
                acc[i] = (_rotl((acc[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        lane = int.from_bytes(data[pos : pos + 4], "little")
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    for byte in data[pos:]:
        h = (_rotl((h + byte * _P5) & _M32, 11) * _P1) & _M32
    h = ((h ^ (h >> 15)) * _P2) & _M32
    h = ((h ^ (h >> 13)) * _P3) & _M32
    return h ^ (h >> 16)


# -- zstd ------------------------------------------------------------------------------


def _zstd_content_size(view) -> int | None:
    """The first frame's Frame_Content_Size, or None when the frame does not state it."""
    if len(view) < 5 or bytes(view[:4]) != _ZSTD_MAGIC:
        return None  # not a frame: cramjam reports it
    descriptor = view[4]
    single_segment = descriptor >> 5 & 1
    pos = 5 + (1 - single_segment) + (0, 1, 2, 4)[descriptor & 3]
    size = (single_segment, 2, 4, 8)[descriptor >> 6]
    if size == 0 or pos + size > len(view):
        return None
    value = int.from_bytes(view[pos : pos + size], "little")
    return value + 256 if size == 2 else value
