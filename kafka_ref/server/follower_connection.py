"""A follower's connection to its leader: one request at a time, the response read once
into a buffer that is kept (Kafka: `ReplicaFetcherBlockingSend`, the fetcher thread's own
`NetworkClient`).

A follower's fetch response is mostly record batches, up to `replica.fetch.max.bytes` per
partition. Every byte of them is written to the follower's log, so every copy made on the
way costs as much as a byte of the append. Reading through asyncio's `StreamReader` costs
two: the socket's bytes are appended to the reader's buffer, then `readexactly` copies them
out into a new `bytes`. Here the connection is an `asyncio.BufferedProtocol`: the kernel
writes the response straight into the connection's own `bytearray` (`get_buffer`), and
the decoded response's RECORDS are `memoryview`s into it (PROTO-9), which the log writes
from. The buffer is kept and reused, grown to the largest response seen: a fresh
megabyte per response would cost the kernel a page fault and a zeroed page every 4 KB.

Reuse sets one rule: a response, and every view into it, is valid until the next request
on the connection. The fetcher appends a response's batches before it sends the next
fetch, and nothing keeps the views (`Log.append` writes them and keeps decoded headers).

Only one request is in flight, so a leader that sends more than the one response frame is
broken: the connection closes with an error, as it does when the leader closes it.

Every connection from one broker to another opens here (`open`): the replica fetchers',
the transaction coordinator's and the controller's. So this is where the inter-broker
listener's security applies to all of them (security/inter_broker.py, SEC-21): TLS on the
transport for SSL and SASL_SSL, then for SASL a SaslHandshake and the mechanism's
SaslAuthenticate rounds before the connection is handed out. A refusal is an
`InterBrokerAuthenticationError`, a ConnectionError, which every caller already treats as
"this broker cannot be reached now: retry later".
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Any

from kafka_ref.protocol import decode_response, encode_request
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.security.plain import AuthenticationFailed
from kafka_ref.security.sasl_client import sasl_exchange

_SIZE = struct.Struct(">i")
INITIAL_BUFFER = 64 * 1024


class InterBrokerAuthenticationError(ConnectionError):
    """The other broker refused this broker's TLS or SASL credentials (or its own were
    wrong): the message names the user and mechanism, never the password."""


class FetcherConnection(asyncio.BufferedProtocol):
    """One request at a time to the leader's broker; responses land in a reused buffer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray(INITIAL_BUFFER)
        self._view = memoryview(self._buf)
        self._filled = 0
        self._size = -1  # the frame's size once its 4-byte prefix is in
        self._waiter: asyncio.Future[memoryview] | None = None
        self._error: Exception | None = None
        self._ids = itertools.count(1)

    @classmethod
    async def open(
        cls, host: str, port: int, security: InterBrokerSecurity, client_id: str
    ) -> FetcherConnection:
        """Connect to another broker's inter-broker listener, with its TLS and SASL."""
        context = security.ssl_context
        _, connection = await asyncio.get_running_loop().create_connection(
            cls, host, port, ssl=context, server_hostname=host if context else None
        )
        try:
            if security.mechanism is not None:
                await connection._authenticate(security, client_id)
        except BaseException:
            connection.close()
            raise
        return connection

    async def _authenticate(self, security: InterBrokerSecurity, client_id: str) -> None:
        """SaslHandshake v1, then SaslAuthenticate rounds until the mechanism is done (the
        exchange is the clients' own, security/sasl_client.py)."""
        exchange = sasl_exchange(security.sasl_client(), security.username)
        try:
            step = next(exchange)
            while True:
                step = exchange.send(await self.request(*step, client_id))
        except StopIteration:
            return
        except AuthenticationFailed as err:
            raise InterBrokerAuthenticationError(str(err)) from None

    async def request(self, api_key: int, version: int, body: Any, client_id: str) -> Any:
        """Send one request and decode its response (valid until the next request)."""
        if self._error is not None or self.transport is None:
            raise self._error or ConnectionError("not connected")
        correlation_id = next(self._ids)
        self._filled, self._size = 0, -1
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(encode_request(api_key, version, correlation_id, client_id, body))
        payload = await self._waiter
        header, response = decode_response(payload, api_key, version)
        if header.correlation_id != correlation_id:
            raise ConnectionError(f"correlation id {header.correlation_id} != {correlation_id}")
        return response

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # ------------------------------------------------------------------ asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or EOFError("the leader closed the connection"))

    def _fail(self, error: Exception) -> None:
        if self._error is None:
            self._error = error
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(self._error)
        if self.transport is not None:
            self.transport.close()

    def _grow(self, size: int) -> None:
        """A bigger buffer, keeping what was read. Allocated anew, never resized: a view
        the caller still holds keeps the old buffer alive instead of failing a resize."""
        buf = bytearray(size)
        buf[: self._filled] = self._view[: self._filled]
        self._buf, self._view = buf, memoryview(buf)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._filled == len(self._buf):  # only after a protocol error: keep reading
            self._grow(2 * len(self._buf))
        return self._view[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self._filled += nbytes
        if self._size < 0 and self._filled >= 4:
            (self._size,) = _SIZE.unpack_from(self._buf, 0)
            if self._size < 0:
                self._fail(ConnectionError(f"response frame of {self._size} bytes"))
                return
            if 4 + self._size > len(self._buf):  # at least double: few regrowths
                self._grow(max(4 + self._size, 2 * len(self._buf)))
        if self._size < 0 or self._filled < 4 + self._size:
            return
        waiter = self._waiter
        if self._filled > 4 + self._size or waiter is None or waiter.done():
            self._fail(ConnectionError("the leader sent a response nobody asked for"))
            return
        self._waiter = None
        waiter.set_result(self._view[4 : 4 + self._size])
