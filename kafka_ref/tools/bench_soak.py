"""`kafka-ref bench soak`: what idle and greedy connections cost a broker's memory.

A broker's memory must be bounded by what clients *send*, never by what they *announce*
(BROKER-51), and with `queued.max.request.bytes` by the pool (BROKER-53). The soak starts a
kafka-ref broker process and measures its resident memory (VmRSS, /proc) in four steps:

1. **base**: the broker after one answered request;
2. **idle**: plus `--idle` connections (1,000) that each made one ApiVersions request and
   then say nothing, as a large client fleet's spare connections do;
3. **greedy**: plus `--greedy` connections (100) that each announce a frame of
   `--frame-mb` MB (100, just under `socket.request.max.bytes`) and send `--send-mb` of it
   (1 MB), then stall: a slow or hostile producer.

4. **closed**: the greedy connections closed again.

In the greedy and closed steps a fresh connection sends a Metadata request; its latency is
reported, or none when it is not answered within 5 s. `--pool-mb` sets
`queued.max.request.bytes` (with `socket.request.max.bytes` no larger, as Kafka requires);
0, the default, keeps Kafka's default, unbounded. With a pool the greedy connections spend
it, so the Metadata request waits for memory (backpressure, BROKER-53) until they close.

The process's file descriptor limit is raised to its hard limit first: the broker and the
bench each hold one descriptor per connection. Each step prints one row (`--json`: one JSON
object); the target is a broker under 300 MB with the defaults.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

from kafka_ref.conformance.wire import Wire
from kafka_ref.tools.bench_broker import BenchError, process_rss
from kafka_ref.tools.bench_compare import kafka_ref_process

MB = 1024 * 1024
SETTLE_SECONDS = 30.0  # at most, for the broker to read what the greedy connections sent


def raise_fd_limit(needed: int, what: str = "the soak") -> None:
    """Soft limit up to the hard one; BenchError if even that is too small."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise BenchError(
            f"{what} needs {needed} file descriptors; the hard limit is {hard}"
            " (raise it: ulimit -Hn, or prlimit --nofile)"
        )
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def idle_connection(port: int) -> socket.socket:
    """A connection that made one request, read its answer, and stays silent."""
    wire = Wire("127.0.0.1", port)
    if not wire.api_versions(0).api_keys:
        raise BenchError("the broker did not answer an ApiVersions request")
    return wire.sock


def greedy_connection(port: int, frame_bytes: int, payload: memoryview) -> socket.socket:
    """A connection that announces `frame_bytes` and sends what the socket takes of `payload`."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(struct.pack(">i", frame_bytes))
    sock.setblocking(False)
    sent = 0
    with contextlib.suppress(BlockingIOError):
        while sent < len(payload):
            sent += sock.send(payload[sent:])
    return sock


def settle(pid: int) -> dict:
    """The broker's RSS once it stops growing (for a second), or after SETTLE_SECONDS."""
    deadline = time.monotonic() + SETTLE_SECONDS
    last = process_rss(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = process_rss(pid)
        if now["rss_MB"] <= last["rss_MB"] + 0.5:
            return now
        last = now
    return last


def metadata_ms(port: int, timeout: float = 5.0) -> float | None:
    """A fresh connection's Metadata round trip in ms; None when not answered in time."""
    started = time.monotonic()
    with Wire("127.0.0.1", port, timeout=timeout) as wire:
        try:
            wire.metadata([])
        except TimeoutError:
            return None
    return round((time.monotonic() - started) * 1000, 1)


@contextlib.contextmanager
def soak_broker(base: str, pool_mb: int) -> Iterator:
    configs = {}
    if pool_mb > 0:
        configs = {
            "queued.max.request.bytes": pool_mb * MB,
            "socket.request.max.bytes": pool_mb * MB,
        }
    broker = kafka_ref_process(
        os.path.join(base, "data"), os.path.join(base, "broker.log"), configs=configs
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def soak(
    emit: Callable[[dict], None],
    *,
    idle: int = 1000,
    greedy: int = 100,
    frame_mb: float = 100.0,
    send_mb: float = 1.0,
    pool_mb: int = 0,
    data_dir: str | None = None,
) -> list[dict]:
    """Run the four steps; every row is emitted and returned."""
    raise_fd_limit(2 * (idle + greedy) + 256)
    frame = min(int(frame_mb * MB), 100 * MB - 1)
    if pool_mb > 0:
        frame = min(frame, pool_mb * MB)
    payload = memoryview(bytes(min(int(send_mb * MB), frame)))
    base = data_dir or tempfile.mkdtemp(prefix="kafka-ref-soak-")
    held: list[socket.socket] = []
    rows: list[dict] = []
    pool = f"{pool_mb} MB" if pool_mb > 0 else "unbounded"

    def row(step: str, connections: int, rss: dict, **more) -> None:
        rows.append(
            {
                "what": "soak",
                "step": step,
                "connections": connections,
                "queued.max.request.bytes": pool,
                **rss,
                **more,
            }
        )
        emit(rows[-1])

    try:
        with soak_broker(base, pool_mb) as broker:
            metadata_ms(broker.port)
            row("base", 0, settle(broker.pid))
            held += [idle_connection(broker.port) for _ in range(idle)]
            row("idle", idle, settle(broker.pid))
            held += [greedy_connection(broker.port, frame, payload) for _ in range(greedy)]
            rss = settle(broker.pid)
            sizes = {
                "announced_MB": round(greedy * frame / MB),
                "sent_MB": round(greedy * len(payload) / MB),
            }
            row("greedy", idle + greedy, rss, metadata_ms=metadata_ms(broker.port), **sizes)
            for sock in held[idle:]:
                sock.close()
            del held[idle:]
            answered = metadata_ms(broker.port, timeout=60)
            if answered is None:
                raise BenchError("the broker did not answer once the greedy connections closed")
            row("closed", idle, settle(broker.pid), metadata_ms=answered)
    finally:
        for sock in held:
            sock.close()
        if data_dir is None:
            shutil.rmtree(base, ignore_errors=True)
    return rows


# --------------------------------------------------------------------------- command line
NAME = "soak"


def add_parser(sub) -> None:
    soak = sub.add_parser(
        NAME,
        help="broker memory with idle and greedy connections",
        description=__doc__.split("\n\n")[0],
    )
    soak.add_argument("--idle", type=int, default=1000, help="idle connections")
    soak.add_argument("--greedy", type=int, default=100, help="connections announcing frames")
    soak.add_argument("--frame-mb", type=float, default=100.0, help="the frames they announce")
    soak.add_argument("--send-mb", type=float, default=1.0, help="what each sends of its frame")
    soak.add_argument("--pool-mb", type=int, default=0, help="queued.max.request.bytes in MB")
    soak.add_argument("--json", action="store_true", help="one JSON object per measurement")


def run(args, emit) -> int:
    try:
        soak(
            emit,
            idle=args.idle,
            greedy=args.greedy,
            frame_mb=args.frame_mb,
            send_mb=args.send_mb,
            pool_mb=args.pool_mb,
        )
    except BenchError as err:
        print(f"kafka-ref bench: {err}", file=sys.stderr)
        return 1
    return 0
