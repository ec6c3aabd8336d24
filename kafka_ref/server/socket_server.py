"""The socket server: one acceptor per listener, the connection limits, idle connections.

Kafka's `SocketServer` owns the network side of a broker: an `Acceptor` per listener that
takes TCP connections and hands each to a `Processor` (kafka_ref/server/network.py), the
broker-wide `ConnectionQuotas` every new connection is checked against
(server/connection_quotas.py), the `MemoryPool` every request frame takes its bytes from
(server/memory_pool.py), and the expiry of idle connections. kafka-ref's `Acceptor` wraps
asyncio's `loop.create_server`.

**Starting** (BROKER-48). The port is bound early, so a broker asked for port 0 knows the
port it advertises, but it is listened on only when the broker is ready: until then a client's
connection is refused and it tries another broker, instead of being answered by a broker that
does not know the cluster yet.

**Idle connections** (BROKER-59). A task wakes a few times per `connections.max.idle.ms`
(at least once a second) and closes every connection that has read and written nothing for
that long; closing gives back what it held.

**Reading** shares one receive buffer among all connections (BROKER-51): the event loop runs
one read at a time, and a connection keeps a buffer of its own only for a partial frame.

Rules: BROKER-48, BROKER-51, BROKER-59.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable

from kafka_ref.metrics.recorders import RequestMetrics
from kafka_ref.protocol.frames import MAX_FRAME_SIZE
from kafka_ref.security.listeners import ListenerSecurity
from kafka_ref.server.broker_configs import BROKER_CONFIGS
from kafka_ref.server.connection_quotas import ConnectionQuotas, ListenerQuota, idle_connections
from kafka_ref.server.memory_pool import MemoryPool, UnboundedPool
from kafka_ref.server.network import RECEIVE_BUFFER, Processor
from kafka_ref.server.request_channel import RequestChannel

logger = logging.getLogger("kafka_ref.server.socket_server")


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
            lambda: Processor(self.server, self.listener),
            host,
            self.port,
            reuse_address=True,
            backlog=512,
            start_serving=False,
            ssl=self.listener.ssl_context,
            ssl_handshake_timeout=10.0 if self.listener.ssl_context else None,
        )
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
        memory_pool: MemoryPool | None = None,
        quotas: ConnectionQuotas | None = None,
        connections_max_idle_ms: int = BROKER_CONFIGS["connections.max.idle.ms"].default,
        api_listener: str = "broker",
    ) -> None:
        self.request_channel = request_channel
        self.api_listener = api_listener  # the APIs it reads: a broker's or a controller's
        self.request_metrics = RequestMetrics()
        self.max_request_size = max_request_size
        self.memory_pool = memory_pool or UnboundedPool()
        # Every connection reads into this one buffer; only a partial frame is copied out
        # (Processor._keep_unparsed): the event loop runs one read at a time.
        self.receive_buffer = bytearray(RECEIVE_BUFFER)
        self.receive_view = memoryview(self.receive_buffer)
        self.quotas = quotas or ConnectionQuotas({lsn.name: ListenerQuota() for lsn in listeners})
        self.connections_max_idle_ms = connections_max_idle_ms  # < 0: never closed for idling
        self.acceptors = [Acceptor(self, listener) for listener in listeners]
        self.connections: set[Processor] = set()
        self.connection_indexes = itertools.count()  # the last part of a connection id
        # called with a connection's id when it ends (Kafka `ConnectionDisconnectListener`)
        self.disconnect_listeners: list[Callable[[str], None]] = []
        self.zero_copy = True  # False: file slices are read and written, as without sendfile
        self._idle_task: asyncio.Task | None = None

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
            logger.info(
                "listening on %s:%d (%s, %s)",
                acceptor.host,
                acceptor.port,
                endpoint.listener,
                endpoint.protocol,
            )
        if self.connections_max_idle_ms >= 0:
            self._idle_task = asyncio.get_running_loop().create_task(self._close_idle())

    async def _close_idle(self) -> None:
        """Close the connections idle for longer than `connections.max.idle.ms` (BROKER-59)."""
        max_idle_s = self.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(max(max_idle_s / 4, 0.01), 1.0))
            for connection in idle_connections(self.connections, time.monotonic(), max_idle_s):
                connection.close(
                    f"idle for more than connections.max.idle.ms ({self.connections_max_idle_ms})"
                )

    async def stop_accepting(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
            self._idle_task = None
        for acceptor in self.acceptors:
            await acceptor.stop()

    async def stop(self) -> None:
        """Stop accepting, then close every connection."""
        await self.stop_accepting()
        for connection in list(self.connections):
            connection.close("broker shutting down")
        await asyncio.sleep(0)
