"""The bench's producers: one in the bench's own process, or several processes at once.

A bench measures the broker only while the broker is the bottleneck. One Python process
driving confluent-kafka costs about 2-3 µs per `produce()` call (the Python loop and the
C call into librdkafka), so with small messages one producer process caps *any* broker at
a few hundred thousand messages per second, and two brokers capped alike show a ratio
near 1 that says nothing about either. `--producers N` (TOOLS-5) runs the produce phase
in N processes instead, each with its own librdkafka producer, each sending its share of
`--messages` round-robin over the partitions (each starting at another partition). The
processes connect and fetch metadata first, then wait at a barrier, so the clock starts
when all of them are ready and stops when the last one's `flush()` returns.

Each measurement also reports `client_cpu_s`, the CPU time of the producer processes
(all their threads, librdkafka's included) during the phase. Next to `broker_cpu_s` it
shows who used the machine's cores: when the client's CPU per second of the phase stays
well under one core per producer process, more processes do not add throughput, and the
broker (or the cores the two share) is the bound.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

THROUGHPUT_LINGER_MS = 5  # librdkafka's default, written down so results are reproducible
FLUSH_GRACE_SECONDS = 30.0  # after the deadline, how long delivery reports may still come
READY_SECONDS = 60.0  # how long the producer processes may take to start and connect


@dataclass
class Produced:
    """What one producer (or all of them together) did in a produce phase."""

    sent: int = 0
    failed: int = 0  # delivery reports with an error
    left: int = 0  # still queued at the end: never delivered
    seconds: float = 0.0
    cpu_s: float = 0.0  # the producer process's CPU time in the phase

    @property
    def delivered(self) -> int:
        return max(0, self.sent - self.failed - self.left)


def producer_config(base: dict, acks: str) -> dict:
    """The throughput producer: librdkafka's default batching, reports only for failures."""
    return {
        **base,
        "acks": acks,
        "linger.ms": THROUGHPUT_LINGER_MS,
        "enable.idempotence": False,
        "delivery.report.only.error": True,
    }


def connected_producer(config: dict, topics: set[str]):
    """A producer that has connected and fetched the metadata of `topics`, so a measurement
    does not time the connection; with the `Produced` its failure reports count into."""
    from confluent_kafka import Producer

    done = Produced()

    def on_error(err, _msg) -> None:
        done.failed += 1

    producer = Producer({**config, "on_delivery": on_error})
    (only,) = topics if len(topics) == 1 else (None,)  # many topics: one request for all
    producer.list_topics(only, timeout=10)
    return producer, done


def produce_flat_out(
    config: dict,
    destinations: list[tuple[str, int]],
    size: int,
    messages: int,
    seconds: float,
    tick: Callable[[int], None] = lambda n: None,
    ready: Callable[[], None] = lambda: None,
) -> Produced:
    """Produce `messages` values of `size` bytes round-robin over `destinations` as fast as
    librdkafka takes them, for at most `seconds`; then flush. `ready` is called once the
    producer is connected; the clock starts after it and stops at the end of the flush."""
    producer, done = connected_producer(config, {name for name, _ in destinations})
    ready()
    payload = os.urandom(size)
    count, produce, poll = len(destinations), producer.produce, producer.poll
    sent = 0
    start = time.perf_counter()
    deadline = start + seconds
    cpu = time.process_time()
    while sent < messages:
        try:
            name, partition = destinations[sent % count]
            produce(name, payload, partition=partition)
        except BufferError:  # the client's queue is full: let it drain
            poll(0.005)
            if time.perf_counter() > deadline:
                break
            continue
        sent += 1
        if sent & 1023 == 0:
            poll(0)
            tick(1024)
            if time.perf_counter() > deadline:
                break
    left = producer.flush(max(1.0, deadline + FLUSH_GRACE_SECONDS - time.perf_counter()))
    done.seconds = time.perf_counter() - start
    done.cpu_s = time.process_time() - cpu
    if left:  # never delivered: drop them so nothing lingers past this measurement
        producer.purge()
        left = producer.flush(1.0)
    tick(sent & 1023)
    done.sent, done.left = sent, left
    return done


def produce_in_processes(
    config: dict,
    destinations: list[tuple[str, int]],
    size: int,
    messages: int,
    seconds: float,
    producers: int,
    tick: Callable[[int], None],
) -> Produced:
    """`produce_flat_out` in `producers` processes at once, started together; the sum of
    what they did, timed from the common start to the last process's end. TimeoutError
    when a process does not start or does not report back."""
    ctx = multiprocessing.get_context("spawn")  # no fork of a process with librdkafka threads
    barrier = ctx.Barrier(producers + 1)
    results = ctx.Queue()
    shares = [messages // producers + (i < messages % producers) for i in range(producers)]
    procs = []
    for i, share in enumerate(shares):
        rotated = destinations[i:] + destinations[:i]  # each starts at another partition
        args = (config, rotated, size, share, seconds, barrier, results)
        procs.append(ctx.Process(target=_producer_process, args=args, daemon=True))
    for proc in procs:
        proc.start()
    try:
        try:
            barrier.wait(READY_SECONDS)
        except Exception:
            raise TimeoutError(f"{producers} producer processes did not start in time") from None
        start = time.perf_counter()  # CLOCK_MONOTONIC: the same clock in every process
        total, last_end = Produced(), start
        for _ in procs:
            try:
                done, ended = results.get(timeout=seconds + FLUSH_GRACE_SECONDS + 30)
            except Exception:
                raise TimeoutError("a producer process did not report back") from None
            total.sent += done.sent
            total.failed += done.failed
            total.left += done.left
            total.cpu_s += done.cpu_s
            last_end = max(last_end, ended)
            tick(done.sent)
        total.seconds = last_end - start
        return total
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join(5)


def _producer_process(config, destinations, size, messages, seconds, barrier, results) -> None:
    """One producer process: connect, wait for the others, produce, report."""
    ready = lambda: barrier.wait(READY_SECONDS)  # noqa: E731
    done = produce_flat_out(config, destinations, size, messages, seconds, ready=ready)
    results.put((done, time.perf_counter()))
