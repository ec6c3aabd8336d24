"""How the wire protocol layer fails: one family of typed errors, each with a Kafka error code.

A broker reads bytes that anyone can send. Kafka's rule (`RequestContext.parseRequest`) is that
a request which cannot be parsed is an `InvalidRequestException` (INVALID_REQUEST, 42): the
broker logs it and closes that one connection, never anything worse. kafka-ref keeps the same
contract with one exception family:

* `ProtocolDecodeError` - the bytes are not a valid encoding (too short, a negative or forged
  length, invalid UTF-8, a bad varint, trailing garbage). It carries a readable `reason`, the
  `path` of the field being read (`ProduceRequest.topic_data[0].name`) and the byte offset.
  Every decoder in `types`, `schema` and `frames` raises this and only this: no `IndexError`,
  `struct.error` or `UnicodeDecodeError` ever escapes, so the server needs exactly one
  `except` around a decode.
* `UnsupportedVersionError` - the header names a known API at a version we do not declare.
  For ApiVersions the broker still answers (KIP-511, `frames.unsupported_api_versions_response`);
  for any other API Kafka closes the connection, because it cannot know the response schema.
  Our clients raise it too, when a broker and the client share no version of an API.
* `UnknownApiKeyError` - the header names an API key we do not know at all.

Both carry the request header as far as it could be read, so the server can use the
correlation id. `ProtocolEncodeError` is the other direction: our own code tried to encode a
value that does not fit its schema (None in a non-nullable field, 70000 in an int16). That is
a bug in the caller, so its code is UNKNOWN_SERVER_ERROR.

Spec rules: PROTO-2 (decoders fail with one typed error), PROTO-13 (unknown keys and versions).
"""

from __future__ import annotations

from typing import Any

from kafka_ref.errors import ErrorCode, KafkaError


class ProtocolError(KafkaError):
    """Base of both directions: a readable reason, the field path and the byte offset."""

    def __init__(self, reason: str, *, pos: int | None = None, code: ErrorCode | None = None):
        self.reason = reason
        self.pos = pos
        # Filled from the inside out as the error travels up through struct and array
        # codecs, so the message names the field being handled: `topic_data[0].name`.
        self.path: list[str] = []
        super().__init__(reason, code=code)

    def __str__(self) -> str:
        where = ".".join(self.path).replace(".[", "[")
        at = f" (at byte {self.pos})" if self.pos is not None else ""
        field = f"{where}: " if where else ""
        return f"{self.code.name}: {field}{self.reason}{at}"


class ProtocolDecodeError(ProtocolError):
    """Bytes that are not a valid encoding of what we expected to read."""

    code = ErrorCode.INVALID_REQUEST


class UnsupportedVersionError(ProtocolDecodeError):
    """A known API at a version this broker does not declare (Kafka: UnsupportedVersionException).

    `header` is the request header decoded as far as possible (it has `request_api_key`,
    `request_api_version`, `correlation_id`, `client_id`).
    """

    code = ErrorCode.UNSUPPORTED_VERSION

    def __init__(self, reason: str, *, header: Any = None):
        super().__init__(reason)
        self.header = header


class UnknownApiKeyError(ProtocolDecodeError):
    """An API key this broker does not implement; Kafka answers by closing the connection."""

    code = ErrorCode.INVALID_REQUEST

    def __init__(self, reason: str, *, header: Any = None):
        super().__init__(reason)
        self.header = header


class ProtocolEncodeError(ProtocolError):
    """A value that does not fit its schema; raised while encoding, always a caller bug."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


def short_buffer(what: str, need: int, pos: int, have: int) -> ProtocolDecodeError:
    """The error for 'the buffer ends before this field does' (the most common decode error)."""
    left = max(have - pos, 0)
    return ProtocolDecodeError(f"{what} needs {need} bytes but only {left} are left", pos=pos)
