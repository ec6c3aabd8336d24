"""The socket server: accept connections, read request frames, write responses in order.

Kafka's network layer is `SocketServer`: one `Acceptor` per listener accepts TCP
connections and hands each to a `Processor` (a network thread with its own selector), which
reads size-prefixed request frames, parses the header, puts the request into the
`RequestChannel` for the handler threads, and writes the responses back. kafka-ref maps it
onto asyncio: the event loop is the selector, `Acceptor` wraps `loop.create_server`, and
every connection gets its own `Processor` (an `asyncio.BufferedProtocol`).

**Reading** (BROKER-1, BROKER-8, BROKER-9). A frame is an int32 size and that many bytes. Small
frames are parsed out of a receive buffer and copied into their own `bytearray`; the kernel
reads the rest of a large frame straight into the frame's own `bytearray` (`get_buffer`), so
a 1 MB produce request is not copied byte by byte in Python. That buffer grows with the bytes
that arrive, doubling at most (BROKER-51): a size prefix is a promise, not a payment, and a
client that announces 100 MB and sends nothing costs 64 KB, not 100 MB (Kafka bounds the same
risk with its `MemoryPool`, `queued.max.request.bytes`). The buffer is writable, so the log
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

**Writing** (BROKER-5). A `Response` is chunks of bytes and file slices. Bytes go to
`transport.write`; a slice goes to `loop.sendfile`, which waits until the bytes before it
are on the wire and then calls `os.sendfile(socket, segment_fd, position, length)`: the
records go from the page cache to the socket without entering Python. While the
transport has nothing buffered, the slice goes straight to the socket with
`os.sendfile`, which skips `loop.sendfile`'s event loop turns; what the socket does not
take goes through `loop.sendfile`. Where native sendfile is not available (another event
loop, TLS: `os.sendfile` would put plaintext on an encrypted stream, or `zero_copy` set off
for lab 09's measurement), the slice is read
and written.
Writes respect flow control: when the transport's buffer is full, nothing more is written
until it drains.

**Listeners and security** (SEC-1..SEC-7). One `Acceptor` per listener, each with its
`ListenerSecurity`: TLS transports on SSL listeners; on SASL listeners a
`SaslServerAuthenticator` per connection sees every request first and answers the SASL
ones here, as Kafka's authenticator does. Requests carry the connection's principal.

**Starting** (BROKER-48). The port is bound early, so a broker asked for port 0 knows the
port it advertises, but it is listened on only when the broker is ready: until then a client's
connection is refused and it tries another broker, instead of being answered by a broker that
does not know the cluster yet.

**Quotas** (QUOTA-8). A throttled client's connection is muted for the throttle time
(`mute_for`): reading pauses as when too many requests are in flight, and the requests it
had already sent wait (`hold`) until the throttle ends.

**Metrics** (MET-2). As a response leaves, its request's stages are recorded
(kafka_ref/metrics/recorders.py, `RequestMetrics`).

Rules: BROKER-1..BROKER-5, BROKER-8, BROKER-9, BROKER-48, MET-2, QUOTA-8, SEC-4, SEC-6.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
from collections import deque

from kafka_ref.log.file_records import FileSlice
from kafka_ref.metrics.recorders import RequestMetrics
from kafka_ref.protocol.errors import ProtocolDecodeError, UnsupportedVersionError
from kafka_ref.protocol.frames import MAX_FRAME_SIZE, decode_request
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.security.listeners import ListenerSecurity
from kafka_ref.security.principal import ANONYMOUS, ssl_principal
from kafka_ref.security.sasl_server import SASL_KEYS, SaslServerAuthenticator
from kafka_ref.server.request_channel import Request, RequestChannel
from kafka_ref.server.response import Response

logger = logging.getLogger("kafka_ref.server.network")

RECEIVE_BUFFER = 64 * 1024  # small frames accumulate here
LARGE_FRAME = 16 * 1024  # larger frames are read straight into their own buffer
FIRST_FRAME_CHUNK = 64 * 1024  # what a large frame's buffer starts with, before it doubles
MAX_IN_FLIGHT = 64  # requests per connection before reading pauses
_SIZE = struct.Struct(">i")


class Processor(asyncio.BufferedProtocol):
    """One client connection: frames in, responses out in order (Kafka: `Processor`)."""

    def __init__(self, server: SocketServer, listener: ListenerSecurity) -> None:
        self.server = server
        self.listener = listener
        self.authenticator: SaslServerAuthenticator | None = None  # SASL listeners
        self.tls_principal = ANONYMOUS
        self.channel = server.request_channel
        self.max_request_size = server.max_request_size
        self.transport: asyncio.Transport | None = None
        self.name = "?"
        self._buf = bytearray(RECEIVE_BUFFER)
        self._view = memoryview(self._buf)
        self._start = self._end = 0  # unparsed bytes are _buf[_start:_end]
        self._frame: bytearray | None = None  # a large frame being read directly
        self._frame_filled = 0
        self._frame_size = 0  # what its size prefix announced
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
        self.requests = 0

    # ------------------------------------------------------------------ connection
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.name = f"{peer[0]}:{peer[1]}" if peer else "?"
        if self.listener.ssl_context is not None:  # the TLS handshake is done: who is it?
            self.tls_principal = ssl_principal(transport.get_extra_info("peercert"))
        if self.listener.sasl:
            self.authenticator = SaslServerAuthenticator(self.listener, self.name)
        self.server.connections.add(self)
        logger.debug("accepted connection from %s", self.name)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        self._in_flight.clear()
        self._backlog.clear()
        self._held.clear()
        if self._backlog_task is not None:
            self._backlog_task.cancel()
        logger.debug("connection from %s closed after %d requests", self.name, self.requests)

    def close(self, reason: str) -> None:
        """Close this connection only (after writing what is already buffered)."""
        if self.closed:
            return
        self.closed = True
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
        if self._end == len(self._buf) or (self._start and len(self._buf) - self._end < 4096):
            n = self._end - self._start  # move the partial frame to the front
            self._buf[:n] = self._buf[self._start : self._end]
            self._start, self._end = 0, n
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled == self._frame_size:
                frame, self._frame = self._frame, None
                self._on_frame(frame)  # the receive buffer is empty: nothing else to parse
            return
        self._end += nbytes
        self._parse()

    def _parse(self) -> None:
        while not self.closed and self._end - self._start >= 4:
            (size,) = _SIZE.unpack_from(self._buf, self._start)
            if size < 0 or size > self.max_request_size:
                self.close(
                    f"request frame of {size} bytes exceeds socket.request.max.bytes "
                    f"({self.max_request_size})"
                )
                return
            available = self._end - self._start - 4
            begin = self._start + 4
            if available >= size:
                frame = bytearray(self._view[begin : begin + size])
                self._start = begin + size
                self._on_frame(frame)
                continue
            if size > LARGE_FRAME:  # read the rest of this frame straight into its buffer
                self._frame = bytearray(min(size, max(FIRST_FRAME_CHUNK, 2 * available)))
                self._frame[:available] = self._view[begin : self._end]
                self._frame_filled, self._frame_size = available, size
                self._start = self._end = 0
            break
        if self._start == self._end:
            self._start = self._end = 0

    def _on_frame(self, frame: bytearray) -> None:
        self.requests += 1
        gate = self.authenticator
        if gate is not None and gate.raw_tokens:  # after a v0 SaslHandshake: a bare token
            self._answer_here(Request(self, None, None, len(frame) + 4), gate.raw_token(frame))
            return
        try:
            header, body = decode_request(memoryview(frame))
        except UnsupportedVersionError as err:
            header = err.header
            if header is None or header.request_api_key != ApiKey.API_VERSIONS:
                self.close(f"unsupported request: {err}")
                return
            body = None  # KIP-511: KafkaApis answers with a v0 ApiVersions error body
        except ProtocolDecodeError as err:
            self.close(f"malformed request: {err}")
            return
        except Exception as err:  # a decoder bug must cost one connection, not the server
            logger.exception("decoder failed on a frame from %s", self.name)
            self.close(f"undecodable request: {err!r}")
            return
        request = Request(self, header, body, len(frame) + 4)
        if gate is not None:  # SASL listener: authentication comes first (SEC-6)
            refused = gate.admit(header.request_api_key)
            if refused is not None:
                self.close(refused)
                return
            if header.request_api_key in SASL_KEYS and gate.intercepts(header.request_api_key):
                self._answer_here(request, gate.handle(request))
                return
        self._in_flight.append(request)
        if self._backlog or not self.channel.send_request(request):
            self._backlog.append(request)  # the channel is full: queue here, stop reading
            if self._backlog_task is None:
                self._backlog_task = asyncio.get_running_loop().create_task(self._drain())
        self._update_reading()

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
        busy = len(self._in_flight) >= MAX_IN_FLIGHT or bool(self._backlog) or self._mutes > 0
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

    # ------------------------------------------------------------------ writing responses
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
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))
        self._update_reading()

    async def _send_with_slices(self, request: Request) -> None:
        response, transport = request.response, self.transport
        assert transport is not None
        try:
            for chunk in response.chunks:
                if isinstance(chunk, FileSlice):
                    await self._send_file_slice(transport, chunk)
                else:
                    transport.write(chunk)
        except (OSError, RuntimeError) as err:
            self._sending = False
            self.close(f"sending a response failed: {err}")
            return
        self._sending = False
        self.server.request_metrics.response_sent(request)
        self._write_ready()

    async def _send_file_slice(self, transport: asyncio.Transport, piece: FileSlice) -> None:
        zero_copy = self.server.zero_copy
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


class Acceptor:
    """Accepts connections on one listener and gives each a Processor (Kafka: `Acceptor`)."""

    def __init__(self, server: SocketServer, listener: ListenerSecurity) -> None:
        self.server, self.listener = server, listener
        self.host, self.port = listener.endpoint.host, listener.endpoint.port
        self._server: asyncio.Server | None = None

    async def bind(self) -> int:
        """Bind the port without listening: connections are refused until `start_serving`."""
        loop = asyncio.get_running_loop()
        host = self.host or None  # "" listens on every interface, IPv4 and IPv6
        if host is None and self.port == 0:
            host = "0.0.0.0"  # one socket per family would each get a different free port
        self._server = await loop.create_server(
            lambda: Processor(self.server, self.listener), host, self.port, reuse_address=True,
            backlog=512, start_serving=False, ssl=self.listener.ssl_context,
            ssl_handshake_timeout=10.0 if self.listener.ssl_context else None,
        )  # fmt: skip
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def start_serving(self) -> None:
        assert self._server is not None, "bind first"
        await self._server.start_serving()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


class SocketServer:
    """The broker's network layer (Kafka: `SocketServer`): one acceptor per listener."""

    def __init__(
        self,
        request_channel: RequestChannel,
        listeners: list[ListenerSecurity],
        *,
        max_request_size: int = MAX_FRAME_SIZE,
    ) -> None:
        self.request_channel = request_channel
        self.request_metrics = RequestMetrics()
        self.max_request_size = max_request_size
        self.acceptors = [Acceptor(self, listener) for listener in listeners]
        self.connections: set[Processor] = set()
        self.zero_copy = True  # False: file slices are read and written, as without sendfile

    @property
    def port(self) -> int:
        """The first listener's port."""
        return self.acceptors[0].port

    @property
    def ports(self) -> dict[str, int]:
        """Listener name -> bound port."""
        return {a.listener.name: a.port for a in self.acceptors}

    async def bind(self) -> dict[str, int]:
        """Take every listener's port (useful with port 0). Nothing is accepted yet."""
        try:
            for acceptor in self.acceptors:
                await acceptor.bind()
        except OSError:
            await self.stop_accepting()
            raise
        return self.ports

    async def enable_request_processing(self) -> None:
        """Listen and accept (Kafka: `SocketServer.enableRequestProcessing`, the last step of
        a broker's start-up, BROKER-48)."""
        for acceptor in self.acceptors:
            await acceptor.start_serving()
            endpoint = acceptor.listener.endpoint
            logger.info("listening on %s:%d (%s, %s)", acceptor.host, acceptor.port,
                        endpoint.listener, endpoint.protocol)  # fmt: skip

    async def stop_accepting(self) -> None:
        for acceptor in self.acceptors:
            await acceptor.stop()

    async def stop(self) -> None:
        """Stop accepting, then close every connection."""
        await self.stop_accepting()
        for connection in list(self.connections):
            connection.close("broker shutting down")
        await asyncio.sleep(0)
