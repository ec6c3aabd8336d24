"""A connection: read request frames, write responses in order (Kafka: `Processor`).

Kafka's network layer is `SocketServer`: one `Acceptor` per listener accepts TCP
connections and hands each to a `Processor` (a network thread with its own selector), which
reads size-prefixed request frames, parses the header, puts the request into the
`RequestChannel` for the handler threads, and writes the responses back. kafka-ref maps it
onto asyncio: the event loop is the selector, `Acceptor` wraps `loop.create_server`
(server/socket_server.py), and every connection gets its own `Processor` (an
`asyncio.BufferedProtocol`), here.

**Reading** (BROKER-1, BROKER-8, BROKER-9). A frame is an int32 size and that many bytes. Small
frames are parsed out of a receive buffer shared by every connection and copied into their
own `bytearray`; only a partial frame's bytes move to a buffer of the connection's own, so
an idle connection holds no buffer at all. The kernel
reads the rest of a large frame straight into the frame's own `bytearray` (`get_buffer`), so
a 1 MB produce request is not copied byte by byte in Python. That buffer grows with the bytes
that arrive, doubling at most (BROKER-51): a size prefix is a promise, not a payment, and a
client that announces 100 MB and sends nothing costs 64 KB, not 100 MB (with
`queued.max.request.bytes`, below, it also takes 100 MB from the memory pool, whose bound the
sender cannot raise). A connection that has already sent a frame that large whole has kept
such a promise once: its next frame up to that size gets its whole buffer at once, so a
producer's steady 1 MB requests cost one allocation each, not four regrowths that zero and
copy their bytes over again. The buffer is writable, so the log
can stamp offsets into the producer's batches in place. A size
above `socket.request.max.bytes` or below zero closes this connection, before anything is
allocated; so does a frame that does not decode (Kafka: `InvalidRequestException`), and an
unknown API key or unsupported version other than ApiVersions (which gets its KIP-511
answer). Nothing a client sends can stop the server or another connection.

**Ordering** (BROKER-2, BROKER-3). Clients pipeline: they send several requests before
reading a response, and match responses to requests by order (kafka-python raises
`CorrelationIdError` on a mismatch). Each processor keeps its requests in arrival order;
a response that is ready early (a Metadata behind a long-polling Fetch) waits until every
earlier response is written. A request answered with no response (acks=0 produce) is
skipped over. Kafka enforces order by reading one request at a time per connection
("muting"); here several may be in flight, up to `MAX_IN_FLIGHT`, then reading pauses.

**Writing** (BROKER-5): in order, coalesced, with flow control and `sendfile`, is
server/response_writer.py (`ResponseWriter`, a part of this class).

**Memory** (BROKER-53, BROKER-54). Before a frame is read, its announced size is taken from
the broker's `MemoryPool` (`queued.max.request.bytes`, server/memory_pool.py); when the pool
has nothing left the connection pauses reading until a request is answered and gives its
bytes back. Before a connection on a SASL listener has authenticated, a frame above
`sasl.server.max.receive.size` closes it (BROKER-55).

**Connections** (BROKER-56..BROKER-58). Each new connection is checked against the
`ConnectionQuotas` (server/connection_quotas.py) and closed at once when over a limit. Its
`last_active` time lets the socket server close it when idle (BROKER-59). Its
`connection_id` is Kafka's, `local-peer-index`, unique in the broker's life; when the
connection ends, for whatever reason, the socket server's `disconnect_listeners` hear it
(Kafka `ConnectionDisconnectListener`): the share sessions opened on it end (SHARE-25).

**Listeners and security** (SEC-1..SEC-7). One `Acceptor` per listener, each with its
`ListenerSecurity`: TLS transports on SSL listeners; on SASL listeners a
`SaslServerAuthenticator` per connection sees every request first and answers the SASL
ones here, as Kafka's authenticator does. Requests carry the connection's principal.

**Quotas** (QUOTA-8). A throttled client's connection is muted for the throttle time
(`mute_for`): reading pauses as when too many requests are in flight, and the requests it
had already sent wait (`hold`) until the throttle ends.

**Metrics** (MET-2). As a response leaves, its request's stages are recorded
(kafka_ref/metrics/recorders.py, `RequestMetrics`).

Rules: BROKER-1..BROKER-5, BROKER-8, BROKER-9, BROKER-53..BROKER-58, MET-2, QUOTA-8, SEC-4,
SEC-6, SHARE-25.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import deque
from typing import Any

from kafka_ref.protocol.errors import ProtocolDecodeError, UnsupportedVersionError
from kafka_ref.protocol.frames import decode_request
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.security.listeners import ListenerSecurity
from kafka_ref.security.principal import ANONYMOUS, ssl_principal
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import Response
from kafka_ref.server.response_writer import ResponseWriter
from kafka_ref.server.sasl_server import SASL_KEYS, SaslServerAuthenticator

logger = logging.getLogger("kafka_ref.server.network")

RECEIVE_BUFFER = 64 * 1024  # the shared receive buffer; a connection's own, for a partial frame
LARGE_FRAME = 16 * 1024  # larger frames are read straight into their own buffer
FIRST_FRAME_CHUNK = 64 * 1024  # what a large frame's buffer starts with, before it doubles
MAX_IN_FLIGHT = 64  # requests per connection before reading pauses
_SIZE = struct.Struct(">i")


class Processor(ResponseWriter, asyncio.BufferedProtocol):
    """One client connection: frames in, responses out in order (Kafka: `Processor`)."""

    def __init__(self, server: Any, listener: ListenerSecurity) -> None:
        # server: its SocketServer (server/socket_server.py), which imports this module
        self.server = server
        self.listener = listener
        self.authenticator: SaslServerAuthenticator | None = None  # SASL listeners
        self.tls_principal = ANONYMOUS
        self.channel = server.request_channel
        self.max_request_size = server.max_request_size
        self.pool = server.memory_pool
        self._reserved = 0  # pool bytes taken for the frame being read (BROKER-53)
        self._waiting_for_memory = False
        self._admitted = False  # counted by the connection quotas
        self.last_active = time.monotonic()  # the last byte read or written (BROKER-59)
        self.transport: asyncio.Transport | None = None
        self.name = "?"
        self.connection_id = "?"  # Kafka's `local-peer-index`, set once connected
        self._buf: bytearray | None = None  # unparsed bytes are _buf[_start:_end]
        self._view: memoryview | None = None
        self._start = self._end = 0
        self._frame: bytearray | None = None  # a large frame being read directly
        self._frame_filled = 0
        self._frame_size = 0  # what its size prefix announced
        self._delivered = 0  # the largest frame this connection has sent whole (BROKER-51)
        self._in_flight: deque[Request] = deque()  # in arrival order, answered or not
        self._backlog: deque[Request] = deque()  # waiting for room in the request channel
        self._backlog_task: asyncio.Task | None = None
        self._sending = False  # a response with file slices is being sent
        self._write_paused = False
        self._write_scheduled = False
        self._read_paused = False
        self._mutes = 0  # quota throttles in force (KIP-219): no reading until they end
        self._held: list[Request] = []  # requests handled after the throttle ends
        self.closed = False
        self.closed_by_broker = False  # the broker closed it, not the client (BROKER-15)
        self.requests = 0

    # ------------------------------------------------------------------ connection
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.name = f"{peer[0]}:{peer[1]}" if peer else "?"
        local = transport.get_extra_info("sockname")
        index = next(self.server.connection_indexes)
        self.connection_id = f"{local[0]}:{local[1]}-{self.name}-{index}" if local else f"?-{index}"
        if not self._admit(peer[0] if peer else "?"):
            return
        if self.listener.ssl_context is not None:  # the TLS handshake is done: who is it?
            self.tls_principal = ssl_principal(transport.get_extra_info("peercert"))
        if self.listener.sasl:
            self.authenticator = SaslServerAuthenticator(self.listener, self.name)
        self.server.connections.add(self)
        logger.debug("accepted connection from %s", self.name)

    def _admit(self, ip: str) -> bool:
        """Over a connection quota: closed at once, before anything is read (BROKER-56..57)."""
        refused = self.server.quotas.admit(self.listener.name, ip)
        if refused is not None:
            logger.info(
                "refused connection from %s on listener %s: over %s",
                self.name,
                self.listener.name,
                refused,
            )
            self.closed = True
            assert self.transport is not None
            self.transport.close()
            return False
        self._admitted = True
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        if self._admitted:
            self.server.quotas.closed(self.listener.name, self.name.rsplit(":", 1)[0])
        self._release_memory()
        self._in_flight.clear()
        self._backlog.clear()
        self._held.clear()
        if self._backlog_task is not None:
            self._backlog_task.cancel()
        if self._admitted:  # what lives with the connection ends with it (SHARE-25)
            for listener in self.server.disconnect_listeners:
                listener(self.connection_id)
        logger.debug("connection from %s closed after %d requests", self.name, self.requests)

    def close(self, reason: str) -> None:
        """Close this connection only (after writing what is already buffered); the requests
        it still has queued are dropped (BROKER-15)."""
        if self.closed:
            return
        self.closed = self.closed_by_broker = True
        logger.info("closing connection from %s: %s", self.name, reason)
        if self.transport is not None:
            self.transport.close()

    def eof_received(self) -> bool:
        return False  # the client closed its side: close ours

    @property
    def principal(self) -> str:
        """Who this connection is (SEC-5): the SASL user, else the TLS one, else ANONYMOUS."""
        if self.authenticator is not None:
            return self.authenticator.principal or ANONYMOUS
        return self.tls_principal

    # ------------------------------------------------------------------ reading frames
    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            held = len(self._frame)
            if self._frame_filled == held:  # full, the frame is not: grow with what arrived
                self._frame.extend(bytes(min(self._frame_size, 2 * held) - held))
            return memoryview(self._frame)[self._frame_filled :]
        if self._buf is None:  # nothing unparsed: read into the server's shared buffer
            self._buf, self._view = self.server.receive_buffer, self.server.receive_view
            return self._view
        if self._end == len(self._buf) or (self._start and len(self._buf) - self._end < 4096):
            n = self._end - self._start  # move the partial frame to the front
            self._buf[:n] = self._buf[self._start : self._end]
            self._start, self._end = 0, n
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled == self._frame_size:
                self._delivered = max(self._delivered, self._frame_size)
                frame, self._frame = self._frame, None
                self._on_frame(frame)  # the receive buffer is empty: nothing else to parse
            return
        self._end += nbytes
        self._parse()
        self._keep_unparsed()

    def _keep_unparsed(self) -> None:
        """What is left unparsed (part of a frame) moves out of the shared receive buffer into
        one of this connection's own; with nothing left it holds no receive buffer at all, so
        an idle connection costs no buffer (BROKER-51)."""
        n = self._end - self._start
        if n == 0:
            self._buf = self._view = None
            self._start = self._end = 0
        elif self._buf is self.server.receive_buffer:
            own = bytearray(RECEIVE_BUFFER)
            own[:n] = self._view[self._start : self._end]
            self._buf, self._view = own, memoryview(own)
            self._start, self._end = 0, n

    def _parse(self) -> None:
        while not self.closed and self._end - self._start >= 4:
            (size,) = _SIZE.unpack_from(self._buf, self._start)
            limit, key = self._frame_limit()
            if size < 0 or size > limit:
                self.close(f"request frame of {size} bytes exceeds {key} ({limit})")
                return
            if not self._take_memory(size):
                return  # reading paused until the pool has memory again
            available = self._end - self._start - 4
            begin = self._start + 4
            if available >= size:
                frame = bytearray(self._view[begin : begin + size])
                self._start = begin + size
                self._on_frame(frame)
                continue
            if size > LARGE_FRAME:  # read the rest of this frame straight into its buffer
                self._frame = bytearray(self._first_chunk(size, available))
                self._frame[:available] = self._view[begin : self._end]
                self._frame_filled, self._frame_size = available, size
                self._start = self._end = 0
            break
        if self._start == self._end:
            self._start = self._end = 0

    def _first_chunk(self, size: int, available: int) -> int:
        """How much of a large frame's buffer to allocate before its bytes arrive: a size
        this connection has already sent whole is a promise it keeps, so its buffer is
        allocated once (a producer's 1 MB requests are not grown four times each, zeroing
        and copying their bytes three times over); a larger one starts small and doubles
        with the bytes that arrive (BROKER-51)."""
        if size <= self._delivered:
            return size
        return min(size, max(FIRST_FRAME_CHUNK, 2 * available))

    def _frame_limit(self) -> tuple[int, str]:
        """The largest frame this connection may send now, and the key that says so."""
        gate = self.authenticator
        if gate is not None and not gate.authenticated:  # BROKER-55
            return min(self.listener.max_receive_size, self.max_request_size), (
                "sasl.server.max.receive.size"
            )
        return self.max_request_size, "socket.request.max.bytes"

    def _take_memory(self, size: int) -> bool:
        """Take the frame's announced size from the pool, once; or wait for memory (BROKER-53)."""
        if self._reserved or self.pool.try_allocate(size):
            self._reserved = self._reserved or size
            return True
        self._waiting_for_memory = True
        self.pool.wait(self)
        self._update_reading()
        return False

    def memory_available(self) -> None:
        """Called by the pool when memory was given back: read on."""
        self._waiting_for_memory = False
        if not self.closed:
            self._parse()
            self._keep_unparsed()
            self._update_reading()

    def _release_memory(self) -> None:
        """The connection closed: what its requests and its partial frame held goes back."""
        self.pool.forget(self)
        for request in self._in_flight:
            request.release_buffer()
        held, self._reserved = self._reserved, 0
        if held:
            self.pool.release(held)

    def _on_frame(self, frame: bytearray) -> None:
        self.requests += 1
        held, self._reserved = self._reserved, 0
        request = self._decode(frame)
        if request is None:  # the connection is closing: the frame's memory goes back now
            self.pool.release(held)
            return
        if held:
            request.memory = (self.pool, held)  # given back when it is answered
        gate = self.authenticator
        if request.header is None:  # after a v0 SaslHandshake: a bare token
            assert gate is not None
            self._answer_here(request, gate.raw_token(frame))
            return
        if gate is not None:  # SASL listener: authentication comes first (SEC-6)
            refused = gate.admit(request.api_key)
            if refused is not None:
                request.close_connection(refused)
                return
            if request.api_key in SASL_KEYS and gate.intercepts(request.api_key):
                self._answer_here(request, gate.handle(request))
                return
        self._in_flight.append(request)
        if self._backlog or not self.channel.send_request(request):
            self._backlog.append(request)  # the channel is full: queue here, stop reading
            if self._backlog_task is None:
                self._backlog_task = asyncio.get_running_loop().create_task(self._drain())
        self._update_reading()

    def _decode(self, frame: bytearray) -> Request | None:
        """The frame as a Request; None when it cannot be one and the connection closes."""
        size = len(frame) + 4
        if self.authenticator is not None and self.authenticator.raw_tokens:
            return Request(self, None, None, size)  # a bare SASL token, no header
        try:
            header, body = decode_request(memoryview(frame), self.server.api_listener)
        except UnsupportedVersionError as err:
            header = err.header
            if header is None or header.request_api_key != ApiKey.API_VERSIONS:
                self.close(f"unsupported request: {err}")
                return None
            body = None  # KIP-511: KafkaApis answers with a v0 ApiVersions error body
        except ProtocolDecodeError as err:
            self.close(f"malformed request: {err}")
            return None
        except Exception as err:  # a decoder bug must cost one connection, not the server
            logger.exception("decoder failed on a frame from %s", self.name)
            self.close(f"undecodable request: {err!r}")
            return None
        return Request(self, header, body, size, frame)

    def _answer_here(self, request: Request, response: Response) -> None:
        """A request the network side answers itself (SASL), in order with the others."""
        self._in_flight.append(request)
        request.complete(response)
        self._update_reading()

    async def _drain(self) -> None:
        try:
            while self._backlog:
                await self.channel.put(self._backlog[0])
                self._backlog.popleft()
        finally:
            self._backlog_task = None
            self._update_reading()

    def _update_reading(self) -> None:
        if self.closed or self.transport is None:
            return
        busy = (
            len(self._in_flight) >= MAX_IN_FLIGHT
            or bool(self._backlog)
            or self._waiting_for_memory
            or self._mutes > 0
        )
        if busy and not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()
        elif not busy and self._read_paused:
            self._read_paused = False
            self.transport.resume_reading()

    def mute_for(self, delay_s: float) -> None:
        """Take nothing from this client for `delay_s`: a quota throttle (KIP-219, QUOTA-8;
        server/throttling.py). Reading pauses, and requests it already sent are held
        (`hold`) until the throttle ends: Kafka reads one request at a time per connection,
        so a throttled client has nothing else in progress. Responses still go out."""
        self._mutes += 1
        self._update_reading()
        asyncio.get_running_loop().call_later(delay_s, self._unmute)

    @property
    def muted(self) -> bool:
        return self._mutes > 0

    def hold(self, request: Request) -> None:
        """Keep a request of a muted connection until the throttle ends, then queue it again."""
        self._held.append(request)

    def _unmute(self) -> None:
        self._mutes -= 1
        if not self._mutes and self._held and not self.closed:  # before any later request
            self._backlog.extendleft(reversed(self._held))
            self._held.clear()
            if self._backlog_task is None:
                self._backlog_task = asyncio.get_running_loop().create_task(self._drain())
        self._update_reading()
