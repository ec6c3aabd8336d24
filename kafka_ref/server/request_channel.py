"""The request channel: the queue between the network layer and the API handlers.

Kafka separates the threads that move bytes (the network `Processor`s) from the threads
that do the work (the `KafkaRequestHandler` pool running `KafkaApis`). Between them sits
the `RequestChannel`: processors put decoded requests into one bounded queue
(`queued.max.requests`), handler threads take them out, and each response goes back to the
processor that owns the connection, which writes it.

kafka-ref keeps the shape on one asyncio loop:

* `Request` is what travels: the connection it came from, its header and decoded body,
  its size and arrival time. A handler answers with `request.complete(response)` - now,
  or later from the purgatory - with a `Response`, or `None` for "no response" (acks=0),
  or asks to `close_connection()`;
* `RequestChannel` is an `asyncio.Queue`; `handler_loop` is one worker (Kafka:
  `KafkaRequestHandler.run`), and the broker runs `num.io.threads` of them.

Handlers are plain synchronous functions. A worker therefore handles one request from
start to finish without yielding, and requests are handled in exactly the order they
arrived: two pipelined produce requests on one connection append in order (BROKER-3). A
request that must wait (a long-polling fetch) does not block a worker: it is parked in the
purgatory and completed later, and the connection's later requests are handled meanwhile.
Their responses still go out in request order (the processor holds them back, BROKER-2).

A request also carries the memory its frame took from the network's memory pool
(`queued.max.request.bytes`, server/memory_pool.py): answering it (`complete`, or closing
its connection) gives that memory back, and a connection waiting for memory reads on
(BROKER-53). Kafka releases a request's buffer once the handler returns; here it is held
until the answer, since a waiting request (acks=all) still refers to its bytes.

Rules: BROKER-2, BROKER-3, BROKER-15, BROKER-53.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from kafka_ref.server.response import Response

logger = logging.getLogger("kafka_ref.server.request_channel")

_PENDING = object()


class Connection(Protocol):
    """What a request needs from its connection (the network Processor)."""

    name: str

    def on_response_ready(self) -> None: ...

    def close(self, reason: str) -> None: ...


class Request:
    """One decoded request and the slot for its response (Kafka: `RequestChannel.Request`)."""

    __slots__ = (
        "body",
        "completed_ns",
        "connection",
        "dequeued_ns",
        "frame",
        "header",
        "local_done_ns",
        "memory",
        "received_ns",
        "response",
        "response_dequeued_ns",
        "size",
    )

    def __init__(
        self,
        connection: Connection,
        header: Any,
        body: Any,
        size: int,
        frame: bytes | bytearray | None = None,
    ) -> None:
        self.connection = connection
        self.header = header
        self.body = body
        self.size = size
        # The header and body as received: a KRaft broker forwards some requests whole
        # (KIP-590, server/forwarding_manager.py). The frame's own buffer, not a copy.
        self.frame = frame
        self.received_ns = time.monotonic_ns()
        # the later stages' times, for the request metrics (kafka_ref/metrics/recorders.py)
        self.dequeued_ns = self.local_done_ns = self.completed_ns = self.response_dequeued_ns = 0
        self.response: Any = _PENDING
        self.memory: tuple[Any, int] | None = None  # (pool, bytes) its frame holds (BROKER-53)

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def principal(self) -> str:
        """Who sent it (SEC-5): its connection's principal, for the authorizer to check."""
        return getattr(self.connection, "principal", "User:ANONYMOUS")

    @property
    def host(self) -> str:
        """The client's IP address (the connection is named `ip:port`), for host ACLs."""
        return self.connection.name.rsplit(":", 1)[0]

    @property
    def connection_id(self) -> str:
        """Its connection's id, unique in this broker's life (Kafka's
        `RequestContext.connectionId`); a request made inside the broker has its name."""
        return getattr(self.connection, "connection_id", self.connection.name)

    @property
    def listener_name(self) -> str | None:
        """The listener it came in on (SEC-2); None for requests made inside the broker."""
        listener = getattr(self.connection, "listener", None)
        return listener.name if listener is not None else None

    def connection_closed(self) -> bool:
        return bool(getattr(self.connection, "closed", False))

    def refused_connection(self) -> bool:
        """Whether the broker closed this request's connection (not the client)."""
        return bool(getattr(self.connection, "closed_by_broker", False))

    @property
    def done(self) -> bool:
        return self.response is not _PENDING

    def complete(self, response: Response | None) -> None:
        """Hand the response (None: send nothing) to the connection; once only."""
        if self.response is not _PENDING:
            raise RuntimeError(f"request {self.correlation_id} answered twice")
        self.response = response
        self.completed_ns = time.monotonic_ns()
        self.release_buffer()
        self.connection.on_response_ready()

    def close_connection(self, reason: str) -> None:
        """Answer by closing the connection (Kafka does so for acks=0 produce errors)."""
        if self.response is _PENDING:
            self.response = None
        self.release_buffer()
        self.connection.close(reason)

    def release_buffer(self) -> None:
        """Answered: its frame's memory goes back to the pool (Kafka: `releaseBuffer`); once."""
        if self.memory is not None:
            pool, nbytes = self.memory
            self.memory = None
            pool.release(nbytes)

    def __repr__(self) -> str:
        return (
            f"Request(key={self.api_key}, v={self.api_version}, "
            f"corr={self.correlation_id}, from={self.connection.name})"
        )


class RequestChannel:
    """The queue from the processors to the handler workers (Kafka: `RequestChannel`)."""

    def __init__(self, max_queued: int = 500) -> None:
        self.queue: asyncio.Queue[Request] = asyncio.Queue(max_queued)

    def send_request(self, request: Request) -> bool:
        """Queue a request; False when the queue is full (the processor then waits)."""
        try:
            self.queue.put_nowait(request)
        except asyncio.QueueFull:
            return False
        return True

    async def put(self, request: Request) -> None:
        await self.queue.put(request)

    @property
    def size(self) -> int:
        return self.queue.qsize()


async def handler_loop(channel: RequestChannel, handle: Callable[[Request], None]) -> None:
    """One request handler worker (Kafka: `KafkaRequestHandler`): take, handle, repeat.

    A request whose connection the broker has closed is dropped unhandled (BROKER-15): the
    client sent it after one the broker refused by closing, and Kafka, which reads a
    connection's next request only once the previous one is answered, never reads it."""
    while True:
        request = await channel.queue.get()
        if request.refused_connection():
            request.release_buffer()
            continue
        try:
            handle(request)
        except Exception:  # KafkaApis handles its own errors; this is the last resort
            logger.exception("unexpected error handling %r; closing its connection", request)
            request.close_connection("handler error")


class RequestHandlerPool:
    """The `num.io.threads` request handlers (Kafka: `KafkaRequestHandlerPool`), resizable
    while the broker runs (a dynamic broker config, CONFIG-6): more workers are started, or
    the last ones cancelled. A worker is only ever cancelled while it waits for a request,
    since `handle` runs without awaiting: no request is dropped (Kafka: `resizeThreadPool`)."""

    def __init__(self, channel: RequestChannel, handle: Callable[[Request], None]) -> None:
        self.channel, self.handle = channel, handle
        self.workers: list[asyncio.Task] = []

    def resize(self, count: int) -> None:
        loop = asyncio.get_running_loop()
        while len(self.workers) < count:
            name = f"request-handler-{len(self.workers)}"
            self.workers.append(
                loop.create_task(handler_loop(self.channel, self.handle), name=name)
            )
        while len(self.workers) > count:
            self.workers.pop().cancel()

    async def shutdown(self) -> None:
        for worker in self.workers:
            worker.cancel()
        await asyncio.gather(*self.workers, return_exceptions=True)
        self.workers.clear()
