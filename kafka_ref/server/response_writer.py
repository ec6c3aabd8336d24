"""Writing a connection's responses: in order, coalesced, with flow control (Kafka: the
send half of `Processor`, `Selector.write`).

Clients pipeline requests and match the answers by order (BROKER-2, BROKER-3), so a
connection writes its responses strictly in the order its requests arrived: a response
that is ready early (a Metadata behind a long-polling Fetch) waits until every earlier one
has gone. A request answered with nothing (acks=0 produce, BROKER-4) is skipped over.

A `Response` is chunks of bytes and file slices (BROKER-5). Bytes go to
`transport.write`; file slices go from the page cache to the socket with `sendfile`
(server/send_file.py) while the connection writes nothing else. Responses that are ready
together leave in one `write`: `on_response_ready` defers the writing to the end of the
event loop's turn, so the answers to pipelined requests share one system call. Writing
respects flow control: when the transport's buffer is full (`pause_writing`), nothing
more is written until it drains.

`ResponseWriter` is the part of `Processor` (server/network.py) that writes; the
processor's state (its requests in flight, its transport) is shared.

Rules: BROKER-2, BROKER-3, BROKER-4, BROKER-5, MET-2.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from kafka_ref.log.file_records import FileSlice
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import Response
from kafka_ref.server.send_file import send_file_slice


class ResponseWriter:
    """Writes a connection's responses in order (a part of `Processor`, whose state it
    shares: the annotations below; `close` and `_update_reading` are the processor's)."""

    server: Any
    transport: asyncio.Transport | None
    closed: bool
    last_active: float
    _in_flight: deque[Request]
    _sending: bool
    _write_paused: bool
    _write_scheduled: bool

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._write_ready()

    def on_response_ready(self) -> None:
        """A response is ready: write, once the handlers yield, all that can go in order.

        Deferring to the end of the loop iteration coalesces the responses to pipelined
        requests into one `write` (one system call) instead of one each.
        """
        if not self._write_scheduled and not self.closed:
            self._write_scheduled = True
            asyncio.get_running_loop().call_soon(self._write_ready)

    def _write_ready(self) -> None:
        """Write every response at the head of the queue that is ready, in order."""
        self._write_scheduled = False
        if self._sending or self.closed or self.transport is None:
            return
        out: list[bytes] = []
        while self._in_flight and self._in_flight[0].done and not self._write_paused:
            request = self._in_flight.popleft()
            self.server.request_metrics.response_dequeued(request)
            response: Response | None = request.response
            if response is None:
                continue  # acks=0: nothing to send (BROKER-4)
            if response.has_slices:
                if out:
                    self.transport.write(b"".join(out))
                self._sending = True
                asyncio.get_running_loop().create_task(self._send_with_slices(request))
                return
            out.extend(response.chunks)
            if response.close_after:
                self.transport.write(b"".join(out))
                self.close("closed after response")
                return
        if out:
            self.last_active = time.monotonic()
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))
        self._update_reading()

    async def _send_with_slices(self, request: Request) -> None:
        response, transport = request.response, self.transport
        assert transport is not None
        try:
            for chunk in response.chunks:
                if isinstance(chunk, FileSlice):
                    await send_file_slice(transport, chunk, self.server.zero_copy)
                else:
                    transport.write(chunk)
        except (OSError, RuntimeError) as err:
            self._sending = False
            self.close(f"sending a response failed: {err}")
            return
        self._sending = False
        self.server.request_metrics.response_sent(request)
        self._write_ready()
