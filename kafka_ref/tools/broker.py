"""Run a kafka-ref broker: alone (embedded metadata), or one of a cluster on ZooKeeper.

    kafka-ref broker --listen 127.0.0.1:9092 --data-dir /tmp/kafka-ref
    kafka-ref broker server.properties --config num.partitions=3 --config log.segment.bytes=1048576
    kafka-ref broker --zookeeper 127.0.0.1:2181/kr --broker-id 2 --listen 127.0.0.1:9093 ...

`--metrics HOST:PORT` serves the broker's metrics for Prometheus at http://HOST:PORT
(`metrics.listener`; docs/metrics.md). `--zookeeper HOST:PORT[/chroot]` and `--broker-id N`
are shorthands for `zookeeper.connect` and `broker.id`: with them the broker registers in
ZooKeeper and joins the cluster there (`kafka-ref cluster` starts a whole local one).

Configs use Kafka's broker names (`broker.id`, `listeners`, `advertised.listeners`,
`log.dirs`, `num.partitions`, `default.replication.factor`, `auto.create.topics.enable`,
`log.segment.bytes`, `log.retention.hours`, ...). A Kafka-style `server.properties` file
works; `--config key=value` overrides it, and `--listen` / `--data-dir` are shorthands for
`listeners=PLAINTEXT://HOST:PORT` and `log.dirs=DIR` that win over both (several data
directories: `--config log.dirs=/a,/b`; a new partition goes to the one holding the
fewest). An unknown key or a bad value is one line on stderr and exit code 2; a log dir
that cannot be created or written stops the start with exit code 1, and so does every log
dir failing while the broker runs (one failing is taken offline, the others keep serving).
Listeners with TLS or SASL use Kafka's keys (`listeners=PLAINTEXT://:9092,SASL_SSL://:9094`,
`ssl.keystore.location`, `sasl.enabled.mechanisms`, ...; docs/security.md); a keystore that
does not load is exit code 2 as well. SIGTERM or Ctrl-C
shuts the broker down cleanly (the next start skips recovery); after a kill -9 the next
start recovers.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from kafka_ref.cluster.embedded import MetadataLoadError
from kafka_ref.log.log_manager import LogDirError
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig

logger = logging.getLogger("kafka_ref.tools.broker")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "properties", nargs="?", metavar="server.properties", help="a Kafka-style config file"
    )
    parser.add_argument(
        "--listen", metavar="HOST:PORT", help="listen address (default 127.0.0.1:9092)"
    )
    parser.add_argument(
        "--data-dir", metavar="DIR", help="one data directory (log.dirs; default /tmp/kafka-logs)"
    )
    parser.add_argument(
        "--zookeeper", metavar="HOST:PORT[/chroot]", help="join a cluster (zookeeper.connect)"
    )
    parser.add_argument("--broker-id", metavar="N", help="this broker's id (broker.id)")
    parser.add_argument(
        "--metrics", metavar="HOST:PORT", help="serve Prometheus metrics (metrics.listener)"
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config by Kafka's name; repeatable",
    )


def build_config(args: argparse.Namespace) -> KafkaConfig:
    """The broker config from the file, --config, --listen and --data-dir (in that order)."""
    overrides: dict[str, str] = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--config {item!r} is not KEY=VALUE")
        overrides[key.strip()] = value
    shorthands: dict[str, str] = {}
    if args.listen:
        _host, sep, port = args.listen.rpartition(":")
        if not sep or not port.isdigit():
            raise ConfigError(f"--listen {args.listen!r} is not HOST:PORT")
        shorthands["listeners"] = f"PLAINTEXT://{args.listen}"
    if args.data_dir:
        shorthands["log.dirs"] = args.data_dir
    if getattr(args, "zookeeper", None):
        shorthands["zookeeper.connect"] = args.zookeeper
    if getattr(args, "broker_id", None) is not None:
        shorthands["broker.id"] = args.broker_id
    if getattr(args, "metrics", None):
        shorthands["metrics.listener"] = f"http://{args.metrics}"
    if args.properties:
        return KafkaConfig.from_file(args.properties, overrides, shorthands)
    return KafkaConfig.from_props(overrides, shorthands)


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError
    from kafka_ref.server.broker_process import serve

    try:
        config = build_config(args)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    try:
        status = asyncio.run(serve(config))  # 1: every log dir failed (DUR-16)
    except ConfigError as err:  # e.g. a keystore that does not load
        raise UsageError(str(err)) from None
    except (MetadataLoadError, LogDirError) as err:  # e.g. a log dir is not writable
        logger.error("%s", err)
        return 1
    except (KazooException, KazooTimeoutError) as err:  # ZooKeeper mode: no ZooKeeper there
        logger.error("cannot reach ZooKeeper %s: %r", config["zookeeper.connect"], err)
        return 1
    except OSError as err:  # e.g. the port is taken
        logger.error("cannot run the broker: %s", err)
        return 1
    return status
