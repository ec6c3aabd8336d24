"""`kafka-ref bench broker`: a broker measured from the outside, by a real client.

The client is confluent-kafka (librdkafka), the one most Kafka users' programs sit on, so
the figures say what an application would see. For every combination of message size,
`acks` and partition count (a *case*) the bench creates a fresh topic through the admin
client and measures three things (TOOLS-5):

* **produce**: messages per second and MB/s of values, from the first `produce()` to the
  last acknowledgement (`flush()`), for up to `--messages` messages or `--seconds`
  seconds. Keyless messages are spread round-robin over the partitions; `linger.ms=5`
  and the other producer settings are librdkafka's defaults, except that delivery
  reports come only for failures (a Python callback per message would make the client
  the bottleneck sooner).
* **consume**: a consumer assigned to every partition at offset 0 reads back what was
  delivered, from `assign()` to the last message, bounded by `--seconds` too, with
  `fetch.queue.backoff.ms=10` (librdkafka's default 1000 ms pause when its local queue
  is full would charge a fast broker whole idle seconds).
* **produce latency**: at a fixed, moderate rate (`--latency-rate`, default 1000 msg/s
  for `--latency-seconds`), the time from each `produce()` to its delivery report, with
  `linger.ms=0`: p50, p99 and max in milliseconds. This is the broker's round trip, not
  the client's queueing under saturation.

MB/s counts value bytes, with MB = 2**20 (as Kafka's `kafka-producer-perf-test` does).
Every measurement is one dict with the same keys (`FIELDS`); `--json` prints each as one
JSON line, else a table follows the progress bar. Results from different brokers line up
because the keys do; `kafka-ref bench compare` (kafka_ref/tools/bench_compare.py) relies on
that to print kafka-ref's ratios to Apache Kafka and Tansu. Every loop is bounded by a
count and a deadline.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kafka_ref.tools.bench_producers import (
    FLUSH_GRACE_SECONDS,
    THROUGHPUT_LINGER_MS,  # noqa: F401 (bench_txn uses it as bb.THROUGHPUT_LINGER_MS)
    produce_flat_out,
    produce_in_processes,
    producer_config,
)
from kafka_ref.tools.bench_report import Progress, Tick

MB = 1024 * 1024
FIELDS = (
    "what",
    "broker",
    "client",
    "msg_size",
    "acks",
    "partitions",
    "run",
    "messages",
    "errors",
    "seconds",
    "msgs/s",
    "MB/s",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "broker_cpu_s",
    "broker_wait_s",
    "client_cpu_s",
)
CONSUMER_QUEUE_BACKOFF_MS = 10
TOPIC_READY_SECONDS = 15.0
PHASES = ("produce", "consume", "latency")


class BenchError(Exception):
    """The bench cannot go on (broker unreachable, topic not created): one line, exit 1."""


class BenchUsage(ValueError):
    """A bad option value (the CLI turns it into one line and exit code 2)."""


def int_list(text: str, name: str) -> tuple[int, ...]:
    """A comma-separated option value of positive integers (`--sizes 10,100`)."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise BenchUsage(f"--{name} {text!r}: expected comma-separated integers") from None
    if not values or min(values) < 1:
        raise BenchUsage(f"--{name} {text!r}: expected positive integers")
    return values


@dataclass(frozen=True)
class Case:
    size: int
    acks: str  # "0", "1" or "all"
    partitions: int


@dataclass(frozen=True)
class Target:
    label: str
    bootstrap: str
    pid: int | None = None  # a local broker's process: its CPU time is measured too
    replication_factor: int = 1  # of the bench topics (`bench cluster`: 3)
    client: tuple[tuple[str, str], ...] = ()  # security settings (--command-config)

    def config(self) -> dict:
        """What every client of this target starts from: where, and how to connect."""
        return {"bootstrap.servers": self.bootstrap, **dict(self.client)}


@dataclass(frozen=True)
class Settings:
    messages: int
    seconds: float
    sizes: tuple[int, ...]
    acks: tuple[str, ...]
    partitions: tuple[int, ...]
    latency_rate: float
    latency_seconds: float
    keep_topics: bool
    repeat: int = 1
    producers: int = 1  # processes in the produce phase (kafka_ref/tools/bench_producers.py)
    phases: tuple[str, ...] = PHASES  # which of produce, consume, latency to measure

    def measured_phases(self) -> tuple[str, ...]:
        """The phases each case runs (latency only with a positive `latency_seconds`)."""
        return tuple(p for p in self.phases if p != "latency" or self.latency_seconds > 0)

    def cases(self) -> list[Case]:
        return [Case(s, a, p) for s in self.sizes for a in self.acks for p in self.partitions]


# --------------------------------------------------------------------------- measurements
def client_name() -> str:
    import confluent_kafka

    librdkafka = confluent_kafka.libversion()[0]
    return f"confluent-kafka {confluent_kafka.__version__} (librdkafka {librdkafka})"


def result(what: str, target: Target, case: Case, **values) -> dict:
    row = dict.fromkeys(FIELDS)
    row.update(what=what, broker=target.label, client=client_name(), msg_size=case.size)
    row.update(acks=case.acks, partitions=case.partitions, **values)
    seconds, messages = row["seconds"], row["messages"]
    if seconds and row["msgs/s"] is None:
        row["msgs/s"] = round(messages / seconds, 1)
        row["MB/s"] = round(messages * case.size / MB / seconds, 3)
    row["seconds"] = round(seconds, 3)
    return row


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    index = min(len(sorted_values) - 1, max(0, int(fraction * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


def admin_config(target: Target) -> dict:
    # log_level 4: librdkafka's info line about unserved background events at exit is noise
    return target.config() | {"log_level": 4}


def check_reachable(target: Target) -> None:
    """Fail fast, in one line, if the broker is not there (librdkafka would retry quietly)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    host, _, port = target.bootstrap.split(",")[0].rpartition(":")
    try:
        socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=5).close()
    except (OSError, ValueError) as err:
        raise BenchError(f"cannot reach the broker at {target.bootstrap}: {err}") from None
    admin = AdminClient(admin_config(target) | {"log_level": 0})
    try:
        admin.list_topics(timeout=10)
    except KafkaException as err:
        raise BenchError(f"the broker at {target.bootstrap} does not answer: {err}") from None


def create_topic(target: Target, case: Case) -> str:
    """A fresh topic for one case; returns once every partition has a leader."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    label = "".join(c if c.isalnum() or c in "._-" else "_" for c in target.label)
    topic = f"bench-{label}-{case.size}b-acks{case.acks}-p{case.partitions}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(admin_config(target))
    futures = admin.create_topics(
        [NewTopic(topic, case.partitions, target.replication_factor)],
        operation_timeout=10,
        request_timeout=15,
    )
    try:
        futures[topic].result(timeout=20)
    except KafkaException as err:
        raise BenchError(f"cannot create topic {topic} on {target.bootstrap}: {err}") from None
    deadline = time.monotonic() + TOPIC_READY_SECONDS
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        ready = meta is not None and meta.error is None and len(meta.partitions) == case.partitions
        if ready and all(p.leader >= 0 for p in meta.partitions.values()):
            return topic
        time.sleep(0.05)
    raise BenchError(f"topic {topic} on {target.bootstrap} has no leaders after creation")


def delete_topic(target: Target, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(admin_config(target))
    with contextlib.suppress(Exception):  # best effort: the figures are already taken
        admin.delete_topics([topic], operation_timeout=10)[topic].result(timeout=15)


def measure_produce(
    target: Target,
    topic: str,
    case: Case,
    settings: Settings,
    tick: Tick,
    destinations: list[tuple[str, int]] | None = None,
) -> tuple[dict, int]:
    """Produce throughput; also returns how many messages were delivered.

    Messages go round-robin over `destinations`, (topic, partition) pairs, by default every
    partition of `topic` (`bench partitions` spreads them over several topics), from one
    producer or `settings.producers` processes (kafka_ref/tools/bench_producers.py).
    Delivery reports come only for failures (`delivery.report.only.error`): a Python
    callback per message would cost the client about a microsecond each, and the client,
    not the broker, would be what is measured. Delivered = sent - failed - still queued.
    """
    config = producer_config(target.config(), case.acks)
    destinations = destinations or [(topic, p) for p in range(case.partitions)]
    if settings.producers > 1:
        try:
            done = produce_in_processes(
                config,
                destinations,
                case.size,
                settings.messages,
                settings.seconds,
                settings.producers,
                tick,
            )
        except TimeoutError as err:
            raise BenchError(str(err)) from None
    else:
        done = produce_flat_out(
            config, destinations, case.size, settings.messages, settings.seconds, tick
        )
    row = result(
        "produce",
        target,
        case,
        messages=done.delivered,
        errors=done.sent - done.delivered,
        seconds=done.seconds,
        client_cpu_s=round(done.cpu_s, 2),
    )
    return row, done.delivered


def measure_consume(
    target: Target,
    topic: str,
    case: Case,
    expected: int,
    settings: Settings,
    tick: Tick,
    isolation: str = "",
) -> dict:
    """Read back `expected` messages from offset 0 of every partition (with `isolation`,
    read_committed or read_uncommitted, named in the row's `what`)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            **target.config(),
            "group.id": f"kafka-ref-bench-{uuid.uuid4().hex[:8]}",  # never joined: assign()
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            # see the module docstring: a full local queue must not cost a whole second
            "fetch.queue.backoff.ms": CONSUMER_QUEUE_BACKOFF_MS,
            "isolation.level": isolation or "read_uncommitted",
        }
    )
    received = errors = 0
    start = time.perf_counter()
    deadline = start + settings.seconds
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(case.partitions)])
        while received < expected and time.perf_counter() < deadline:
            # never ask for more than is left: consume() waits until it has them all
            batch = consumer.consume(min(10_000, expected - received), 0.5)
            bad = sum(1 for m in batch if m.error() is not None)
            received += len(batch) - bad
            errors += bad
            tick(len(batch) - bad)
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    what = f"consume {isolation}".strip()
    return result(what, target, case, messages=received, errors=errors, seconds=elapsed)


def measure_latency(target: Target, topic: str, case: Case, settings: Settings, tick: Tick) -> dict:
    """Per-message produce latency at a fixed rate, from produce() to the delivery report."""
    from confluent_kafka import Producer

    latencies: list[float] = []

    def on_delivery(sent_at: float, err, msg) -> None:
        if err is None:
            latency = msg.latency()  # librdkafka's own stopwatch: produce() -> acknowledged
            latencies.append(time.perf_counter() - sent_at if latency is None else latency)

    producer = Producer(
        {
            **target.config(),
            "acks": case.acks,
            "linger.ms": 0,
            "enable.idempotence": False,
        }
    )
    payload = os.urandom(case.size)
    producer.produce(topic, payload, partition=0)  # warm up: connect, fetch metadata
    producer.flush(10)
    count = max(1, int(settings.latency_rate * settings.latency_seconds))
    interval = 1.0 / settings.latency_rate
    start = time.perf_counter()
    for i in range(count):
        target_time = start + i * interval
        while (wait := target_time - time.perf_counter()) > 0:
            producer.poll(wait) if wait >= 0.001 else time.sleep(wait)
        callback = functools.partial(on_delivery, time.perf_counter())
        producer.produce(topic, payload, partition=i % case.partitions, on_delivery=callback)
        producer.poll(0)
        tick(1)
    left = producer.flush(FLUSH_GRACE_SECONDS)
    elapsed = time.perf_counter() - start
    if left:
        producer.purge()
        producer.flush(1.0)
    latencies.sort()
    millis = {}
    if latencies:
        millis = {
            "p50_ms": round(percentile(latencies, 0.50) * 1000, 3),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 3),
            "max_ms": round(latencies[-1] * 1000, 3),
        }
    return result(
        "produce latency",
        target,
        case,
        messages=len(latencies),
        errors=count - len(latencies),
        seconds=elapsed,
        **millis,
    )


# --------------------------------------------------------------------------- the run
def run_cases(
    targets: list[Target], settings: Settings, emit: Callable[[dict], None]
) -> list[dict]:
    """Every case against every target, interleaved (case 1 on each broker, then case 2...).

    Interleaving keeps a slow drift of the machine (another process, a warm page cache)
    from favouring the broker that happened to run first; with `repeat`, every run starts
    with the next broker in turn (with two brokers, the order of the run before, reversed),
    so over N runs of N brokers each has held each place once. Returns every measurement.
    """
    for target in targets:
        check_reachable(target)
    cases = settings.cases()
    phases = len(settings.measured_phases())
    rows: list[dict] = []
    total = len(cases) * len(targets) * phases * settings.repeat
    with Progress(total) as progress:
        for run in range(1, settings.repeat + 1):
            turn = (run - 1) % len(targets)
            order = targets[turn:] + targets[:turn]
            for case in cases:
                for target in order:
                    for row in measure_case(target, case, run, settings, progress):
                        rows.append(row)
                        emit(row)
    return rows


def measure_case(
    target: Target, case: Case, run: int, settings: Settings, progress: Progress
) -> Iterator[dict]:
    """produce, consume and produce latency of one case on a fresh topic (then deleted)."""
    name = f"{target.label} {case.size} B acks={case.acks} p={case.partitions}"
    if settings.repeat > 1:
        name += f" #{run}"
    topic = create_topic(target, case)
    cpu = functools.partial(broker_time, target.pid)
    phases = settings.measured_phases()
    try:
        if "produce" in phases:
            with progress.step(f"{name} produce", settings.messages) as tick:
                before = cpu()
                row, delivered = measure_produce(target, topic, case, settings, tick)
            yield row | {"run": run, **_spent(before, cpu())}
        if "consume" in phases:
            with progress.step(f"{name} consume", max(1, delivered)) as tick:
                before = cpu()
                row = measure_consume(target, topic, case, delivered, settings, tick)
            yield row | {"run": run, **_spent(before, cpu())}
        if "latency" in phases:
            count = max(1, int(settings.latency_rate * settings.latency_seconds))
            with progress.step(f"{name} latency", count) as tick:
                before = cpu()
                row = measure_latency(target, topic, case, settings, tick)
            yield row | {"run": run, **_spent(before, cpu())}
    finally:
        if not settings.keep_topics:
            delete_topic(target, topic)


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a local process (all threads), from /proc/PID/stat."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def process_wait_seconds(pid: int | None) -> float | None:
    """Seconds the threads of a local process were ready to run but waited for a core (the
    run queue), from /proc/PID/task/*/schedstat: on a machine whose cores are busy, the time
    a broker lost to the scheduler rather than to its own work."""
    if pid is None:
        return None
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None  # a thread that ended meanwhile, or no schedstat on this kernel
    return total / 1e9


def broker_time(pid: int | None) -> tuple[float | None, float | None]:
    """(CPU seconds, run-queue seconds) of a local broker process so far."""
    return process_cpu_seconds(pid), process_wait_seconds(pid)


def _spent(before: tuple, after: tuple) -> dict:
    """broker_cpu_s and broker_wait_s of a phase, from `broker_time` before and after."""
    pairs = zip(before, after, strict=True)
    cpu, wait = (None if a is None or b is None else round(b - a, 2) for a, b in pairs)
    return {"broker_cpu_s": cpu, "broker_wait_s": wait}


def process_rss(pid: int) -> dict:
    """VmRSS and VmHWM (peak) of a local process, in MB, from /proc/PID/status."""
    values = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = round(int(rest.split()[0]) / 1024, 1)
    except OSError as err:
        raise BenchError(f"cannot read the RSS of process {pid}: {err}") from None
    return {"rss_MB": values.get("VmRSS"), "peak_rss_MB": values.get("VmHWM")}
