"""Responses as bytes and file slices: how a fetch response is sent without copying records.

A Fetch response is mostly record batches that already sit, byte for byte, in segment
files. Kafka never copies them into the JVM heap: its `FetchResponse` holds `FileRecords`
slices, and `toSend` turns the response into a `MultiRecordsSend`: the encoded header and
fields as small buffers, and for each partition's RECORDS field a `RecordsSend` that calls
`FileChannel.transferTo`, i.e. `sendfile(2)`, from the page cache to the socket.

kafka-ref does the same. A `Response` is a list of *chunks*, each either `bytes` or a
`FileSlice` (file, position, length) from `Log.read`. `encode_response` walks the compiled
schema of the response (the same `StructCodec`s the protocol layer uses) and encodes every
field into a buffer, except RECORDS values that are `FileRecordsValue`s: for those it
writes the length prefix, closes the buffer, appends the slices as chunks and opens a new
buffer. The frame's size prefix counts slice lengths without reading them. The network
layer then writes bytes chunks with `transport.write` and slices with `loop.sendfile`
(BROKER-5): a 50 MB fetch costs a few hundred bytes of Python work.

Only subtrees that can hold records are walked field by field; everything else goes
through the codec's own fast `encode_into`.

Rules: BROKER-5.
"""

from __future__ import annotations

import contextlib
import os
import struct
from typing import Any

from kafka_ref.log.file_records import FileSlice, pread_fully
from kafka_ref.protocol import types
from kafka_ref.protocol.frames import ResponseHeader, response_header_version
from kafka_ref.protocol.messages import APIS
from kafka_ref.protocol.schema import StructCodec

_SIZE = struct.Struct(">i")
DEFERRED = object()  # a handler's answer when it answers later, through `KafkaApis.send`

Chunk = bytes | bytearray | FileSlice


class _Descriptor:
    """A response's own duplicate of a segment file's descriptor (`os.dup`).

    A response may be written after its log was closed (the topic was deleted meanwhile).
    Sending from the log's own descriptor would then fail, or worse, send another file's
    bytes if the number was reused; a duplicate keeps the file open until the response
    is done with it (it closes when the last reference goes).
    """

    __slots__ = ("_fd", "path")

    def __init__(self, file: Any) -> None:
        self._fd = os.dup(file.fileno())
        self.path = getattr(file, "path", "?")

    def fileno(self) -> int:
        return self._fd

    def read(self, position: int, length: int) -> bytes:
        return pread_fully(self._fd, position, length)

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


class FileRecordsValue:
    """The RECORDS of one partition in a response: file slices, sent with sendfile."""

    __slots__ = ("size", "slices")

    def __init__(self, slices: list[FileSlice]) -> None:
        self.slices = [
            FileSlice(_Descriptor(s.file), s.position, s.length, s.first_offset, s.next_offset)
            for s in slices
        ]
        self.size = sum(s.length for s in slices)

    def __len__(self) -> int:
        return self.size

    def read_bytes(self) -> bytes:
        """The bytes themselves (tests, and transports without sendfile)."""
        return b"".join(s.read_bytes() for s in self.slices)


class Response:
    """One response frame as chunks (Kafka: `Send`). `size` includes the 4-byte prefix."""

    __slots__ = ("chunks", "close_after", "size")

    def __init__(self, chunks: list[Chunk], *, close_after: bool = False) -> None:
        self.chunks = chunks
        self.size = sum(c.length if isinstance(c, FileSlice) else len(c) for c in chunks)
        self.close_after = close_after

    @classmethod
    def of_bytes(cls, frame: bytes) -> Response:
        return cls([frame])

    @property
    def has_slices(self) -> bool:
        return any(isinstance(c, FileSlice) for c in self.chunks)

    def to_bytes(self) -> bytes:
        """The whole frame as bytes, reading the slices (tests and fallback paths)."""
        return b"".join(
            c.read_bytes() if isinstance(c, FileSlice) else bytes(c) for c in self.chunks
        )


class _Writer:
    """Collects chunks: a growing bytearray, interrupted by file slices."""

    def __init__(self) -> None:
        self.buffer = bytearray(4)  # the frame size, filled in by `finish`
        self.chunks: list[Chunk] = [self.buffer]

    def slices(self, value: FileRecordsValue) -> None:
        self.chunks.extend(s for s in value.slices if s.length)
        self.buffer = bytearray()
        self.chunks.append(self.buffer)

    def finish(self) -> list[Chunk]:
        chunks = [c for c in self.chunks if isinstance(c, FileSlice) or len(c)]
        total = sum(c.length if isinstance(c, FileSlice) else len(c) for c in chunks)
        _SIZE.pack_into(chunks[0], 0, total - 4)
        # The bytearrays go out as they are: nothing writes to them any more, and copying
        # them into bytes cost a follower's fetch response (its records are in the buffer)
        # one more copy of every replicated byte.
        return chunks


_HAS_RECORDS: dict[int, bool] = {}


def _has_records(codec: types.Codec) -> bool:
    """Does this codec's subtree contain a RECORDS field? (memoized per codec object)"""
    key = id(codec)
    found = _HAS_RECORDS.get(key)
    if found is None:
        if isinstance(codec, types.Records):
            found = True
        elif isinstance(codec, types.Array):
            found = _has_records(codec.element)
        elif isinstance(codec, StructCodec):
            found = any(_has_records(c) for _, c in codec.wire)
        else:
            found = False
        _HAS_RECORDS[key] = found
    return found


def _encode(writer: _Writer, codec: types.Codec, value: Any) -> None:
    if isinstance(value, FileRecordsValue) and isinstance(codec, types.Records):
        types.write_length(writer.buffer, value.size, codec.compact, True)
        writer.slices(value)
    elif not _has_records(codec):
        codec.encode_into(writer.buffer, value)
    elif isinstance(codec, types.Array) and value is not None:
        types.write_length(writer.buffer, len(value), codec.compact, True)
        for item in value:
            _encode(writer, codec.element, item)
    elif isinstance(codec, StructCodec):
        for attr, field_codec in codec.wire:
            _encode(writer, field_codec, getattr(value, attr))
        if codec.flexible:  # as StructCodec.encode_into: tagged fields only when non-default
            tagged = [
                (tag, c.encode(getattr(value, attr)))
                for attr, tag, c, default in codec.tagged
                if getattr(value, attr) != default
            ]
            types.TAG_BUFFER.encode_into(writer.buffer, tagged)
    else:
        codec.encode_into(writer.buffer, value)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> Response:
    """A response frame as chunks: header and fields as bytes, FileRecordsValues as slices."""
    api = APIS[api_key]
    writer = _Writer()
    ResponseHeader.encode_into(
        response_header_version(api_key, api_version),
        writer.buffer,
        ResponseHeader(correlation_id=correlation_id),
    )
    _encode(writer, api.response.compiled(api_version), body)
    return Response(writer.finish())
