"""The primitive types of the Kafka wire protocol, each a codec that encodes and decodes.

Every Kafka request and response is a sequence of a few primitive types (Kafka's
`org.apache.kafka.common.protocol.types.Type`, listed in the protocol guide):

* fixed width, big-endian ("network order"): BOOLEAN, INT8, INT16, INT32, INT64, UINT16,
  UINT32, FLOAT64, UUID (16 bytes);
* variable-length integers: UNSIGNED_VARINT is LEB128 (7 bits per byte, low group first, the
  high bit says "more follows"); VARINT and VARLONG are *zigzag* varints, which map signed
  values to unsigned ones (0, -1, 1, -2 -> 0, 1, 2, 3) so small negatives stay short. The
  flexible-version lengths below are unsigned varints; zigzag varints appear inside record
  batches. Mixing the two up is a classic bug, so they are separate codecs here;
* length-prefixed: STRING (int16 length + UTF-8), BYTES (int32 length), ARRAY (int32 count);
  the NULLABLE_ variants use length -1 for null;
* RECORDS: the record batches of Produce and Fetch, length-prefixed like bytes;
* the COMPACT_ forms of strings, bytes, records and arrays, used by *flexible versions*
  (KIP-482): the prefix is an unsigned varint holding length + 1, so 0 means null and a short
  string costs one length byte instead of two or four;
* TAG_BUFFER, which ends every struct in a flexible version: an unsigned varint count, then
  (tag, size, bytes) per tagged field. Optional fields can be added without a version bump;
* a nullable struct (DescribeTopicPartitions' `Cursor`): an INT8 marker, -1 for null or 1
  followed by the struct (Kafka's `NullableSchema`).

Each codec has `encode(value) -> bytes`, `encode_into(out, value)` (appends to a bytearray, so
a message is built in one buffer) and `decode(buf, pos) -> (value, new_pos)`. Decoding reads a
`memoryview` at a position and never trusts a length: a length is checked against the bytes
that are actually left *before* anything is sliced or allocated, so a forged length of
2**31 - 1 fails at once instead of allocating 2 GiB. Every failure is a `ProtocolDecodeError`
(PROTO-2). RECORDS decode to a `memoryview` slice of the request buffer, never a copy (PROTO-9):
the broker checks and appends those bytes without ever building Python objects per record.

Spec rules: PROTO-2, PROTO-4, PROTO-5, PROTO-9, PROTO-16.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafka_ref.protocol.errors import ProtocolDecodeError, ProtocolEncodeError, short_buffer


class Codec:
    """One wire type. `min_size` is the fewest bytes any encoding of it takes."""

    name = "codec"
    min_size = 1

    def encode_into(self, out: bytearray, value: Any) -> None:
        raise NotImplementedError

    def decode(self, buf: Any, pos: int) -> tuple[Any, int]:
        raise NotImplementedError

    def encode(self, value: Any) -> bytes:
        out = bytearray()
        self.encode_into(out, value)
        return bytes(out)

    def __repr__(self) -> str:
        return self.name


class FixedWidth(Codec):
    """A big-endian number of a fixed size, packed with the `struct` module."""

    def __init__(self, name: str, fmt: str):
        self.name = name
        self._struct = struct.Struct(">" + fmt)
        self.min_size = self.size = self._struct.size
        self._pack = self._struct.pack
        self._unpack_from = self._struct.unpack_from

    def encode_into(self, out: bytearray, value: Any) -> None:
        if value is None or isinstance(value, bool):  # True would silently pack as 1
            raise ProtocolEncodeError(f"{self.name} needs a number, got {value!r}")
        try:
            out += self._pack(value)
        except struct.error as exc:
            raise ProtocolEncodeError(f"{value!r} does not fit {self.name}: {exc}") from None

    def decode(self, buf: Any, pos: int) -> tuple[Any, int]:
        end = pos + self.size
        if end > len(buf):
            raise short_buffer(self.name, self.size, pos, len(buf))
        return self._unpack_from(buf, pos)[0], end


class Boolean(Codec):
    """One byte: 0 is false and (as in Kafka's `readByte() != 0`) anything else is true."""

    name = "boolean"
    min_size = size = 1

    def encode_into(self, out: bytearray, value: Any) -> None:
        if value is not True and value is not False:
            raise ProtocolEncodeError(f"boolean needs True or False, got {value!r}")
        out.append(1 if value else 0)

    def decode(self, buf: Any, pos: int) -> tuple[bool, int]:
        if pos >= len(buf):
            raise short_buffer(self.name, 1, pos, len(buf))
        return buf[pos] != 0, pos + 1


class UnsignedVarint(Codec):
    """LEB128: 7 bits per byte, least significant group first, high bit = more bytes follow."""

    def __init__(self, name: str, bits: int):
        self.name = name
        self.max_value = (1 << bits) - 1
        self.max_bytes = (bits + 6) // 7  # 5 bytes for 32 bits, 10 for 64

    def encode_into(self, out: bytearray, value: Any) -> None:
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or not 0 <= value <= self.max_value
        ):
            raise ProtocolEncodeError(f"{value!r} does not fit {self.name}")
        while value > 0x7F:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)

    def decode(self, buf: Any, pos: int) -> tuple[int, int]:
        n = len(buf)
        if pos >= n:
            raise short_buffer(self.name, 1, pos, n)
        byte = buf[pos]
        if byte < 0x80:  # the common case: a length or count below 128
            return byte, pos + 1
        start, result, shift = pos, 0, 0
        while True:
            if pos >= n:
                raise ProtocolDecodeError(
                    f"{self.name} is cut off by the end of the buffer", pos=pos
                )
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if pos - start >= self.max_bytes:
                raise ProtocolDecodeError(
                    f"{self.name} is longer than {self.max_bytes} bytes", pos=start
                )
        if result > self.max_value:
            raise ProtocolDecodeError(f"{self.name} value {result} is out of range", pos=start)
        return result, pos


class ZigZagVarint(Codec):
    """A signed varint: zigzag maps n to (n << 1) ^ (n >> bits-1), then LEB128 encodes it."""

    def __init__(self, name: str, bits: int):
        self.name = name
        self.bits = bits
        self.low, self.high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        self._unsigned = UnsignedVarint(name, bits)

    def encode_into(self, out: bytearray, value: Any) -> None:
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or not self.low <= value <= self.high
        ):
            raise ProtocolEncodeError(f"{value!r} does not fit {self.name}")
        self._unsigned.encode_into(out, (value << 1) ^ (value >> (self.bits - 1)))

    def decode(self, buf: Any, pos: int) -> tuple[int, int]:
        raw, pos = self._unsigned.decode(buf, pos)
        return (raw >> 1) ^ -(raw & 1), pos


class Uuid(Codec):
    """16 bytes, most significant first (Kafka's `Uuid`); the zero UUID means 'none'."""

    name = "uuid"
    min_size = size = 16

    def encode_into(self, out: bytearray, value: Any) -> None:
        if not isinstance(value, uuid.UUID):
            raise ProtocolEncodeError(f"uuid needs a uuid.UUID, got {value!r}")
        out += value.bytes

    def decode(self, buf: Any, pos: int) -> tuple[uuid.UUID, int]:
        end = pos + 16
        if end > len(buf):
            raise short_buffer(self.name, 16, pos, len(buf))
        return uuid.UUID(bytes=bytes(buf[pos:end])), end


BOOLEAN = Boolean()
INT8 = FixedWidth("int8", "b")
INT16 = FixedWidth("int16", "h")
INT32 = FixedWidth("int32", "i")
INT64 = FixedWidth("int64", "q")
UINT16 = FixedWidth("uint16", "H")
UINT32 = FixedWidth("uint32", "I")
FLOAT64 = FixedWidth("float64", "d")
UNSIGNED_VARINT = UnsignedVarint("unsigned varint", 32)
VARINT = ZigZagVarint("varint", 32)
VARLONG = ZigZagVarint("varlong", 64)
UUID = Uuid()
ZERO_UUID = uuid.UUID(int=0)


def read_length(buf: Any, pos: int, compact: bool, wide: bool) -> tuple[int, int]:
    """Read a length prefix; -1 means null. Classic prefixes are int16 (`wide`=False) or int32.

    Compact prefixes hold length + 1 as an unsigned varint, so 0 is null. Lengths below -1
    are never valid and are rejected here, once, for every length-prefixed type.
    """
    if compact:
        raw, end = UNSIGNED_VARINT.decode(buf, pos)
        return raw - 1, end
    length, end = (INT32 if wide else INT16).decode(buf, pos)
    if length < -1:
        raise ProtocolDecodeError(f"negative length {length}", pos=pos)
    return length, end


def write_length(out: bytearray, length: int, compact: bool, wide: bool) -> None:
    """Write a length prefix (length -1 writes null)."""
    if compact:
        UNSIGNED_VARINT.encode_into(out, length + 1)
    else:
        (INT32 if wide else INT16).encode_into(out, length)


class _Sized(Codec):
    """Shared logic of STRING, BYTES and RECORDS in their four forms (compact x nullable)."""

    kind = "?"
    wide = True  # int32 length; STRING overrides with int16

    def __init__(self, compact: bool = False, nullable: bool = False):
        self.compact, self.nullable = compact, nullable
        prefix = ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "")
        self.name = prefix + self.kind
        self.min_size = 1 if compact else (4 if self.wide else 2)
        self.max_length = 0x7FFFFFFF if self.wide else 0x7FFF

    def _payload(self, value: Any) -> Any:
        raise NotImplementedError

    def _value(self, view: Any) -> Any:
        raise NotImplementedError

    def encode_into(self, out: bytearray, value: Any) -> None:
        if value is None:
            if not self.nullable:
                raise ProtocolEncodeError(f"{self.name} is not nullable, got None")
            write_length(out, -1, self.compact, self.wide)
            return
        data = self._payload(value)
        if len(data) > self.max_length:
            raise ProtocolEncodeError(f"{self.name} of {len(data)} bytes is too long")
        write_length(out, len(data), self.compact, self.wide)
        out += data

    def decode(self, buf: Any, pos: int) -> tuple[Any, int]:
        length, pos = read_length(buf, pos, self.compact, self.wide)
        if length == -1:
            if not self.nullable:
                raise ProtocolDecodeError(f"{self.name} is not nullable but is null", pos=pos)
            return None, pos
        end = pos + length
        if end > len(buf):  # checked before slicing: a forged length allocates nothing
            raise short_buffer(self.name, length, pos, len(buf))
        return self._value(buf[pos:end]), end


class String(_Sized):
    """UTF-8 text. Kafka's Java decoder would replace invalid UTF-8; we reject it (PROTO-4)."""

    kind, wide = "STRING", False

    def _payload(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise ProtocolEncodeError(f"{self.name} needs a str, got {value!r}")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ProtocolEncodeError(f"{self.name} cannot encode {value!r}: {exc}") from None

    def _value(self, view: Any) -> str:
        try:
            return str(view, "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolDecodeError(f"{self.name} is not valid UTF-8: {exc.reason}") from None


class Bytes(_Sized):
    """Opaque bytes (e.g. group member metadata), copied out as `bytes`: they are small."""

    kind = "BYTES"

    def _payload(self, value: Any) -> Any:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise ProtocolEncodeError(f"{self.name} needs bytes, got {type(value).__name__}")
        return value

    def _value(self, view: Any) -> bytes:
        return bytes(view)


class Records(Bytes):
    """Record batches, kept as a zero-copy `memoryview` into the request buffer (PROTO-9)."""

    kind = "RECORDS"

    def _value(self, view: Any) -> Any:
        return view


STRING, NULLABLE_STRING = String(), String(nullable=True)
COMPACT_STRING, COMPACT_NULLABLE_STRING = String(compact=True), String(True, True)
BYTES, NULLABLE_BYTES = Bytes(), Bytes(nullable=True)
COMPACT_BYTES, COMPACT_NULLABLE_BYTES = Bytes(compact=True), Bytes(True, True)
RECORDS, COMPACT_RECORDS = Records(nullable=True), Records(True, True)

# The schema layer picks a form by (compact, nullable) for the version it encodes.
SIZED: dict[str, dict[tuple[bool, bool], _Sized]] = {
    "string": {
        (False, False): STRING,
        (False, True): NULLABLE_STRING,
        (True, False): COMPACT_STRING,
        (True, True): COMPACT_NULLABLE_STRING,
    },
    "bytes": {
        (False, False): BYTES,
        (False, True): NULLABLE_BYTES,
        (True, False): COMPACT_BYTES,
        (True, True): COMPACT_NULLABLE_BYTES,
    },
    "records": {
        (False, False): Records(),
        (False, True): RECORDS,
        (True, False): Records(compact=True),
        (True, True): COMPACT_RECORDS,
    },
}


class Array(Codec):
    """ARRAY / COMPACT_ARRAY of one element codec; nullable arrays use count -1 (compact: 0)."""

    def __init__(self, element: Codec, compact: bool = False, nullable: bool = False):
        self.element, self.compact, self.nullable = element, compact, nullable
        prefix = ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "")
        self.name = f"{prefix}ARRAY[{element.name}]"
        self.min_size = 1 if compact else 4

    def encode_into(self, out: bytearray, value: Any) -> None:
        if value is None:
            if not self.nullable:
                raise ProtocolEncodeError(f"{self.name} is not nullable, got None")
            write_length(out, -1, self.compact, True)
            return
        if not isinstance(value, list | tuple):
            raise ProtocolEncodeError(f"{self.name} needs a list, got {type(value).__name__}")
        write_length(out, len(value), self.compact, True)
        encode = self.element.encode_into
        for i, item in enumerate(value):
            try:
                encode(out, item)
            except ProtocolEncodeError as exc:
                exc.path.insert(0, f"[{i}]")
                raise

    def decode(self, buf: Any, pos: int) -> tuple[list | None, int]:
        start = pos
        count, pos = read_length(buf, pos, self.compact, True)
        if count == -1:
            if not self.nullable:
                raise ProtocolDecodeError(f"{self.name} is not nullable but is null", pos=start)
            return None, pos
        # Each element takes at least min_size bytes, so a count that cannot fit in what is
        # left is rejected before the loop: no forged count makes us spin or allocate.
        if count * max(self.element.min_size, 1) > len(buf) - pos:
            raise ProtocolDecodeError(
                f"{self.name} count {count} cannot fit in the {len(buf) - pos} bytes left",
                pos=start,
            )
        decode = self.element.decode
        items = []
        append = items.append
        for i in range(count):
            try:
                item, pos = decode(buf, pos)
            except ProtocolDecodeError as exc:
                exc.path.insert(0, f"[{i}]")
                raise
            append(item)
        return items, pos


class NullableStruct(Codec):
    """A struct that may be null: INT8 -1 for null, else 1 and the struct (Kafka's
    `NullableSchema`; a generated reader takes any negative marker as null)."""

    min_size = 1

    def __init__(self, struct: Codec):
        self.struct = struct
        self.name = f"NULLABLE_{struct.name}"

    def encode_into(self, out: bytearray, value: Any) -> None:
        if value is None:
            INT8.encode_into(out, -1)
            return
        INT8.encode_into(out, 1)
        self.struct.encode_into(out, value)

    def decode(self, buf: Any, pos: int) -> tuple[Any, int]:
        marker, pos = INT8.decode(buf, pos)
        if marker < 0:
            return None, pos
        return self.struct.decode(buf, pos)


class TaggedFields(Codec):
    """TAG_BUFFER: uvarint count, then per field uvarint tag, uvarint size, size bytes (KIP-482).

    At this level a tagged field is raw bytes: decode gives [(tag, memoryview)], encode takes
    [(tag, bytes)] and writes them in ascending tag order, as Kafka requires. The schema layer
    knows which tags mean which fields and decodes their bytes.
    """

    name = "TAG_BUFFER"
    min_size = 1

    def encode_into(self, out: bytearray, value: Any) -> None:
        fields = sorted(value or (), key=lambda item: item[0])
        UNSIGNED_VARINT.encode_into(out, len(fields))
        previous = -1
        for tag, data in fields:
            if tag == previous:
                raise ProtocolEncodeError(f"tag {tag} appears twice in one tag buffer")
            previous = tag
            UNSIGNED_VARINT.encode_into(out, tag)
            UNSIGNED_VARINT.encode_into(out, len(data))
            out += data

    def decode(self, buf: Any, pos: int) -> tuple[list[tuple[int, Any]], int]:
        start = pos
        count, pos = UNSIGNED_VARINT.decode(buf, pos)
        if count == 0:
            return [], pos
        if count * 2 > len(buf) - pos:  # every entry has at least a tag byte and a size byte
            raise ProtocolDecodeError(f"{count} tagged fields cannot fit in the buffer", pos=start)
        fields = []
        for _ in range(count):
            tag, pos = UNSIGNED_VARINT.decode(buf, pos)
            size, pos = UNSIGNED_VARINT.decode(buf, pos)
            end = pos + size
            if end > len(buf):
                raise short_buffer(f"tagged field {tag}", size, pos, len(buf))
            fields.append((tag, buf[pos:end]))
            pos = end
        return fields, pos


TAG_BUFFER = TaggedFields()
