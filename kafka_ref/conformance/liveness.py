"""Liveness: after a fault heals, how long until the cluster takes writes again?

Safety (nothing acknowledged is lost, duplicated or reordered) is judged on the history
afterwards. Liveness needs times: a cluster that stops acknowledging for good is safe and
useless. Jepsen reports liveness bugs as "stuck producers" (Bufstream 0.1.0) or
unavailability that outlasts a fault (Redpanda 21.10.1). A fair measure must not blame the
cluster for the fault itself: while a leader is paused, its partitions cannot take writes
until ZooKeeper notices, and with min.insync.replicas=2 no write is acknowledged while
only one replica is in sync. So the clock starts when the cluster is *whole* again:

    whole  =  every partition of the topic has a leader that is registered in
              /brokers/ids (alive, as ZooKeeper sees it) and an ISR of at least
              min.insync.replicas brokers

read straight from ZooKeeper's znodes every 200 ms (`WholeSampler`). For each fault:

    window = (first acknowledgement after `whole`) - (first moment after the heal
             at which the cluster is whole)

One more reading comes from the same znodes: a *dead ISR member*, a broker that an ISR names
but that is not registered in /brokers/ids. Kafka's controller removes a broker from every
ISR as soon as its registration goes (`KafkaController.onReplicasBecomeOffline`); until
then acks=all waits for it. `stale_isr` reports the longest such stretches.

A correct cluster answers within a few producer retries; kafka-ref's campaign fails a
window over 30 s. Independently of the faults, `gaps` lists the longest stretches with no
acknowledgement at all (unavailability windows), and for each the longest part of it during
which the cluster was whole *and* no fault was under way (a killed broker stays registered
until its session times out, so ZooKeeper alone would call it whole): an outage while
nothing is wrong is the liveness bug to look at.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import threading
import time
from collections.abc import Callable

from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.conformance.nemesis import Fault

SAMPLE_S = 0.2


def dead_in_isr(zk: KafkaZkClient, topic: str, partitions: int) -> frozenset[tuple[int, int]]:
    """(partition, broker) for every ISR member that is not registered in /brokers/ids."""
    live = set(zk.get_broker_ids())
    found = (zk.get_partition_state(topic, p) for p in range(partitions))
    return frozenset((s[0].partition, b) for s in found if s for b in s[0].isr if b not in live)


def is_whole(zk: KafkaZkClient, topic: str, partitions: int, min_isr: int) -> bool:
    live = set(zk.get_broker_ids())
    for p in range(partitions):
        found = zk.get_partition_state(topic, p)
        if found is None:
            return False
        state = found[0]
        if state.leader not in live or len(state.isr) < min_isr:
            return False
    return True


class WholeSampler:
    """A thread that records (time, whole?, no fault under way?) every 200 ms."""

    def __init__(
        self,
        whole: Callable[[], bool],
        quiet: Callable[[], bool],
        now: Callable[[], float],
        dead: Callable[[], frozenset] = frozenset,
    ) -> None:
        self.whole, self.quiet, self.now, self.dead = whole, quiet, now, dead
        self.samples: list[tuple[float, bool, bool]] = []
        self.dead_samples: list[tuple[float, frozenset]] = []  # (time, dead ISR members)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="whole-sampler", daemon=True)

    def start(self) -> WholeSampler:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        while not self.stop.is_set():
            t, quiet = self.now(), self.quiet()
            try:
                whole = self.whole()
            except Exception:  # ZooKeeper itself unreachable: not whole as far as we know
                whole = False
            self.samples.append((t, whole, quiet and self.quiet()))
            with contextlib.suppress(Exception):
                self.dead_samples.append((t, self.dead()))
            self.stop.wait(SAMPLE_S)

    def whole_since(self, t: float) -> float | None:
        """The first sampled moment at or after `t` at which the cluster was whole."""
        for when, whole, _quiet in self.samples[bisect.bisect_left(self.samples, (t,)) :]:
            if whole:
                return when
        return None


class ControllerSampler:
    """A thread that records (time, the controller's id or None) every 200 ms: how long
    the cluster took to name a new controller after its controller was struck."""

    def __init__(self, controller: Callable[[], int | None], now: Callable[[], float]) -> None:
        self.controller, self.now = controller, now
        self.samples: list[tuple[float, int | None]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="controller-sampler", daemon=True)

    def start(self) -> ControllerSampler:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        while not self.stop.is_set():
            t = self.now()
            try:
                found = self.controller()
            except Exception:  # no one answers: no controller as far as we know
                found = None
            self.samples.append((t, found))
            self.stop.wait(SAMPLE_S)

    def failover(self, fault: Fault) -> float | None:
        """Seconds from the fault's start to the first sample naming another controller."""
        start = bisect.bisect_left(self.samples, (fault.started,))
        for when, found in self.samples[start:]:
            if found is not None and found != fault.broker:
                return when - fault.started
        return None


def measure(faults: list[Fault], sampler: WholeSampler, acks: list[float]) -> None:
    """Fill in each fault's `whole` and `next_ack` (acks: sorted acknowledgement times)."""
    for fault in faults:
        if fault.healed is None:
            continue
        fault.whole = sampler.whole_since(fault.healed)
        if fault.whole is not None:
            i = bisect.bisect_left(acks, fault.whole)
            fault.next_ack = acks[i] if i < len(acks) else None


def gaps(
    acks: list[float],
    samples: list[tuple[float, bool, bool]],
    start: float,
    end: float,
    at_least: float = 1.0,
) -> list[dict]:
    """Stretches of `at_least` seconds or more with no acknowledgement (from `start`, the
    first send, to `end`), longest first, each with its longest whole and quiet part."""
    found = []
    edges = [start, *acks, end]
    for a, b in itertools.pairwise(edges):
        if b - a < at_least:
            continue
        lo, hi = bisect.bisect_left(samples, (a,)), bisect.bisect_right(samples, (b, True, True))
        inside = [(t, w and q) for t, w, q in samples[lo:hi]]
        longest = run = 0.0
        for (t1, w1), (t2, _w2) in itertools.pairwise(inside):
            run = run + (t2 - t1) if w1 else 0.0
            longest = max(longest, run)
        found.append(
            {
                "from": round(a, 2),
                "to": round(b, 2),
                "seconds": round(b - a, 2),
                "whole_seconds": round(longest, 2),
            }
        )
    return sorted(found, key=lambda g: -g["seconds"])


def stale_isr(dead_samples: list[tuple[float, frozenset]], top: int = 5) -> list[dict]:
    """The longest stretches during which an ISR named a broker not registered (dead)."""
    since: dict[tuple[int, int], float] = {}
    found = []
    for t, dead in [*dead_samples, (float("inf"), frozenset())]:
        for member in set(since) - dead:
            start = since.pop(member)
            end = t if t != float("inf") else dead_samples[-1][0]
            found.append(
                {
                    "partition": member[0],
                    "broker": member[1],
                    "from": round(start, 2),
                    "seconds": round(end - start, 2),
                }
            )
        for member in dead:
            since.setdefault(member, t)
    return sorted(found, key=lambda x: -x["seconds"])[:top]


def wait_whole(whole: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if whole():
                return True
        except Exception:
            pass
        time.sleep(SAMPLE_S)
    return False
