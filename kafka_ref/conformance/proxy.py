"""A network partition on loopback: TCP proxies that the nemesis can cut, link by link.

Jepsen partitions a cluster with iptables rules that drop packets between chosen nodes.
On one machine every broker is 127.0.0.1, so the fault campaign puts a small TCP proxy in
front of each server instead, and makes every connection that should be cuttable go
through one:

* broker i listens on its own port but *advertises* its proxy's port
  (`advertised.listeners`), so clients and the other brokers (which learn addresses from
  ZooKeeper's /brokers/ids) reach it only through the proxy;
* broker i reaches ZooKeeper through a proxy of its own (its `zookeeper.connect`).

A proxy tells who is calling by the caller's *process*: on accept it looks the peer's port
up in /proc/net/tcp (which socket inode it is) and then in the /proc/<pid>/fd of each broker
(which process holds that socket). So one proxy can cut the link from broker 2 to broker 1
while clients and broker 3 still get through: a partition between brokers, not between
clients and brokers, as in Jepsen's Redpanda and Kafka tests.

What a cut does is what a partition does to TCP: nothing crosses. Bytes already sent stay
in the kernel's buffers (the proxy stops reading, flow control backs up), a new connection
from a cut source is accepted but not forwarded, and when the link heals the bytes flow on
(TCP retransmits across a short partition). Only the endpoints' own timeouts (a request
timeout, ZooKeeper's session timeout) close a connection, exactly as they would on a real
network.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Hashable

ANY = "*"  # cut(ANY): every source (used for a broker's own ZooKeeper proxy)


def socket_owner(peer_port: int, server_port: int, pids: dict[int, Hashable]) -> Hashable:
    """Which of `pids` (pid -> name) holds the loopback socket 127.0.0.1:peer_port that is
    connected to `server_port`; None for any other process (a client)."""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
                if int(local, 16) == peer_port and int(remote, 16) == server_port:
                    inode = fields[9]
                    break
        if inode:
            break
    if not inode:
        return None
    wanted = f"socket:[{inode}]"
    for pid, name in pids.items():
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                        return name
    return None


class Proxy:
    """127.0.0.1:`port` forwards to 127.0.0.1:`upstream`; `cut(sources)` stops the traffic of
    connections from those sources (names `identify` gives, or ANY) until `heal(sources)`."""

    def __init__(
        self, upstream: int, identify: Callable[[int, int], Hashable] | None = None
    ) -> None:
        self.upstream = upstream
        self.identify = identify or (lambda _peer, _port: None)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._cut: set[Hashable] = set()
        self._open = threading.Condition()
        self._closed = False
        self._sockets: set[socket.socket] = set()
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()

    # ------------------------------------------------------------------ the nemesis' side
    def cut(self, sources: set[Hashable]) -> None:
        with self._open:
            self._cut |= set(sources)

    def heal(self, sources: set[Hashable] | None = None) -> None:
        with self._open:
            self._cut -= self._cut if sources is None else set(sources)
            self._open.notify_all()

    def close(self) -> None:
        self._closed = True
        self.heal()
        self._listener.close()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.close()

    # ------------------------------------------------------------------ forwarding
    def _blocked(self, source: Hashable) -> bool:
        return ANY in self._cut or (source is not None and source in self._cut)

    def _wait_open(self, source: Hashable) -> None:
        with self._open:
            while self._blocked(source) and not self._closed:
                self._open.wait(0.5)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, (_host, peer_port) = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client, peer_port), daemon=True).start()

    def _connect(self, client: socket.socket, peer_port: int) -> None:
        self._sockets.add(client)
        source = self.identify(peer_port, self.port)
        self._wait_open(source)  # a SYN across a partition: no answer until it heals
        try:
            server = socket.create_connection(("127.0.0.1", self.upstream), timeout=10)
        except OSError:
            self._drop(client)
            return
        server.settimeout(None)
        self._sockets.add(server)
        for src, dst in ((client, server), (server, client)):
            threading.Thread(target=self._pump, args=(src, dst, source), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, source: Hashable) -> None:
        try:
            while True:
                self._wait_open(source)
                data = src.recv(65536)
                if not data:
                    break
                self._wait_open(source)
                dst.sendall(data)
        except OSError:
            pass
        self._drop(src, dst)

    def _drop(self, *socks: socket.socket) -> None:
        for sock in socks:
            self._sockets.discard(sock)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
