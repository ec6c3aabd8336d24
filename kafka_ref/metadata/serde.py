"""How a metadata record becomes the value of a record in `__cluster_metadata`.

A metadata record's bytes say which record they are, so a reader needs no schema in advance
(Kafka: `AbstractApiMessageSerde`, `MetadataRecordSerde`). Three unsigned varints come first:

    frame version   1 (0 was the frame of KRaft's 2.8 preview; Kafka refuses it)
    api key         the record's type (records.py: METADATA_RECORDS)
    version         the record's version
    message         the record in its flexible form (KIP-482), fields then TAG_BUFFER

`ApiMessageAndVersion` is the pair a writer hands over and a reader gets back: the message
and the version it was written at. Anything else, an unknown frame version, api key or
version, a value cut short, or bytes left after the message, is a `MetadataParseError`
(Kafka: `MetadataParseException`) whose one line says what and where.

Rule: META-2.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kafka_ref.errors import CorruptRecordError
from kafka_ref.metadata.records import METADATA_RECORDS, latest_version
from kafka_ref.protocol.errors import ProtocolDecodeError
from kafka_ref.protocol.schema import Message
from kafka_ref.protocol.types import UNSIGNED_VARINT

FRAME_VERSION = 1  # Kafka: AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
_SHORT_MAX = 0x7FFF


class MetadataParseError(CorruptRecordError):
    """A metadata record value that cannot be read (Kafka: `MetadataParseException`)."""


class ApiMessageAndVersion(NamedTuple):
    """A metadata record and its version (Kafka: `ApiMessageAndVersion`)."""

    message: Any
    version: int

    @property
    def schema(self) -> Message:
        return self.message._schema

    @property
    def api_key(self) -> int:
        return self.schema.api_key

    @property
    def name(self) -> str:
        return self.schema.name

    def __repr__(self) -> str:
        return f"{self.message!r}@v{self.version}"

    @classmethod
    def of(cls, message: Any, version: int | None = None) -> ApiMessageAndVersion:
        """`message` at `version`, by default the newest its record declares."""
        schema = message._schema
        if METADATA_RECORDS.get(schema.api_key) is not schema:
            raise TypeError(f"{schema.name} is not a metadata record")
        return cls(message, latest_version(schema) if version is None else version)


def serialize(entry: ApiMessageAndVersion) -> bytes:
    """The record value of `entry` (Kafka: `AbstractApiMessageSerde.write`)."""
    out = bytearray()
    UNSIGNED_VARINT.encode_into(out, FRAME_VERSION)
    UNSIGNED_VARINT.encode_into(out, entry.api_key)
    UNSIGNED_VARINT.encode_into(out, entry.version)
    entry.schema.encode_into(entry.version, out, entry.message)
    return bytes(out)


def _read_short(buf: memoryview, pos: int, entity: str) -> tuple[int, int]:
    try:
        value, pos = UNSIGNED_VARINT.decode(buf, pos)
    except ProtocolDecodeError as err:
        raise MetadataParseError(f"Error while reading {entity}: {err.reason}") from None
    if value > _SHORT_MAX:
        raise MetadataParseError(f"Value for {entity} was too large: {value}")
    return value, pos


def deserialize(value: bytes | memoryview) -> ApiMessageAndVersion:
    """The record in a record value (Kafka: `AbstractApiMessageSerde.read`)."""
    buf = memoryview(value)
    frame, pos = _read_short(buf, 0, "frame version")
    if frame == 0:
        raise MetadataParseError(
            "Could not deserialize metadata record with frame version 0 (KRaft's 2.8 preview)"
        )
    if frame != FRAME_VERSION:
        raise MetadataParseError(
            f"Could not deserialize metadata record due to unknown frame version {frame} "
            f"(only frame version {FRAME_VERSION} is supported)"
        )
    api_key, pos = _read_short(buf, pos, "type")
    version, pos = _read_short(buf, pos, "version")
    schema = METADATA_RECORDS.get(api_key)
    if schema is None:
        raise MetadataParseError(f"Unknown metadata record type {api_key}")
    try:
        message, pos = schema.decode_from(version, buf, pos)
    except ProtocolDecodeError as err:
        raise MetadataParseError(
            f"Failed to deserialize record with type {api_key} ({schema.name} v{version}): "
            + str(err).removeprefix(f"{err.code.name}: ")
        ) from None
    if pos != len(buf):
        raise MetadataParseError(
            f"Found {len(buf) - pos} byte(s) of garbage after {schema.name} v{version}"
        )
    return ApiMessageAndVersion(message, version)
