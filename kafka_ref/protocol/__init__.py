"""The Kafka wire protocol: bytes in, values out, and back. No sockets, no asyncio.

Everything a Kafka client and broker say to each other is a request/response pair of
binary messages, defined by Kafka's message JSON files and versioned per API. This package
is that protocol as five small layers, bottom to top:

* `types` - the primitive types (int16, varints, strings, compact strings, arrays, tag
  buffers, records) as codecs that encode into a bytearray and decode from a memoryview,
  checking every length before trusting it;
* `schema` - Kafka's declarative message format in Python: a `Message` declared once for all
  its versions, with `Field`s that carry version ranges, nullability, defaults, flexible
  (compact) encodings and tagged fields; it compiles one codec per version;
* `api_keys` - the number at the front of every request that says which API it is;
* `messages` - one module per API (`api_00_produce`, `api_01_fetch`, ...) declaring its
  request and response, and the registry `APIS` of api_key -> versions the broker offers;
* `frames` - size-prefixed frames, request header v1/v2 and response header v0/v1, and the
  helpers the server and our clients call.

How the broker uses it (the client side is the mirror image):

    header, request = frames.decode_request(payload)        # payload: one frame, size removed
    if header.request_api_key == ApiKey.PRODUCE:
        for topic in request.topic_data:                    # records stay memoryviews
            ...
    wire = frames.encode_response(header.request_api_key, header.request_api_version,
                                  header.correlation_id, ProduceResponse(responses=[...]))

Every decoding failure is a `ProtocolDecodeError` (INVALID_REQUEST), so one `except` covers
all malformed input; `UnsupportedVersionError` and `UnknownApiKeyError` are its subclasses and
carry the header, so the server can still answer ApiVersions (KIP-511) or close cleanly.

The rules this package implements are in `spec/protocol.md` (PROTO-n).
"""

from kafka_ref.protocol.api_keys import ApiKey
from kafka_ref.protocol.errors import (
    ProtocolDecodeError,
    ProtocolEncodeError,
    ProtocolError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kafka_ref.protocol.frames import (
    MAX_FRAME_SIZE,
    FrameDecoder,
    RequestHeader,
    ResponseHeader,
    api_versions_body,
    decode_request,
    decode_response,
    encode_frame,
    encode_request,
    encode_response,
    peek_correlation_id,
    read_frame_size,
    request_header_version,
    response_header_version,
    unsupported_api_versions_response,
)
from kafka_ref.protocol.messages import APIS, Api, supported_api_versions
from kafka_ref.protocol.schema import Field, Message, Struct

__all__ = [
    "APIS",
    "MAX_FRAME_SIZE",
    "Api",
    "ApiKey",
    "Field",
    "FrameDecoder",
    "Message",
    "ProtocolDecodeError",
    "ProtocolEncodeError",
    "ProtocolError",
    "RequestHeader",
    "ResponseHeader",
    "Struct",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
    "api_versions_body",
    "decode_request",
    "decode_response",
    "encode_frame",
    "encode_request",
    "encode_response",
    "peek_correlation_id",
    "read_frame_size",
    "request_header_version",
    "response_header_version",
    "supported_api_versions",
    "unsupported_api_versions_response",
]
