"""Zero copy: a response's file slices go from the page cache to the socket (BROKER-5).

A fetch response is encoded bytes and `FileSlice`s of segment files (server/response.py).
A slice goes to `loop.sendfile`, which waits until the bytes before it are on the wire and
then calls `os.sendfile(socket, segment_fd, position, length)`: the records go from the page
cache to the socket without entering Python. While the transport has nothing buffered, the
slice goes straight to the socket with `os.sendfile`, which skips `loop.sendfile`'s event
loop turns; what the socket does not take goes through `loop.sendfile`. Where native
sendfile is not available (another event loop, TLS: `os.sendfile` would put plaintext on an
encrypted stream, or `zero_copy` set off for lab 09's measurement), the slice is read and
written.

Rules: BROKER-5.
"""

from __future__ import annotations

import asyncio
import os

from kafka_ref.log.file_records import FileSlice


async def send_file_slice(transport: asyncio.Transport, piece: FileSlice, zero_copy: bool) -> None:
    """Send one file slice of a response: `os.sendfile` now as far as the socket takes it,
    then `loop.sendfile`, or read and write where there is no native sendfile (BROKER-5)."""
    sent = _sendfile_now(transport, piece) if zero_copy else 0
    if sent == piece.length:
        return
    loop = asyncio.get_running_loop()
    position, length = piece.position + sent, piece.length - sent
    try:
        if not zero_copy:
            raise asyncio.SendfileNotAvailableError("zero copy is off")
        sent += await loop.sendfile(transport, piece.file, position, length, fallback=False)
    except (asyncio.SendfileNotAvailableError, RuntimeError):
        if transport.is_closing():
            raise
        data = piece.file.read(position, length)  # no native sendfile: read and write
        transport.write(data)
        sent += len(data)
    if sent != piece.length:  # the stream would be corrupt from here on
        raise OSError(f"sent {sent} of {piece.length} bytes of {piece.file.path}")


def _sendfile_now(transport: asyncio.Transport, piece: FileSlice) -> int:
    """As much of `piece` as the socket takes right now, by `os.sendfile` on its descriptor.

    `loop.sendfile` costs a few event loop turns per slice even when the socket has room
    (it waits for the transport's buffer to drain, then for the socket to be writable); a
    follower's fetch response has a slice per partition. When nothing is buffered in the
    transport, the slice can go straight to the socket; what does not fit is left to
    `loop.sendfile`. Returns the bytes sent (0 if the transport holds unsent bytes).
    """
    if transport.get_extra_info("sslcontext") is not None:  # TLS: bytes must be encrypted
        return 0  # (loop.sendfile then refuses too, and the slice is read and written)
    sock = transport.get_extra_info("socket")
    if sock is None or transport.is_closing() or transport.get_write_buffer_size():
        return 0
    if not hasattr(os, "sendfile"):  # not on this platform: loop.sendfile falls back
        return 0
    sent = 0
    try:
        while sent < piece.length:
            n = os.sendfile(
                sock.fileno(), piece.file.fileno(), piece.position + sent, piece.length - sent
            )
            if n == 0:  # the file ends before the slice: loop.sendfile reports it
                break
            sent += n
    except (BlockingIOError, InterruptedError):
        pass  # the socket is full: the rest waits for it
    return sent
