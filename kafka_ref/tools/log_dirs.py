"""Which log directory holds which partition, and how big: like Kafka's kafka-log-dirs.sh.

    kafka-ref log-dirs --bootstrap-server 127.0.0.1:9092 --describe
    kafka-ref log-dirs --bootstrap-server 127.0.0.1:9092 --describe \\
        --topic-list clicks,orders --broker-list 1,2

`--describe` sends DescribeLogDirs (BROKER-52) to every broker of `--broker-list` (default:
every live broker) and prints what kafka-log-dirs.sh prints: two lines of progress, then one
line of JSON, per broker its directories, per directory its error (null) and partitions,
per partition its name (`clicks-0`), size in bytes, offset lag and whether it is a future
log:

    Querying brokers for log directories information
    Received log directory information from brokers 1,2
    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data/a","error":null,
     "partitions":[{"partition":"clicks-0","size":1024,"offsetLag":0,"isFuture":false}]}]}]}

`--topic-list` keeps only those topics' partitions. A bad argument is one line and exit
code 2; a failed request, or a broker that is not in the cluster, one line and exit code 1.

Spec rules: TOOLS-25 (spec/tools.md).
"""

from __future__ import annotations

import argparse
import json
import sys

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.tools.command_config import add_command_config, command_security
from kafka_ref.tools.topics import add_timeout_option, check_bootstrap, check_timeout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    add_command_config(parser)
    parser.add_argument("--describe", action="store_true", help="describe the log directories")
    parser.add_argument("--topic-list", metavar="T1,T2", help="only these topics (default all)")
    parser.add_argument("--broker-list", metavar="ID1,ID2", help="only these brokers (default all)")
    add_timeout_option(parser)


def _ids(text: str) -> list[int]:
    try:
        return [int(i) for i in text.split(",") if i.strip()]
    except ValueError:
        raise UsageError(f"--broker-list {text!r} is not a list of broker ids") from None


def run(args: argparse.Namespace) -> int:
    check_bootstrap(args)
    check_timeout(args)
    if not args.describe:
        raise UsageError("Command must include --describe")
    wanted = _ids(args.broker_list) if args.broker_list else None
    topics = {t.strip() for t in (args.topic_list or "").split(",") if t.strip()}
    print("Querying brokers for log directories information")
    try:
        with Admin(
            args.bootstrap_server,
            request_timeout_ms=args.timeout_ms,
            security=command_security(args),
        ) as admin:
            live = sorted(node.node_id for node in admin.describe_cluster()[0])
            missing = sorted(set(wanted or ()) - set(live))
            if missing:
                raise KafkaError(f"broker(s) {','.join(map(str, missing))} not in the cluster")
            brokers = wanted or live
            described = admin.describe_log_dirs(brokers)
    except KafkaError as err:
        print(f"kafka-ref log-dirs: {err}", file=sys.stderr)
        return 1
    print(f"Received log directory information from brokers {','.join(map(str, brokers))}")
    report = {
        "version": 1,
        "brokers": [
            {
                "broker": broker,
                "logDirs": [
                    {
                        "logDir": d.path,
                        "error": None if d.error == ErrorCode.NO_ERROR else d.error.name,
                        "partitions": [
                            {
                                "partition": f"{tp.topic}-{tp.partition}",
                                "size": r.size,
                                "offsetLag": r.offset_lag,
                                "isFuture": r.is_future,
                            }
                            for tp, r in sorted(d.replicas.items())
                            if not topics or tp.topic in topics
                        ],
                    }
                    for d in dirs
                ],
            }
            for broker, dirs in described.items()
        ],
    }
    print(json.dumps(report, separators=(",", ":")))
    return 0
