"""Many real clients at once: the client side of `bench clients` and `bench latency`.

A load is a set of librdkafka clients (confluent-kafka): producers that send at a fixed
total rate, each message stamped with the time it was produced, and consumers in groups
that read them back. Hundreds of librdkafka clients do not fit one Python process well:
each has its own threads (a main thread and one per broker connection), and a Python loop
that serves them all shares one interpreter lock. So the clients are spread over a few
worker processes (`multiprocessing`, spawned), each driving its share in one loop:

* **build**: create every client; each producer sends one warm-up message (so that its
  connection and metadata are in place before the clock starts), then the worker reports
  `built`;
* **subscribe**: on the parent's word, every consumer subscribes to its topic with its
  group id. Each assignment and revocation is reported with the time it happened (the
  rebalance callbacks), so the parent sees when every group is *stable*: every member
  holds a partition, together they hold all of them, and no rebalance follows;
* **go**: from a start time the parent names, the producers send message i at
  `start + i / rate` (round-robin over them; a late loop catches up in a burst, so a
  slow client shows as latency, not as a lower rate), for `seconds`; then the producers
  flush and the consumers drain until nothing has come for `DRAIN_IDLE_SECONDS`;
* **report**: per message, the *produce latency* (librdkafka's own stopwatch, from
  `produce()` to the acknowledgement: `Message.latency()`) and, for every message a
  consumer read, the *end-to-end latency* (its receive time minus the monotonic clock
  reading stamped in the value's first 8 bytes: the clock is the machine's, shared by
  all processes), and the worker's own CPU seconds, RSS and threads: what the client
  machine pays.

The end-to-end figure includes the consumer loop's own delay: a worker serving many
consumers reaches each only once per sweep. `Load` (the parent's side) starts the
workers, drives the phases and gathers the results; every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import resource
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait

STAMP = struct.Struct(">q")  # time.monotonic_ns() at produce(), the value's first 8 bytes
DRAIN_IDLE_SECONDS = 1.0
DRAIN_MAX_SECONDS = 15.0
FLUSH_SECONDS = 30.0
BURST = 1000  # messages an unpaced loop sends between two sweeps
BUILD_SECONDS = 120.0


class LoadError(Exception):
    """A worker failed or a phase ran past its deadline."""


@dataclass(frozen=True)
class Plan:
    """One worker's share of a load."""

    bootstrap: str
    producers: tuple[tuple[str, int], ...] = ()  # (topic, partition) each producer writes
    consumers: tuple[tuple[str, str], ...] = ()  # (topic, group id) of each consumer
    rate: float = 0.0  # messages per second of this worker's producers together
    msg_size: int = 100
    acks: str = "1"
    linger_ms: float = 0.0
    client: tuple[tuple[str, str], ...] = ()
    name: str = "w0"


# --------------------------------------------------------------------------- the worker
def work(plan: Plan, conn) -> None:
    """A worker process's body: build, subscribe, go, report, as the parent says."""
    try:
        _Worker(plan, conn).run()
    except Exception as err:  # the parent reports it; nothing else could
        conn.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        os._exit(0)  # no close(): hundreds of orderly leaves would be the next phase's load


class _Worker:
    def __init__(self, plan: Plan, conn) -> None:
        from confluent_kafka import Consumer, Producer

        self.plan, self.conn = plan, conn
        base = {"bootstrap.servers": plan.bootstrap, "log_level": 0, **dict(plan.client)}
        producing = {"acks": plan.acks, "linger.ms": plan.linger_ms, "enable.idempotence": False}
        self.producers = [Producer(base | producing) for _ in plan.producers]
        consuming = {"auto.offset.reset": "earliest", "fetch.queue.backoff.ms": 10}
        self.consumers = [
            Consumer(base | consuming | {"group.id": group}) for _topic, group in plan.consumers
        ]
        self.produce_ms: list[float] = []
        self.e2e_ms: list[float] = []
        self.errors = self.sent = 0
        self.start = self.flushed = 0.0
        self.since_ns = 1 << 62  # end-to-end latency counts messages stamped from the start

    def run(self) -> None:
        payload = bytes(self.plan.msg_size)
        for producer, (topic, partition) in zip(self.producers, self.plan.producers, strict=True):
            producer.produce(topic, STAMP.pack(0) + payload[STAMP.size :], partition=partition)
        for producer in self.producers:
            if producer.flush(FLUSH_SECONDS):
                raise LoadError(f"a producer of {self.plan.name} got no warm-up acknowledgement")
        self.conn.send(("built", os.getpid()))
        command = self._idle_until_told()
        if command[0] == "subscribe":
            for i, (consumer, (topic, _group)) in enumerate(
                zip(self.consumers, self.plan.consumers, strict=True)
            ):
                consumer.subscribe(
                    [topic], on_assign=self._on_assign(i), on_revoke=self._on_revoke(i)
                )
            self.conn.send(("subscribed", time.monotonic()))
            command = self._idle_until_told()
        if command[0] == "go":
            self._load(start=command[1], seconds=command[2])
            self.conn.send(("done", self._report()))
            self._idle_until_told()

    def _on_assign(self, i: int):
        def on_assign(_consumer, partitions) -> None:
            held = [(p.topic, p.partition) for p in partitions]
            self.conn.send(("assigned", f"{self.plan.name}/{i}", time.monotonic(), held))

        return on_assign

    def _on_revoke(self, i: int):
        def on_revoke(_consumer, _partitions) -> None:
            self.conn.send(("revoked", f"{self.plan.name}/{i}", time.monotonic()))

        return on_revoke

    def _idle_until_told(self) -> tuple:
        """Serve the clients (callbacks, rebalances) until the parent says something."""
        while not self.conn.poll(0):
            if not self._serve():
                time.sleep(0.002)
        return self.conn.recv()

    def _serve(self) -> int:
        """One sweep over every client; returns how many messages the consumers got."""
        for producer in self.producers:
            producer.poll(0)
        got = 0
        for consumer in self.consumers:
            batch = consumer.consume(1000, 0)
            if batch:
                now = time.monotonic_ns()
                got += len(batch)
                for message in batch:
                    if message.error() is not None or len(message.value()) < STAMP.size:
                        continue  # bench cluster's warm-up message carries no stamp
                    stamp = STAMP.unpack_from(message.value())[0]
                    if stamp >= self.since_ns:
                        self.e2e_ms.append((now - stamp) / 1e6)
        return got

    def _on_delivery(self, err, msg) -> None:
        if err is not None:
            self.errors += 1
        else:
            self.produce_ms.append(msg.latency() * 1000)

    def _load(self, start: float, seconds: float) -> None:
        plan, producers = self.plan, self.producers
        payload = bytes(plan.msg_size - STAMP.size)
        unpaced = math.isinf(plan.rate)  # as fast as the client goes: the peak
        total = (1 << 62 if unpaced else int(plan.rate * seconds)) if producers else 0
        end, self.start = start + seconds, start
        self.since_ns = int(start * 1e9)
        while time.monotonic() < start:
            self._serve()
        while self.sent < total and (not unpaced or time.monotonic() < end):
            now = time.monotonic()
            due = self.sent + BURST if unpaced else min(total, int((now - start) * plan.rate) + 1)
            while self.sent < due:
                i = self.sent % len(producers)
                self._produce(producers[i], *plan.producers[i], payload)
                self.sent += 1
            if not self._serve() and not unpaced:
                time.sleep(max(0.0, min(0.001, start + self.sent / plan.rate - time.monotonic())))
        for producer in producers:
            producer.flush(FLUSH_SECONDS)
        self.flushed = time.monotonic()
        idle_since = last = time.monotonic()
        while last - idle_since < DRAIN_IDLE_SECONDS and last - start < seconds + DRAIN_MAX_SECONDS:
            if self._serve():
                idle_since = time.monotonic()
            else:
                time.sleep(0.005)
            last = time.monotonic()

    def _produce(self, producer, topic: str, partition: int, payload: bytes) -> None:
        """Stamp and send one message; a full client queue waits (the wait is latency)."""
        stamped = STAMP.pack(time.monotonic_ns()) + payload
        while True:
            try:
                producer.produce(topic, stamped, partition=partition, on_delivery=self._on_delivery)
                return
            except BufferError:
                producer.poll(0.001)

    def _report(self) -> dict:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        status = {}
        with open("/proc/self/status") as lines:
            for line in lines:
                key, _, rest = line.partition(":")
                status[key] = rest.split()[0] if rest.split() else ""
        return {
            "sent": self.sent,
            "errors": self.errors,
            "produced_s": self.flushed - self.start if self.producers else 0.0,
            "produce_ms": self.produce_ms,
            "e2e_ms": self.e2e_ms,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "rss_MB": int(status.get("VmRSS", 0)) / 1024,
            "threads": int(status.get("Threads", 0)),
        }


# --------------------------------------------------------------------------- the parent
@dataclass
class Outcome:
    """What a load measured, over all workers."""

    first_join: float | None = None  # monotonic time of the first subscribe
    stable_at: float | None = None  # when every group was stable (and stayed so)
    rebalances: int = 0  # revocations seen before stability
    reports: list[dict] = field(default_factory=list)

    @property
    def stable_s(self) -> float | None:
        if self.first_join is None or self.stable_at is None:
            return None
        return round(self.stable_at - self.first_join, 3)

    def took(self, seconds: float) -> float:
        """`seconds`, or until the last producer had flushed if that took longer."""
        return round(max([seconds, *(r["produced_s"] for r in self.reports)]), 2)

    def rate(self, seconds: float) -> float:
        """Acknowledged messages per second over `took(seconds)`: a broker that falls
        behind shows a lower rate."""
        return round(sum(len(r["produce_ms"]) for r in self.reports) / self.took(seconds), 1)

    def merged(self, key: str) -> list[float]:
        return sorted(v for r in self.reports for v in r[key])


class Load:
    """Workers for `plans`, started on entry and stopped on the way out, whatever happens."""

    def __init__(self, plans: list[Plan]) -> None:
        self.plans = plans
        context = multiprocessing.get_context("spawn")
        self.conns, self.processes = [], []
        for plan in plans:
            parent, child = context.Pipe()
            self.conns.append(parent)
            self.processes.append(context.Process(target=work, args=(plan, child), daemon=True))
        self.outcome = Outcome()

    def __enter__(self) -> Load:
        for process in self.processes:
            process.start()
        self._gather("built", BUILD_SECONDS)
        return self

    def __exit__(self, *exc) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(("stop",))
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join(5)

    def _gather(self, kind: str, seconds: float, on_event: Callable | None = None) -> list:
        """Wait for one `kind` message from every worker; other messages go to `on_event`."""
        waiting, answers = set(range(len(self.conns))), [None] * len(self.conns)
        deadline = time.monotonic() + seconds
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LoadError(f"{len(waiting)} of {len(self.conns)} workers sent no {kind!r}")
            for conn in wait([self.conns[i] for i in waiting], min(left, 1.0)):
                i = self.conns.index(conn)
                try:
                    message = conn.recv()
                except EOFError:
                    raise LoadError(f"worker {self.plans[i].name} died") from None
                if message[0] == "error":
                    raise LoadError(f"worker {self.plans[i].name}: {message[1]}")
                if message[0] == kind:
                    answers[i] = message
                    waiting.discard(i)
                elif on_event:
                    on_event(message)
        return answers

    def subscribe(self, groups: dict[str, int], seconds: float, settle: float) -> None:
        """Every consumer subscribes at once; returns when every group of `groups` (group
        id -> partitions of its topic) is stable and has stayed so for `settle` seconds."""
        if not groups:
            return
        held: dict[str, list | None] = {}
        member_group = {
            f"{p.name}/{i}": g for p in self.plans for i, (_t, g) in enumerate(p.consumers)
        }
        members = {g: sum(1 for m in member_group.values() if m == g) for g in groups}
        out = self.outcome

        def on_event(message: tuple) -> None:
            if message[0] == "assigned":
                held[message[1]] = message[3]
            elif message[0] == "revoked":
                held[message[1]] = None
                out.rebalances += 1
            if message[0] in ("assigned", "revoked"):
                stable = all(
                    self._group_stable(g, groups[g], members[g], held, member_group) for g in groups
                )
                out.stable_at = (out.stable_at or message[2]) if stable else None

        for conn in self.conns:
            conn.send(("subscribe",))
        joined = self._gather("subscribed", BUILD_SECONDS, on_event)
        out.first_join = min(m[1] for m in joined)
        deadline = time.monotonic() + seconds
        while out.stable_at is None or time.monotonic() - out.stable_at < settle:
            if time.monotonic() > deadline:
                raise LoadError(f"the groups were not stable after {seconds:g} s")
            for conn in wait(self.conns, 0.1):
                message = conn.recv()
                if message[0] == "error":
                    raise LoadError(message[1])
                on_event(message)

    @staticmethod
    def _group_stable(group, partitions, members, held, member_group) -> bool:
        mine = [held.get(m) for m, g in member_group.items() if g == group]
        if len(mine) != members or any(not h for h in mine):
            return False
        owned = [tp for h in mine for tp in h]
        return len(owned) == len(set(owned)) == partitions

    def go(self, seconds: float, lead: float = 0.5) -> Outcome:
        """Every worker starts producing at the same instant, `lead` seconds from now."""
        start = time.monotonic() + lead
        for conn in self.conns:
            conn.send(("go", start, seconds))
        done = self._gather("done", seconds + FLUSH_SECONDS + DRAIN_MAX_SECONDS + 30)
        self.outcome.reports = [m[1] for m in done]
        return self.outcome
