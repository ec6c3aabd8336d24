"""Frames and headers: how requests and responses travel over a Kafka connection.

A Kafka connection is a stream of *frames*, each an int32 size followed by that many bytes
(the size does not count itself). A request frame is a request header plus a request body;
a response frame is a response header plus a response body. Requests on one connection are
answered strictly in order, and the header's `correlation_id` (chosen by the client, echoed
by the broker) ties each response to its request.

Request header (Kafka's RequestHeader.json):

    v1: request_api_key int16, request_api_version int16, correlation_id int32,
        client_id NULLABLE_STRING (int16 length)
    v2: v1 + TAG_BUFFER, used for flexible request versions. client_id keeps its int16
        length even here ("flexibleVersions": "none"): a broker of any age must be able to
        read the header of any ApiVersions request, whatever its version.

Response header (ResponseHeader.json): v0 is just `correlation_id int32`; v1 adds a
TAG_BUFFER and goes with flexible response versions - except ApiVersions, whose responses use
v0 *always*: the client reads that response before it knows what the broker speaks (PROTO-3).

The header version is not on the wire; both sides derive it from (api_key, api_version), see
`request_header_version` and `response_header_version`. The broker reads api_key and
api_version first (the first 4 bytes are the same in every header version), which tells it
the header version and the body schema.

Functions here are pure: `encode_request`/`encode_response` return whole frames ready to write;
`decode_request`/`decode_response` take a frame's payload (the network layer has already
read the size to know how much to wait for). `FrameDecoder` splits a byte stream into frames.
Oversized or negative frame sizes are refused before any allocation (Kafka's
`socket.request.max.bytes`, InvalidReceiveException).

A server reads and advertises the APIs of its kind of listener only (`listener`: "broker",
or "controller" for KRaft's quorum APIs): to a broker, a Vote request is as unknown as a
key Kafka never defined (PROTO-21). Clients may encode and decode every declared API.

Spec rules: PROTO-1, PROTO-3, PROTO-10, PROTO-12, PROTO-13, PROTO-14, PROTO-15, PROTO-21.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.api_keys import ApiKey
from kafka_ref.protocol.errors import (
    ProtocolDecodeError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kafka_ref.protocol.messages import APIS, ApiVersionsResponse, supported_api_versions
from kafka_ref.protocol.schema import Field, Message

# Kafka's socket.request.max.bytes default (100 MiB): a larger frame is refused unread.
MAX_FRAME_SIZE = 104_857_600
_SIZE = struct.Struct(">i")
_KEY_AND_VERSION = struct.Struct(">hh")

RequestHeader = Message(
    "RequestHeader",
    api_key=None,
    valid_versions="1-2",
    flexible_versions="2+",
    fields=[
        Field("RequestApiKey", "int16", "0+", about="The API key of this request."),
        Field("RequestApiVersion", "int16", "0+", about="The API version of this request."),
        Field("CorrelationId", "int32", "0+", about="The correlation ID of this request."),
        Field(
            "ClientId",
            "string",
            "1+",
            nullable_versions="1+",
            flexible_versions="none",
            about="The client ID string; always an int16-length string, even in v2.",
        ),
    ],
)

ResponseHeader = Message(
    "ResponseHeader",
    api_key=None,
    valid_versions="0-1",
    flexible_versions="1+",
    fields=[Field("CorrelationId", "int32", "0+", about="The correlation ID of this response.")],
)


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible request versions, else 1 (also for unknown keys: their tags are unread)."""
    api = APIS.get(api_key)
    return 2 if api is not None and api.request.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible response versions, else 0; ApiVersions always 0 (PROTO-3)."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    api = APIS.get(api_key)
    return 1 if api is not None and api.response.is_flexible(api_version) else 0


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Size-prefix a payload: int32 size, then the bytes."""
    return _SIZE.pack(len(payload)) + bytes(payload)


def read_frame_size(prefix: bytes | memoryview, max_size: int = MAX_FRAME_SIZE) -> int:
    """The payload size announced by a 4-byte prefix, refused if negative or above max_size."""
    if len(prefix) < 4:
        raise ProtocolDecodeError(f"frame size needs 4 bytes, got {len(prefix)}")
    (size,) = _SIZE.unpack_from(prefix, 0)
    if size < 0 or size > max_size:
        raise ProtocolDecodeError(f"invalid frame size {size} (limit {max_size})", pos=0)
    return size


class FrameDecoder:
    """Splits a byte stream into frame payloads, whatever sizes the bytes arrive in."""

    def __init__(self, max_size: int = MAX_FRAME_SIZE):
        self.max_size = max_size
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes; return every frame payload now complete (possibly none)."""
        self._buffer += data
        frames, pos = [], 0
        view = memoryview(self._buffer)
        try:
            while len(view) - pos >= 4:
                size = read_frame_size(view[pos : pos + 4], self.max_size)
                if len(view) - pos - 4 < size:
                    break
                frames.append(bytes(view[pos + 4 : pos + 4 + size]))
                pos += 4 + size
        finally:
            view.release()  # a bytearray cannot shrink while a view of it is alive
        del self._buffer[:pos]
        return frames

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buffer)


def _framed(out: bytearray) -> bytes:
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any
) -> bytes:
    """A whole request frame: size, request header (v1 or v2), body at `api_version`."""
    api = APIS.get(api_key)
    if api is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}")
    out = bytearray(4)  # room for the size, filled in at the end
    header = RequestHeader(
        request_api_key=api_key,
        request_api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    RequestHeader.encode_into(request_header_version(api_key, api_version), out, header)
    api.request.encode_into(api_version, out, body)
    return _framed(out)


# PROTO-10's exceptions, two real clients' quirks that Kafka, which never checks for
# trailing bytes, accepts; so does kafka-ref, for exactly those bytes after those requests:
# * librdkafka (2.2 and later) writes the top-level tagged fields of AlterUserScramCredentials
#   v0 twice, once itself and once when it finalizes every flexible request: one 0x00 more;
# * librdkafka's Metadata v9+ for every topic (a null array) leaves the 4 bytes it reserved
#   for the array's count: the null (0x00) and three more zeros, which a reader takes for the
#   fields that follow (AllowAutoTopicCreation, IncludeTopicAuthorizedOperations, false; no
#   tags), so the fields librdkafka meant come after the body: v11+ two booleans and 0x00.
def _tolerated_trailer(api_key: int, api_version: int, body: Any, trailer: bytes) -> bool:
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return trailer == b"\x00"
    if api_key == ApiKey.METADATA and api_version >= 11 and body.topics is None:
        return (
            len(trailer) == 3 and trailer[0] in (0, 1) and trailer[1] in (0, 1) and not trailer[2]
        )
    return False


def decode_request(
    payload: bytes | bytearray | memoryview, listener: str = "broker"
) -> tuple[Any, Any]:
    """(header, body) of one request frame's payload, received on a `listener` of that kind.

    Raises `UnknownApiKeyError` or `UnsupportedVersionError` (both carrying the header) for
    requests we do not declare, or do not serve on that listener (Kafka's `SocketServer`:
    "not enabled"), and `ProtocolDecodeError` for anything malformed. Records in the body
    are memoryviews into `payload`.
    """
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    if len(view) < 4:
        raise ProtocolDecodeError(f"a request header needs at least 4 bytes, got {len(view)}")
    api_key, api_version = _KEY_AND_VERSION.unpack_from(view, 0)
    header, pos = RequestHeader.decode_from(request_header_version(api_key, api_version), view, 0)
    api = APIS.get(api_key)
    if api is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}", header=header)
    if listener not in api.listeners:
        raise UnknownApiKeyError(
            f"{api.name} is not served on a {listener} listener", header=header
        )
    if api_version not in api.versions:
        raise UnsupportedVersionError(
            f"{api.name} v{api_version} is not supported ({api.min_version}-{api.max_version})",
            header=header,
        )
    body, pos = api.request.decode_from(api_version, view, pos)
    if pos != len(view) and not _tolerated_trailer(api_key, api_version, body, bytes(view[pos:])):
        raise ProtocolDecodeError(
            f"{len(view) - pos} bytes left over after {api.name} request v{api_version}", pos=pos
        )
    return header, body


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """A whole response frame: size, response header (v0 or v1), body at `api_version`."""
    api = APIS.get(api_key)
    if api is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}")
    out = bytearray(4)
    ResponseHeader.encode_into(
        response_header_version(api_key, api_version),
        out,
        ResponseHeader(correlation_id=correlation_id),
    )
    api.response.encode_into(api_version, out, body)
    return _framed(out)


def peek_correlation_id(payload: bytes | bytearray | memoryview) -> int:
    """The correlation id of a response payload: a client needs it to know what it answers."""
    if len(payload) < 4:
        raise ProtocolDecodeError("a response header needs 4 bytes", code=ErrorCode.CORRUPT_MESSAGE)
    return _SIZE.unpack_from(payload, 0)[0]


def decode_response(
    payload: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> tuple[Any, Any]:
    """(header, body) of a response to a request we sent at `api_version`.

    A broker that does not support our ApiVersions version answers with a v0 body (KIP-511),
    so, like Kafka's `ApiVersionsResponse.parse`, a body that does not parse at the version
    we sent is parsed again as v0. A malformed response is CORRUPT_MESSAGE: the bytes we
    received are not what any broker would send.
    """
    api = APIS.get(api_key)
    if api is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}")
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    try:
        header, pos = ResponseHeader.decode_from(
            response_header_version(api_key, api_version), view, 0
        )
        try:
            return header, api.response.decode(api_version, view[pos:])
        except ProtocolDecodeError:
            if api_key != ApiKey.API_VERSIONS or api_version == 0:
                raise
            return header, api.response.decode(0, view[pos:])
    except ProtocolDecodeError as exc:
        exc.code = ErrorCode.CORRUPT_MESSAGE
        raise


def api_versions_body(
    error_code: int = ErrorCode.NO_ERROR, throttle_time_ms: int = 0, listener: str = "broker"
) -> Any:
    """An ApiVersionsResponse listing every API a listener serves, with its version range."""
    return ApiVersionsResponse(
        error_code=error_code,
        api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, low, high in supported_api_versions(listener)
        ],
        throttle_time_ms=throttle_time_ms,
    )


def unsupported_api_versions_response(correlation_id: int, listener: str = "broker") -> bytes:
    """The answer to an ApiVersions request at a version we do not support (KIP-511).

    Kafka does not parse such a request's body; it answers with response header v0 and an
    ApiVersionsResponse *v0* body: error UNSUPPORTED_VERSION (35) and the supported ranges,
    which must include ApiVersions itself, so the client can retry at a version it finds there
    (PROTO-14). Kafka lists only the ApiVersions entry; we list every API, a superset.
    """
    body = api_versions_body(ErrorCode.UNSUPPORTED_VERSION, listener=listener)
    return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, body)
