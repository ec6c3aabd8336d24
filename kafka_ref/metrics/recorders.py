"""The recording side of the broker's metrics: plain counters and histograms, cheap to bump.

Kafka records its metrics with Yammer `Meter`s (a count and decaying rates) and
`Histogram`s/`Timer`s (a count and reservoir percentiles), registered as JMX MBeans. A
Prometheus server computes rates itself from cumulative counts (`rate(x_total[1m])`), so
kafka-ref records only what a rate and a quantile need: a count that only goes up, and a
histogram's bucket counts and sum. The objects here are the counterparts of Kafka's:

* `TopicStats` / `BrokerTopicStats` - Kafka's `BrokerTopicStats`: one set of meters per
  topic and one for all topics (`MessagesInPerSec`, `BytesInPerSec`, `BytesOutPerSec`,
  `TotalProduceRequestsPerSec`, `FailedProduceRequestsPerSec`, and the fetch ones).
  The `ReplicaManager` owns it, as in Kafka, and the produce and fetch paths bump it;
* `LatencyHistogram` - a histogram of milliseconds (Kafka's `Histogram`, and the time half
  of a `Timer` such as `LogFlushRateAndTimeMs` or `LeaderElectionRateAndTimeMs`);
* `RequestMetrics` - Kafka's `RequestMetrics`, per request type: `RequestsPerSec` and the
  time a request spent in each stage (below);
* `LoopIdleMeter` - the network processors' idle fraction, for an asyncio broker.

Everything here runs on the broker's event loop, so a bump is an attribute increment
without a lock; the scrape (kafka_ref/metrics/collector.py) reads it on the same loop.

**A request's stages** (Kafka: `RequestChannel.Request.updateRequestMetrics`). The
`Request` is stamped as it moves: received (the network `Processor` parsed the frame),
dequeued (a handler worker took it from the `RequestChannel`), local done (the handler
returned), completed (its response is ready; later than "local done" only when it waited
in a purgatory), response dequeued (the processor took it to write, after the responses
before it, BROKER-2) and sent. So:

    RequestQueueTimeMs  = dequeued - received         waiting for a handler worker
    LocalTimeMs         = local done - dequeued       the handler's own work
    RemoteTimeMs        = completed - local done      in a purgatory (acks=all, long poll)
    ResponseQueueTimeMs = response dequeued - completed   behind earlier responses
    ResponseSendTimeMs  = sent - response dequeued
    TotalTimeMs         = sent - received

"Sent" is when the bytes are handed to the transport (for file slices: when the last slice
went through `sendfile`); Kafka's ends when its selector reports the send complete, so a
slow client's socket shows there and here shows in the next response's queue time.
"""

from __future__ import annotations

import bisect
import contextlib
import time
from collections.abc import Iterator
from typing import Any

from kafka_ref.protocol.messages import ApiKey

# Histogram bucket bounds in milliseconds: a sub-millisecond local produce up to a 30 s
# long poll or request timeout.
BUCKETS_MS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)
STAGES = (
    "RequestQueueTimeMs",
    "LocalTimeMs",
    "RemoteTimeMs",
    "ResponseQueueTimeMs",
    "ResponseSendTimeMs",
    "TotalTimeMs",
)


class LatencyHistogram:
    """Counts of observations per bucket (the last: above every bound) and their sum."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS_MS) + 1)
        self.sum = 0.0

    def observe(self, ms: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS_MS, ms)] += 1
        self.sum += ms

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        """Observe the wall time the `with` block takes (Kafka's `Timer.time`).

        A cost measured for an operator, never a time the code decides by: the core reads
        its time from a `Clock`, and this is the one reading of the machine's clock it does.
        """
        started = time.monotonic_ns()
        try:
            yield
        finally:
            self.observe((time.monotonic_ns() - started) / 1e6)

    def cumulative(self) -> list[tuple[str, int]]:
        """(upper bound, observations at or below it), as Prometheus buckets are."""
        out, running = [], 0
        for bound, count in zip((*BUCKETS_MS, float("inf")), self.counts, strict=True):
            running += count
            out.append(("+Inf" if bound == float("inf") else str(bound), running))
        return out


class TopicStats:
    """One topic's meters (or all topics'), as cumulative counts."""

    __slots__ = (
        "bytes_in",
        "bytes_out",
        "failed_fetch",
        "failed_produce",
        "messages_in",
        "total_fetch",
        "total_produce",
    )

    def __init__(self) -> None:
        self.messages_in = self.bytes_in = self.bytes_out = 0
        self.total_produce = self.failed_produce = self.total_fetch = self.failed_fetch = 0


class BrokerTopicStats:
    """Per-topic and all-topics meters (Kafka: `BrokerTopicStats`)."""

    def __init__(self) -> None:
        self.all_topics = TopicStats()
        self.topics: dict[str, TopicStats] = {}

    def topic(self, name: str) -> TopicStats:
        stats = self.topics.get(name)
        if stats is None:
            stats = self.topics[name] = TopicStats()
        return stats

    def produced(self, topic: str, records: int, size: int, failed: bool) -> None:
        """One partition's append: counted as a produce request, failed or with its records
        and bytes (Kafka: `ReplicaManager.appendToLocalLog`)."""
        for stats in (self.topic(topic), self.all_topics):
            stats.total_produce += 1
            if failed:
                stats.failed_produce += 1
            else:
                stats.messages_in += records
                stats.bytes_in += size

    def fetched(self, topic: str, failed: bool) -> None:
        """One partition read for a consumer (Kafka: `ReplicaManager.readFromLocalLog`)."""
        for stats in (self.topic(topic), self.all_topics):
            stats.total_fetch += 1
            if failed:
                stats.failed_fetch += 1

    def bytes_sent(self, read: list[tuple[str, Any]]) -> None:
        """A fetch response's record bytes per topic (Kafka: `updateBytesOut`)."""
        for topic, data in read:
            size = data.records.size
            if size:
                self.topic(topic).bytes_out += size
                self.all_topics.bytes_out += size

    def forget(self, topic: str) -> None:
        """A deleted topic's meters go with it (Kafka: `removeMetrics`)."""
        self.topics.pop(topic, None)


def request_name(api_key: int) -> str:
    """Kafka's name of an API as its metrics label it: PRODUCE -> Produce."""
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return str(api_key)


class RequestMetrics:
    """Per request type: how many (by version) and the time in each stage."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], int] = {}  # (request, version) -> count
        self.stages: dict[str, tuple[LatencyHistogram, ...]] = {}
        self._names: dict[int, str] = {}

    def _histograms(self, name: str) -> tuple[LatencyHistogram, ...]:
        found = self.stages.get(name)
        if found is None:
            found = self.stages[name] = tuple(LatencyHistogram() for _ in STAGES)
        return found

    def response_dequeued(self, request: Any) -> None:
        """The processor takes the response to write it: record now, unless file slices
        are still to go (then `response_sent` records when they have)."""
        now = time.monotonic_ns()
        request.response_dequeued_ns = now
        response = request.response
        if response is None or not response.has_slices:
            self._record(request, now)

    def response_sent(self, request: Any) -> None:
        self._record(request, time.monotonic_ns())

    def _record(self, request: Any, sent: int) -> None:
        if request.header is None:
            return  # a bare SASL token: no API, no request type
        key = request.header.request_api_key
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = request_name(key)
        if name == "Fetch":  # Kafka also splits fetches by who sent them
            follower = getattr(request.body, "replica_id", -1) >= 0
            self._count(request, sent, "FetchFollower" if follower else "FetchConsumer")
        self._count(request, sent, name)

    def _count(self, request: Any, sent: int, name: str) -> None:
        counted = (name, request.header.request_api_version)
        self.requests[counted] = self.requests.get(counted, 0) + 1
        received = request.received_ns
        dequeued = request.dequeued_ns or received  # answered on the network side (SASL)
        local = request.local_done_ns or dequeued
        completed = max(request.completed_ns, local)
        taken = request.response_dequeued_ns
        queue, local_ms, remote, response_queue, send, total = self._histograms(name)
        queue.observe((dequeued - received) / 1e6)
        local_ms.observe((local - dequeued) / 1e6)
        remote.observe((completed - local) / 1e6)
        response_queue.observe((taken - completed) / 1e6)
        send.observe((sent - taken) / 1e6)
        total.observe((sent - received) / 1e6)


class LoopIdleMeter:
    """How much of the time the event loop waits for sockets (Kafka:
    `NetworkProcessorAvgIdlePercent`, a fraction between 0 and 1).

    A Kafka network thread is idle while it blocks in `Selector.poll`. kafka-ref's network
    processors are the event loop, which also runs the handlers, so the loop's time blocked
    in its selector's `select` is the idle time of the network and handler side together.
    The meter wraps the selector's `select` (the default loop's `_selector`); a loop without
    one (another event loop implementation) reports no value.
    """

    def __init__(self) -> None:
        self.idle_ns = 0
        self._since = time.monotonic_ns()
        self._idle_at_since = 0
        self.installed = False

    def install(self, loop: Any) -> None:
        selector = getattr(loop, "_selector", None)
        if selector is None:
            return
        select = selector.select

        def timed_select(timeout: float | None = None) -> Any:
            start = time.monotonic_ns()
            try:
                return select(timeout)
            finally:
                self.idle_ns += time.monotonic_ns() - start

        selector.select = timed_select
        self.installed = True

    def idle_fraction(self) -> float | None:
        """The idle fraction since the previous call (a scrape), or None if not installed."""
        if not self.installed:
            return None
        now, idle = time.monotonic_ns(), self.idle_ns
        elapsed = now - self._since
        fraction = (idle - self._idle_at_since) / elapsed if elapsed > 0 else 1.0
        self._since, self._idle_at_since = now, idle
        return min(max(fraction, 0.0), 1.0)
