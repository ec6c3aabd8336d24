"""Elect partition leaders: like Kafka's kafka-leader-election.sh.

    kafka-ref leader-election --bootstrap-server 127.0.0.1:9092 \\
        --election-type preferred --all-topic-partitions
    kafka-ref leader-election --bootstrap-server 127.0.0.1:9092 \\
        --election-type unclean --topic clicks --partition 0

Sends ElectLeaders (KIP-460) to the controller: `preferred` gives each partition back to
its preferred replica (the first assigned) if it is alive and in the ISR; `unclean` elects
any live replica of a partition that has no leader, at the price of the writes only the
lost ISR had (CTRL-27). It prints, as Kafka's tool does:

    Successfully completed leader election (PREFERRED) for partitions clicks-0
    Valid replica already elected for partitions clicks-1

and for each partition that could not get its leader a line on stderr and exit code 1. A
bad argument is one line and exit code 2.

Spec rules: TOOLS-30 (spec/tools.md).
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.client.admin_replicas import PREFERRED, UNCLEAN
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.tools.topics import add_timeout_option, check_bootstrap, check_timeout

TYPES = {"preferred": PREFERRED, "unclean": UNCLEAN}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    parser.add_argument("--election-type", metavar="TYPE", help="preferred or unclean")
    parser.add_argument("--all-topic-partitions", action="store_true", help="every partition")
    parser.add_argument("--topic", help="the topic of the partition to elect a leader for")
    parser.add_argument("--partition", type=int, help="the partition (with --topic)")
    add_timeout_option(parser)


def run(args: argparse.Namespace) -> int:
    check_bootstrap(args)
    check_timeout(args)
    kind = (args.election_type or "").lower()
    if kind not in TYPES:
        raise UsageError(
            f"--election-type must be preferred or unclean, not {args.election_type!r}"
        )
    if args.all_topic_partitions == (args.topic is not None):
        raise UsageError("give either --all-topic-partitions or --topic with --partition")
    if args.topic is not None and args.partition is None:
        raise UsageError("--topic needs --partition")
    partitions = None if args.all_topic_partitions else [TopicPartition(args.topic, args.partition)]
    try:
        with Admin(args.bootstrap_server, request_timeout_ms=args.timeout_ms) as admin:
            outcomes = admin.elect_leaders(TYPES[kind], partitions)
    except KafkaError as err:
        print(f"kafka-ref leader-election: {err}", file=sys.stderr)
        return 1
    by_code: dict[str, list[str]] = {"done": [], "already": []}
    failed = []
    for tp, (code, message) in sorted(outcomes.items()):
        name = f"{tp.topic}-{tp.partition}"
        if code == ErrorCode.NO_ERROR:
            by_code["done"].append(name)
        elif code == ErrorCode.ELECTION_NOT_NEEDED:
            by_code["already"].append(name)
        else:
            failed.append(f"{name}: {message or code.name}")
    if by_code["done"]:
        print(
            f"Successfully completed leader election ({kind.upper()}) for partitions "
            + ", ".join(by_code["done"])
        )
    if by_code["already"]:
        print("Valid replica already elected for partitions " + ", ".join(by_code["already"]))
    for line in failed:
        print(
            f"Error completing leader election ({kind.upper()}) for partition: {line}",
            file=sys.stderr,
        )
    return 1 if failed else 0
