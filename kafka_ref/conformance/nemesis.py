"""The nemesis: the part of a Jepsen test that breaks the cluster while the workload runs.

Jepsen's nemesis is a process like the clients, with a schedule of operations of its own:
*start* a fault (kill a node, pause it, cut the network), wait, *stop* it (restart, resume,
heal). The faults it knows for Kafka-like systems (Jepsen's Redpanda and Bufstream
analyses): `kill` (kill -9, then restart), `pause` (SIGSTOP, then SIGCONT: alive but
silent, as in a long GC pause or a frozen VM) and `partition` (nodes cannot reach each
other). This one adds `term` (SIGTERM, a clean shutdown, then restart) and splits
partitions in two, because a Kafka broker has two kinds of peers:

    kill              SIGKILL, restart after 2-10 s
    term              SIGTERM (controlled shutdown), restart after 2-10 s
    pause             SIGSTOP for 2-15 s, then SIGCONT
    partition-zk      the broker cannot reach ZooKeeper for 2-15 s
    partition-peers   the broker and the other brokers cannot reach each other for 2-15 s

On a KRaft cluster (combined nodes) ZooKeeper is gone and a node's second kind of peer is
the controller quorum:

    partition-controller  the node's controller and the other controllers cannot reach
                          each other (nor its broker the active controller) for 2-15 s:
                          the active controller isolated, when it is the one chosen

One fault at a time, one every 3-8 s (the pause between the end of one and the start of
the next). The target is chosen at random with the controller and the partition leaders
preferred, since losing them is what makes the cluster move: three times in four from
[controller, leader of each partition], else any broker.

Everything random comes from two generators seeded with the seed: one draws the schedule
(each pause, kind and duration), the other the targets, so a seed fixes the schedule
exactly; which broker is controller or leader when a fault starts is the cluster's doing,
so two runs of one seed may hit different brokers. Every fault is logged
with its times (seconds since the campaign started): when it started, when it was healed,
and, filled in later by the liveness check, when the cluster was whole again and when the
next write was acknowledged.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

KINDS = ("kill", "term", "pause", "partition-zk", "partition-peers")
KRAFT_KINDS = ("kill", "term", "pause", "partition-controller", "partition-peers")
INTERVAL_S = (3.0, 8.0)  # between faults
DOWN_S = {
    "kill": (2.0, 10.0),
    "term": (2.0, 10.0),
    "pause": (2.0, 15.0),
    "partition-zk": (2.0, 15.0),
    "partition-peers": (2.0, 15.0),
    "partition-controller": (2.0, 15.0),
}
PREFERRED = 0.75  # how often the target is the controller or a leader


class Target(Protocol):
    """What the nemesis can do to a cluster (kafka_ref.conformance.campaign.ChaosCluster)."""

    def broker_ids(self) -> list[int]: ...
    def controller(self) -> int | None: ...
    def leaders(self) -> list[int]: ...
    def start_fault(self, kind: str, broker: int) -> str: ...
    def stop_fault(self, kind: str, broker: int) -> str: ...


@dataclasses.dataclass
class Fault:
    n: int
    kind: str
    broker: int
    planned_s: float  # how long the fault was to last
    started: float  # seconds since the campaign started
    healed: float | None = None  # when the restart / SIGCONT / heal was done
    whole: float | None = None  # first moment after `healed` the cluster was whole
    next_ack: float | None = None  # first acknowledgement after `whole`
    note: str = ""
    was_controller: bool = False  # the broker (node) it struck was the active controller
    failover: float | None = None  # then: seconds until another one was named controller

    @property
    def window(self) -> float | None:
        """Seconds from whole-again to the next acknowledgement (the liveness window)."""
        if self.whole is None or self.next_ack is None:
            return None
        return self.next_ack - self.whole


def restart(process: Any, attempts: int = 3, timeout: float = 90.0) -> str:
    """Heal a kill or a stop: start the process again (a few times: a port just released may
    still be taken), and say how long it took, or why it failed."""
    started = time.monotonic()
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            process.start(timeout=timeout)
            again = f" (attempt {attempt})" if attempt > 1 else ""
            return f"restarted in {time.monotonic() - started:.1f}s{again}"
        except RuntimeError as err:
            last = str(err).splitlines()[0]
    return f"restart FAILED: {last}"


class Nemesis:
    """Runs faults on `target` until `stop` is set, `faults` have run, or `deadline` passes."""

    def __init__(
        self,
        target: Target,
        seed: int,
        kinds: tuple[str, ...] = KINDS,
        now: Callable[[], float] | None = None,
        say: Callable[[str], None] = lambda _line: None,
    ) -> None:
        unknown = set(kinds) - set(DOWN_S)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {', '.join(DOWN_S)}")
        self.target, self.kinds = target, tuple(kinds)
        self.rng, self.target_rng = random.Random(seed), random.Random(f"{seed}/targets")
        t0 = time.monotonic()
        self.now = now or (lambda: time.monotonic() - t0)  # seconds since the campaign began
        self.log: list[Fault] = []
        self.say = say  # one line per fault, as it heals
        self.active: Fault | None = None  # the fault under way, from its start to its heal
        self.stop = threading.Event()

    def choose_target(self) -> int:
        brokers = self.target.broker_ids()
        preferred = [self.target.controller(), *self.target.leaders()]
        preferred = [b for b in preferred if b in brokers]
        if preferred and self.target_rng.random() < PREFERRED:
            return self.target_rng.choice(preferred)
        return self.target_rng.choice(brokers)

    def run(self, faults: int | None = None, deadline: float | None = None) -> list[Fault]:
        """The schedule: pause, fault, wait, heal; again. A fault under way is always healed."""
        while not self.stop.is_set():
            if faults is not None and len(self.log) >= faults:
                break
            if self.stop.wait(self.rng.uniform(*INTERVAL_S)):
                break
            if deadline is not None and self.now() >= deadline:
                break
            kind = self.rng.choice(self.kinds)
            low, high = DOWN_S[kind]
            planned = self.rng.uniform(low, high)
            broker = self.choose_target()
            controller = self.target.controller()
            fault = Fault(len(self.log) + 1, kind, broker, round(planned, 2), self.now())
            fault.was_controller = controller == broker
            self.log.append(fault)
            self.active = fault
            fault.note = self.target.start_fault(kind, broker)
            self.stop.wait(planned)  # a stop request cuts the fault short, never skips the heal
            note = self.target.stop_fault(kind, broker)
            fault.healed = self.now()
            self.active = None
            fault.note = "; ".join(n for n in (fault.note, note) if n)
            self.say(
                f"fault {fault.n}: {kind} broker {broker} at {fault.started:.1f}s, "
                f"healed at {fault.healed:.1f}s {fault.note}".rstrip()
            )
        return self.log
