"""Move partitions between brokers: like Kafka's kafka-reassign-partitions.sh.

    kafka-ref reassign --bootstrap-server 127.0.0.1:9092 --generate \\
        --topics-to-move-json-file topics.json --broker-list 2,3
    kafka-ref reassign --bootstrap-server 127.0.0.1:9092 --execute \\
        --reassignment-json-file plan.json
    kafka-ref reassign --bootstrap-server 127.0.0.1:9092 --verify \\
        --reassignment-json-file plan.json
    kafka-ref reassign --bootstrap-server 127.0.0.1:9092 --cancel \\
        --reassignment-json-file plan.json

The files are Kafka's JSON. `topics.json` names the topics to move:

    {"version":1,"topics":[{"topic":"clicks"}]}

`--generate` prints the current assignment of those topics and a proposed one over the
brokers of `--broker-list`, placed as topic creation places replicas (CTRL-8), in the
format of a reassignment plan:

    {"version":1,"partitions":[{"topic":"clicks","partition":0,"replicas":[2,3],
     "log_dirs":["any","any"]}]}

`--execute` prints the current assignment (to keep for a rollback) and sends the plan as
AlterPartitionReassignments (KIP-455, CTRL-24): the controller starts each move and the
data follows; `--verify` says per partition whether its move is complete or still in
progress (ListPartitionReassignments), `--cancel` reverts the plan's pending moves
(CTRL-26). A bad argument or file is one line and exit code 2; a move the controller
refuses (an unknown partition, a broker that is not registered, ...) one line per partition
and exit code 1.

Spec rules: TOOLS-29 (spec/tools.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kafka_ref.cli import UsageError
from kafka_ref.client.admin import Admin
from kafka_ref.cluster.assignment import assign_replicas_to_brokers
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.tools.topics import add_timeout_option, check_bootstrap, check_timeout

ACTIONS = ("generate", "execute", "verify", "cancel")
Plan = dict[TopicPartition, list[int]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to ask")
    for action in ACTIONS:
        parser.add_argument(f"--{action}", action="store_true", help=f"{action} (see above)")
    parser.add_argument("--topics-to-move-json-file", metavar="FILE", help="for --generate")
    parser.add_argument("--broker-list", metavar="ID1,ID2", help="for --generate: target brokers")
    parser.add_argument("--reassignment-json-file", metavar="FILE", help="the plan")
    add_timeout_option(parser)


def _read_json(path: str, option: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as err:
        raise UsageError(f"--{option} {path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise UsageError(f"--{option} {path}: not JSON ({err})") from None


def parse_plan(data: Any) -> Plan:
    """Kafka's reassignment JSON: {"version":1,"partitions":[{"topic","partition",
    "replicas"}]}; a partition listed twice or without replicas is refused."""
    try:
        plan: Plan = {}
        for entry in data["partitions"]:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
            if tp in plan:
                raise UsageError(f"partition {tp.topic}-{tp.partition} is listed twice")
            if not replicas or len(set(replicas)) != len(replicas):
                raise UsageError(f"partition {tp.topic}-{tp.partition}: bad replicas {replicas}")
            plan[tp] = replicas
    except (KeyError, TypeError, ValueError) as err:
        raise UsageError(f"not a reassignment plan: {err!r}") from None
    if not plan:
        raise UsageError("the reassignment plan has no partitions")
    return plan


def format_plan(plan: Plan) -> str:
    partitions = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(replicas),
            "log_dirs": ["any"] * len(replicas),
        }
        for tp, replicas in sorted(plan.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _current(admin: Admin, topics: set[str]) -> Plan:
    return {
        TopicPartition(d.name, p.partition): list(p.replicas)
        for d in admin.describe_topics(sorted(topics))
        for p in d.partitions
    }


def _broker_ids(text: str | None) -> list[int]:
    try:
        ids = [int(i) for i in (text or "").split(",") if i.strip()]
    except ValueError:
        ids = []
    if not ids:
        raise UsageError(f"--broker-list {text!r} is not a list of broker ids")
    return ids


def run(args: argparse.Namespace) -> int:
    check_bootstrap(args)
    check_timeout(args)
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise UsageError("Command must include exactly one action: --" + ", --".join(ACTIONS))
    (action,) = chosen
    if action == "generate":
        if not args.topics_to_move_json_file:
            raise UsageError("--generate needs --topics-to-move-json-file")
        data = _read_json(args.topics_to_move_json_file, "topics-to-move-json-file")
        try:
            topics = {str(t["topic"]) for t in data["topics"]}
        except (KeyError, TypeError) as err:
            raise UsageError(f"not a topics-to-move file: {err!r}") from None
        brokers = _broker_ids(args.broker_list)
    else:
        if not args.reassignment_json_file:
            raise UsageError(f"--{action} needs --reassignment-json-file")
        plan = parse_plan(_read_json(args.reassignment_json_file, "reassignment-json-file"))
    try:
        with Admin(args.bootstrap_server, request_timeout_ms=args.timeout_ms) as admin:
            if action == "generate":
                return _generate(admin, topics, brokers)
            return {"execute": _execute, "verify": _verify, "cancel": _cancel}[action](admin, plan)
    except KafkaError as err:
        print(f"kafka-ref reassign: {err}", file=sys.stderr)
        return 1


def _generate(admin: Admin, topics: set[str], brokers: list[int]) -> int:
    racks = {n.node_id: n.rack for n in admin.describe_cluster()[0]}
    missing = sorted(set(brokers) - set(racks))
    if missing:
        raise KafkaError(f"broker(s) {','.join(map(str, missing))} not in the cluster")
    current = _current(admin, topics)
    proposed: Plan = {}
    for topic in sorted(topics):
        mine = sorted(tp for tp in current if tp.topic == topic)
        rf = len(current[mine[0]])
        placed = assign_replicas_to_brokers([(b, racks[b]) for b in brokers], len(mine), rf)
        proposed.update({TopicPartition(topic, p): r for p, r in placed.items()})
    print("Current partition replica assignment")
    print(format_plan(current))
    print()
    print("Proposed partition reassignment configuration")
    print(format_plan(proposed))
    return 0


def _report(outcomes: dict, verb: str) -> int:
    failed = {tp: o for tp, o in sorted(outcomes.items()) if o[0] != ErrorCode.NO_ERROR}
    done = [f"{tp.topic}-{tp.partition}" for tp in sorted(outcomes) if tp not in failed]
    if done:
        print(f"Successfully {verb} partition reassignments for {','.join(done)}")
    if failed:
        print("Error reassigning partition(s):", file=sys.stderr)
        for tp, (code, message) in failed.items():
            print(f"{tp.topic}-{tp.partition}: {message or code.name}", file=sys.stderr)
        return 1
    return 0


def _execute(admin: Admin, plan: Plan) -> int:
    current = _current(admin, {tp.topic for tp in plan})
    print("Current partition replica assignment")
    print()
    print(format_plan({tp: r for tp, r in current.items() if tp in plan}))
    print()
    print("Save this to use as the --reassignment-json-file option during rollback")
    return _report(admin.alter_partition_reassignments(plan), "started")


def _verify(admin: Admin, plan: Plan) -> int:
    pending = admin.list_partition_reassignments(plan)
    current = _current(admin, {tp.topic for tp in plan})
    print("Status of partition reassignment:")
    for tp, target in sorted(plan.items()):
        name = f"{tp.topic}-{tp.partition}"
        if tp in pending:
            print(f"Reassignment of partition {name} is still in progress.")
        elif current.get(tp) == target:
            print(f"Reassignment of partition {name} is completed.")
        else:
            print(
                f"There is no active reassignment of partition {name}, but replica set is "
                f"{current.get(tp)} rather than {target}."
            )
    return 0


def _cancel(admin: Admin, plan: Plan) -> int:
    return _report(admin.alter_partition_reassignments(dict.fromkeys(plan)), "cancelled")
