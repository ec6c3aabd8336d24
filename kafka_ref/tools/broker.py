"""Run a kafka-ref broker: one process, embedded metadata, no ZooKeeper.

    kafka-ref broker --listen 127.0.0.1:9092 --data-dir /tmp/kafka-ref
    kafka-ref broker server.properties --config num.partitions=3 --config log.segment.bytes=1048576

Configs use Kafka's broker names (`broker.id`, `listeners`, `advertised.listeners`,
`log.dirs`, `num.partitions`, `default.replication.factor`, `auto.create.topics.enable`,
`log.segment.bytes`, `log.retention.hours`, ...). A Kafka-style `server.properties` file
works; `--config key=value` overrides it, and `--listen` / `--data-dir` are shorthands for
`listeners=PLAINTEXT://HOST:PORT` and `log.dirs=DIR` that win over both. An unknown key or
a bad value is one line on stderr and exit code 2. SIGTERM or Ctrl-C shuts the broker
down cleanly (the next start skips recovery); after a kill -9 the next start recovers.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from kafka_ref.cluster.embedded import MetadataLoadError
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
        "--data-dir", metavar="DIR", help="the data directory (log.dirs; default /tmp/kafka-logs)"
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
    if args.properties:
        return KafkaConfig.from_file(args.properties, overrides, shorthands)
    return KafkaConfig.from_props(overrides, shorthands)


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError
    from kafka_ref.server.broker import serve

    try:
        config = build_config(args)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    try:
        asyncio.run(serve(config))
    except MetadataLoadError as err:
        logger.error("%s", err)
        return 1
    except OSError as err:  # e.g. the port is taken, the data dir is not writable
        logger.error("cannot run the broker: %s", err)
        return 1
    return 0
