"""The simulated network between the nodes of an in-process cluster.

A message is a Python value handed to `send(src, dst, message)`. It arrives after a delay
drawn from the cluster's seeded random generator, on the simulated clock, unless the link
is cut (a network partition), the message is dropped (`drop_rate`), or the destination
crashed or restarted before it arrived (a message belongs to one incarnation of a node:
a restarted broker never sees the requests sent to the process that died). Messages on one
link arrive in the order they were sent, like on a TCP connection, unless the network is
told to reorder them (`fifo=False`); with `duplicate_rate` a message may also arrive twice.
The Raft simulation uses both, as a quorum must survive them (Kafka's Raft runs over
connections that reconnect, and a retried request may overtake or repeat an earlier one).

Everything is driven by a `ManualScheduler`, so the same seed gives the same delays, drops
and delivery order: a simulation replays exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.config import LogConfig

Node = Hashable


class SimWorld(Protocol):
    """What a simulated broker and the controller use of the cluster around them: its clock,
    scheduler and network, its settings, where the brokers keep their data, and its history.
    cluster.py's `SimCluster` is the one implementation; naming it here keeps the modules a
    cluster is made of from importing the cluster."""

    clock: ManualClock
    scheduler: ManualScheduler
    network: SimNetwork
    config: Any  # cluster.py's SimConfig: timeouts and the truncation rule
    log_config: LogConfig
    data_dir: str

    def record(self, what: str, *args: Any) -> None: ...

    def replicas_of(self, broker_id: int) -> list[tuple[str, int]]: ...


class SimNetwork:
    """Delay, loss and partitions between named nodes."""

    def __init__(
        self,
        scheduler: ManualScheduler,
        rng: random.Random,
        *,
        min_delay_ms: int = 1,
        max_delay_ms: int = 5,
        drop_rate: float = 0.0,
        duplicate_rate: float = 0.0,
        fifo: bool = True,
    ) -> None:
        self.scheduler = scheduler
        self.rng = rng
        self.min_delay_ms, self.max_delay_ms = min_delay_ms, max_delay_ms
        self.drop_rate = drop_rate
        self.duplicate_rate = duplicate_rate
        self.fifo = fifo
        self._cut: set[frozenset] = set()
        self._last_arrival: dict[tuple[Node, Node], int] = {}
        self._handlers: dict[Node, Callable[[Node, Any], None]] = {}
        self._incarnation: dict[Node, int] = {}
        self.sent = self.dropped = 0

    # ------------------------------------------------------------------ nodes
    def attach(self, node: Node, handler: Callable[[Node, Any], None]) -> None:
        """`node` is up (again): it receives messages sent from now on."""
        self._handlers[node] = handler
        self._incarnation[node] = self._incarnation.get(node, 0) + 1

    def detach(self, node: Node) -> None:
        """`node` is down: what is in flight to it is lost."""
        self._handlers.pop(node, None)
        self._incarnation[node] = self._incarnation.get(node, 0) + 1

    # ------------------------------------------------------------------ faults
    def cut(self, a: Node, b: Node) -> None:
        """Partition the link between `a` and `b` (both directions)."""
        self._cut.add(frozenset((a, b)))

    def heal(self, a: Node | None = None, b: Node | None = None) -> None:
        """Restore one link, or every link."""
        if a is None:
            self._cut.clear()
        else:
            self._cut.discard(frozenset((a, b)))

    def is_cut(self, a: Node, b: Node) -> bool:
        return frozenset((a, b)) in self._cut

    # ------------------------------------------------------------------ sending
    def send(self, src: Node, dst: Node, message: Any, *, reliable: bool = False) -> None:
        """Send `message`; `reliable` links (to the controller) are never cut or dropped."""
        self.sent += 1
        if not reliable and (self.is_cut(src, dst) or self.rng.random() < self.drop_rate):
            self.dropped += 1
            return
        self._deliver_later(src, dst, message, reliable)
        if self.duplicate_rate and not reliable and self.rng.random() < self.duplicate_rate:
            self._deliver_later(src, dst, message, reliable)  # the same message, again

    def _deliver_later(self, src: Node, dst: Node, message: Any, reliable: bool) -> None:
        now = self.scheduler.clock.milliseconds()
        arrival = now + self.rng.randint(self.min_delay_ms, self.max_delay_ms)
        if self.fifo:
            arrival = max(arrival, self._last_arrival.get((src, dst), 0))  # FIFO per link
            self._last_arrival[(src, dst)] = arrival
        incarnation = self._incarnation.get(dst, 0)

        def deliver() -> None:
            if self._incarnation.get(dst, 0) != incarnation or dst not in self._handlers:
                self.dropped += 1
                return
            if not reliable and self.is_cut(src, dst):  # cut while in flight
                self.dropped += 1
                return
            self._handlers[dst](src, message)

        self.scheduler.schedule((arrival - now) / 1000, deliver)
