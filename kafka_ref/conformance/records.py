"""Record batches written and read by hand, independently of kafka-ref's record module.

The rules about the record format (BATCH-*, CODEC-*) are about bytes: which byte holds the
magic, what the CRC covers, how a varint ends. A test that built its batches with the
broker's own codec would agree with the broker even where both are wrong, so this module
encodes batch v2 from the format's definition (Kafka's `DefaultRecordBatch`,
`DefaultRecord`) with its own CRC-32C and varints, and gives every field as a parameter, so
a test can send exactly the malformed batch a rule talks about (a wrong length, an
over-long varint, a count that disagrees).

    raw_batch([RawRecord(key, value, headers)], compression=..., ...) -> bytes
    parse_batch(buf, pos) -> ParsedBatch (header fields by offset, records decoded by hand)
"""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass, field

HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 header, big-endian
HEADER_SIZE = 61
CRC_START = 21  # attributes: the CRC covers bytes 21 to the end

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), bit-reflected, as Kafka's `Crc32C`."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def varint(value: int) -> bytes:
    """Zigzag then LEB128: 0, -1, 1, -2 -> 0, 1, 2, 3."""
    return uvarint((value << 1) ^ (value >> 63))


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = raw = 0
    while True:
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos


@dataclass
class RawRecord:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    timestamp_delta: int = 0
    offset_delta: int | None = None  # None: its index in the batch


def encode_record(rec: RawRecord, index: int) -> bytes:
    body = bytearray(b"\x00")  # record attributes: unused, 0
    body += varint(rec.timestamp_delta)
    body += varint(index if rec.offset_delta is None else rec.offset_delta)
    for data in (rec.key, rec.value):
        body += varint(-1) if data is None else varint(len(data)) + data
    body += varint(len(rec.headers))
    for name, data in rec.headers:
        encoded = name.encode()
        body += varint(len(encoded)) + encoded
        body += varint(-1) if data is None else varint(len(data)) + data
    return varint(len(body)) + bytes(body)


def compress(codec: int, data: bytes) -> bytes:
    """The records section compressed as Kafka's producers do (one blob)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data)
    import cramjam

    if codec == SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == LZ4:
        import lz4.frame

        return lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False
        )
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"codec {codec}")


def raw_batch(
    records: list[RawRecord],
    *,
    base_offset: int = 0,
    leader_epoch: int = -1,
    magic: int = 2,
    attributes: int = 0,
    last_offset_delta: int | None = None,
    base_timestamp: int = 1_700_000_000_000,
    max_timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    records_count: int | None = None,
    records_section: bytes | None = None,
    batch_length: int | None = None,
    crc: int | None = None,
) -> bytes:
    """A v2 batch with every header field settable; the CRC is computed unless given.

    `attributes` bits 0-2 choose the codec the records section is compressed with;
    `records_section` replaces the (compressed) records outright."""
    if records_section is None:
        plain = b"".join(encode_record(r, i) for i, r in enumerate(records))
        records_section = compress(attributes & 0x07, plain)
    if last_offset_delta is None:
        deltas = [i if r.offset_delta is None else r.offset_delta for i, r in enumerate(records)]
        last_offset_delta = max(deltas, default=0)
    if max_timestamp is None:
        max_timestamp = base_timestamp + max((r.timestamp_delta for r in records), default=0)
    count = len(records) if records_count is None else records_count
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
        + records_section
    )
    if crc is None:
        crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc) if batch_length is None else batch_length
    return struct.pack(">qiibI", base_offset, length, leader_epoch, magic, crc) + after_crc


@dataclass
class ParsedBatch:
    base_offset: int
    batch_length: int
    leader_epoch: int
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
    raw: bytes  # the whole batch
    records: list[dict] = field(default_factory=list)


def decompress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.decompress(data)
    import cramjam

    if codec == SNAPPY:
        if data.startswith(b"\x82SNAPPY\x00"):
            out, pos = bytearray(), 16
            while pos < len(data):
                (size,) = struct.unpack_from(">i", data, pos)
                out += bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + size]))
                pos += 4 + size
            return bytes(out)
        return bytes(cramjam.snappy.decompress_raw(data))
    if codec == LZ4:
        import lz4.frame

        return lz4.frame.decompress(data)
    if codec == ZSTD:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"codec {codec}")


def parse_batches(buf: bytes) -> list[ParsedBatch]:
    """Every whole batch in a fetch response's records, decoded by hand (a partial tail is
    dropped, as clients do)."""
    out, pos = [], 0
    while len(buf) - pos >= HEADER_SIZE:
        fields = HEADER.unpack_from(buf, pos)
        size = fields[1] + 12
        if pos + size > len(buf):
            break
        batch = ParsedBatch(*fields, raw=buf[pos : pos + size])
        section = decompress(batch.attributes & 0x07, batch.raw[HEADER_SIZE:])
        rpos = 0
        for _ in range(batch.records_count):
            length, rpos = read_varint(section, rpos)
            end = rpos + length
            rpos += 1  # attributes
            ts_delta, rpos = read_varint(section, rpos)
            off_delta, rpos = read_varint(section, rpos)
            key, rpos = _read_bytes(section, rpos)
            value, rpos = _read_bytes(section, rpos)
            n_headers, rpos = read_varint(section, rpos)
            headers = []
            for _ in range(n_headers):
                name, rpos = _read_bytes(section, rpos)
                data, rpos = _read_bytes(section, rpos)
                headers.append((name.decode(), data))
            assert rpos == end, "a record's fields use exactly its declared length"
            batch.records.append(
                {
                    "offset": batch.base_offset + off_delta,
                    "timestamp": batch.base_timestamp + ts_delta,
                    "key": key,
                    "value": value,
                    "headers": headers,
                }
            )
        assert rpos == len(section), "the records use up the records section"
        out.append(batch)
        pos += size
    return out


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    return buf[pos : pos + length], pos + length
