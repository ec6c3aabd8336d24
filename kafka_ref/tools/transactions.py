"""List and describe transactions and the producers of a partition, like Kafka's
kafka-transactions.sh (KIP-664).

    kafka-ref transactions --bootstrap-server 127.0.0.1:9092 list
    kafka-ref transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id app-1
    kafka-ref transactions --bootstrap-server 127.0.0.1:9092 describe-producers \\
        --topic clicks --partition 0

`list` prints every transactional id the brokers coordinate, with its coordinator,
producer id and state (Kafka's names: Empty, Ongoing, PrepareCommit, CompleteCommit, ...).
`describe` asks the id's coordinator for its state, epoch, timeout, when the open
transaction started, how long it has run, and the partitions in it. `describe-producers`
asks the partition's leader which producers it remembers: epoch, last sequence, the
coordinator epoch of the last marker, and the first offset of an open transaction
(CurrentTransactionStartOffset, -1 without one). A producer with an open transaction there
that no coordinator shows as Ongoing is a *hanging* transaction: it holds read_committed
consumers back at that offset.

A bad argument is one line and exit code 2; a failed request one line and exit code 1.

Spec rules: TOOLS-22 (spec/tools.md).
"""

from __future__ import annotations

import argparse
import sys
import time

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.common import TopicPartition
from kafka_ref.errors import KafkaError
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.groups import print_table
from kafka_ref.tools.topics import add_timeout_option, check_bootstrap, check_timeout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    add_command_config(parser)
    add_timeout_option(parser)
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.add_parser("list", help="list the transactional ids and their states")
    describe = sub.add_parser("describe", help="describe one transactional id")
    describe.add_argument("--transactional-id", metavar="ID", help="the transactional id")
    producers = sub.add_parser("describe-producers", help="the producers of a partition")
    producers.add_argument("--topic", metavar="TOPIC", help="the topic")
    producers.add_argument("--partition", type=int, metavar="N", help="the partition")


def _validate(args: argparse.Namespace) -> None:
    check_bootstrap(args)
    check_timeout(args)
    if args.action is None:
        raise UsageError("an action is needed: list, describe or describe-producers")
    if args.action == "describe" and not args.transactional_id:
        raise UsageError('describe needs "[transactional-id]": add --transactional-id ID')
    if args.action == "describe-producers":
        if not args.topic or args.partition is None:
            raise UsageError("describe-producers needs --topic TOPIC and --partition N")
        if args.partition < 0:
            raise UsageError(f"--partition must be >= 0, not {args.partition}")


def run(args: argparse.Namespace) -> int:
    _validate(args)
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            if args.action == "list":
                rows = [["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]]
                for t in admin.list_transactions():
                    rows.append([t.transactional_id, t.coordinator_id, t.producer_id, t.state])
            elif args.action == "describe":
                t = admin.describe_transactions([args.transactional_id])[args.transactional_id]
                started = t.transaction_start_time_ms
                duration = int(time.time() * 1000) - started if started >= 0 else -1
                partitions = ",".join(f"{tp.topic}-{tp.partition}" for tp in t.topic_partitions)
                rows = [
                    [
                        "CoordinatorId",
                        "TransactionalId",
                        "ProducerId",
                        "ProducerEpoch",
                        "TransactionState",
                        "TransactionTimeoutMs",
                        "CurrentTransactionStartTimeMs",
                        "TransactionDurationMs",
                        "TopicPartitions",
                    ],
                    [
                        t.coordinator_id,
                        t.transactional_id,
                        t.producer_id,
                        t.producer_epoch,
                        t.state,
                        t.transaction_timeout_ms,
                        started if started >= 0 else "None",
                        duration if duration >= 0 else "None",
                        partitions,
                    ],
                ]
            else:
                rows = [
                    [
                        "ProducerId",
                        "ProducerEpoch",
                        "LatestCoordinatorEpoch",
                        "LastSequence",
                        "LastTimestamp",
                        "CurrentTransactionStartOffset",
                    ]
                ]
                tp = TopicPartition(args.topic, args.partition)
                for p in admin.describe_producers(tp):
                    rows.append(
                        [
                            p.producer_id,
                            p.producer_epoch,
                            p.coordinator_epoch,
                            p.last_sequence,
                            p.last_timestamp,
                            p.current_transaction_start_offset,
                        ]
                    )
    except KafkaError as err:
        print(f"kafka-ref transactions: {err}", file=sys.stderr)
        return 1
    print_table(rows)
    return 0
