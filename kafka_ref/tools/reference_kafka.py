"""Run Apache Kafka itself, the reference kafka-ref is checked against: `kafka-ref reference-kafka`.

    kafka-ref reference-kafka --brokers 1                 # one KRaft node (broker and controller)
    kafka-ref reference-kafka --brokers 3 --port 9192     # three brokers, a quorum of three
    kafka-ref reference-kafka --config group.initial.rebalance.delay.ms=0
    kafka-ref reference-kafka --feature transaction.version=1   # transactions v1 (KIP-890)
    kafka-ref reference-kafka --fetch                     # only fetch the jars (Maven), then exit
    kafka-ref reference-kafka --tool kafka-topics -- --bootstrap-server 127.0.0.1:9092 --list

The pinned Apache Kafka (kafka_ref/apache/pom.xml) is fetched from Maven Central on first use
and cached (kafka_ref/apache/classpath.py); each node's storage is formatted as
`kafka-storage.sh format` does, then started on loopback (kafka_ref/apache/cluster.py). The
command prints the bootstrap address and each node's pid and log, and waits; Ctrl-C or
SIGTERM stops every node cleanly and removes the data unless `--data-dir` was given.
`--config KEY=VALUE` passes a broker config to every node; `--feature NAME=LEVEL` formats the
cluster with that feature finalized at that level (`kafka-storage.sh format --feature`,
KIP-584), e.g. transaction.version=1 for transactions v1 (Kafka 4 formats at 2). `--jvm kafka` runs
the JVM with the options of kafka-server-start.sh (for benchmarks) instead of the quicker test
settings.

`--tool NAME -- ARGS` runs one of Kafka's command-line tools instead, as `bin/NAME.sh ARGS`
would (kafka_ref/apache/tools.py), against any broker: kafka-ref's or Kafka's. Its exit code
is the tool's.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import threading

from kafka_ref.apache.classpath import ApacheKafkaUnavailable, classpath, version
from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.apache.tools import TOOLS, tool_command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", type=int, default=1, help="1 (combined) or 3 (default 1)")
    parser.add_argument("--port", type=int, help="the first node's client port (default: free)")
    parser.add_argument("--data-dir", metavar="DIR", help="keep the nodes' data here")
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="a broker config"
    )
    parser.add_argument(
        "--feature", action="append", default=[], metavar="NAME=LEVEL", help="a feature level"
    )
    parser.add_argument(
        "--jvm", choices=["quick", "kafka"], default="quick", help="JVM options (default quick)"
    )
    parser.add_argument("--fetch", action="store_true", help="fetch the jars and exit")
    parser.add_argument(
        "--tool", metavar="NAME", help="run Kafka's bin/NAME.sh with the ARGS after --"
    )
    parser.add_argument("tool_args", nargs=argparse.REMAINDER, metavar="-- ARGS")


def parse_configs(pairs: list[str]) -> dict[str, str]:
    from kafka_ref.cli import UsageError

    configs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--config {pair!r}: KEY=VALUE expected")
        configs[key.strip()] = value.strip()
    return configs


def parse_features(pairs: list[str]) -> dict[str, int]:
    from kafka_ref.cli import UsageError

    features = {}
    for pair in pairs:
        name, sep, level = pair.partition("=")
        if not sep or not name or not level.strip().isdigit():
            raise UsageError(f"--feature {pair!r}: NAME=LEVEL expected, LEVEL a number")
        features[name.strip()] = int(level)
    return features


def run_tool(name: str | None, tool_args: list[str]) -> int:
    from kafka_ref.cli import UsageError

    if name is None:
        raise UsageError("arguments after -- need --tool NAME")
    if name.removesuffix(".sh") not in TOOLS:
        raise UsageError(f"--tool {name}: one of {', '.join(sorted(TOOLS))}")
    try:
        command = tool_command(name, *tool_args[1:] if tool_args[:1] == ["--"] else tool_args)
    except ApacheKafkaUnavailable as err:
        print(f"kafka-ref reference-kafka: {err}")
        return 1
    return subprocess.call(command)


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError

    if args.brokers not in (1, 3):
        raise UsageError(
            f"--brokers {args.brokers}: 1 (one combined node) or 3 (a quorum of three)"
        )
    configs = parse_configs(args.config)
    if args.tool is not None or args.tool_args:
        return run_tool(args.tool, args.tool_args)
    features = parse_features(args.feature)
    try:
        jars = classpath()
    except ApacheKafkaUnavailable as err:
        print(f"kafka-ref reference-kafka: {err}")
        return 1
    if args.fetch:
        print(f"Apache Kafka {version()}: {len(jars.split(':'))} jars")
        return 0
    kafka = ApacheKafka(
        args.brokers,
        configs,
        workdir=args.data_dir,
        quick=args.jvm == "quick",
        port=args.port,
        features=features,
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        kafka.start()
        print(f"Apache Kafka {version()}, cluster {kafka.cluster_id}: {kafka.bootstrap}")
        for node in kafka.nodes:
            print(f"  node {node.node_id}: pid {node.pid}, log {node.log_path}")
        print("Ctrl-C stops it", flush=True)
        stopping.wait()
    except KeyboardInterrupt:
        pass
    except RuntimeError as err:
        print(f"kafka-ref reference-kafka: {err}")
        return 1
    finally:
        kafka.stop()
    return 0
