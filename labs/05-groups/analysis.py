"""Lab 05 analysis: how many partitions each assignor moves when members come and go.

    kafka-ref lab analyse 05 --out /tmp/lab05        # your solution.py
    kafka-ref lab analyse 05 --reference --out /tmp/lab05-reference

For each assignor (range, roundrobin, cooperative-sticky) a group of our consumers reads two
topics on a real broker: members join one by one, then leave one by one, and after each
change the analysis waits until the group is settled (every partition owned by exactly one
member). The leader runs the assignor inside its poll(), so "range" and "roundrobin" run
your `range_assign` and `roundrobin_assign` (KAFKA_REF_SOLUTION).

The coordinator writes every generation it completes to `__consumer_offsets` (a group
metadata record: the generation, the protocol and each member's assignment, in Kafka's
layout). PySpark reads those records from the segment files with `kafka_ref_segments` and
decodes them (kafka_ref/group/offsets_records.py, assignors/consumer_protocol.py) into one
row per (group, generation, member, partition). A partition *moves* when a generation gives
it to a member other than its last owner; it *stops* when its owner revokes it while the
group rebalances: every owned partition under the eager protocol (range, roundrobin), only
the moving ones under the cooperative protocol (KIP-429).

Beside them, the same churn runs with librdkafka's consumers (confluent-kafka) under the
classic protocol (eager range, cooperative-sticky) and under the consumer group protocol of
KIP-848 (the coordinator's uniform assignor). Each member writes every assign, revoke and
lost callback, timestamped, to the topic `lab05-events`; PySpark reads it with the
`kafka_ref` source and pairs each revoke of a partition with its next assign anywhere in the
group: the interval the partition had no owner. `lab05.png` and `lab05.md` answer the
handout's questions.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time

from kafka_ref.client import Consumer
from kafka_ref.tools.lab_analysis import (
    create_topics,
    local_broker,
    markdown_table,
    parse_args,
    print_table,
    spark_for,
)
from kafka_ref.tools.plots import figure

ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
MEMBERS = 4
TOPICS = ("clicks", "views")


class Member:
    """One consumer of a group, polling in its own thread until told to leave."""

    def __init__(self, bootstrap: str, group: str, strategy: str, name: str) -> None:
        self.consumer = Consumer(
            bootstrap,
            group_id=group,
            client_id=name,
            partition_assignment_strategy=[strategy],
            heartbeat_interval_ms=100,
            session_timeout_ms=10_000,
            enable_auto_commit=False,
        )
        self.leave = threading.Event()
        self.owned: frozenset = frozenset()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            self.consumer.subscribe(list(TOPICS))
            while not self.leave.is_set():
                self.consumer.poll(0.1)
                self.owned = frozenset(self.consumer.assignment())
        except BaseException as e:  # reported by settle()
            self.error = e
        finally:
            self.consumer.close()  # LeaveGroup: the group rebalances at once

    def stop(self) -> None:
        self.leave.set()
        self.thread.join(30)


def settle(members: list[Member], partitions: int, timeout: float = 60.0) -> None:
    """Wait until every partition is owned by exactly one member, unchanged for a second."""
    deadline, since, last = time.monotonic() + timeout, None, None
    while time.monotonic() < deadline:
        for m in members:
            if m.error is not None:
                raise RuntimeError(f"a consumer failed: {m.error!r}") from m.error
        now = [m.owned for m in members]
        owned = [tp for tps in now for tp in tps]
        if len(owned) == len(set(owned)) == (partitions if members else 0) and now == last:
            since = since or time.monotonic()
            if time.monotonic() - since >= 1.0:
                return
        else:
            since = None
        last = now
        time.sleep(0.1)
    raise RuntimeError(f"the group did not settle within {timeout:.0f} s")


def workload(bootstrap: str, partitions_per_topic: int) -> None:
    """Per assignor: members join one by one, then leave one by one (the first to join
    leaves first), each change settled before the next."""
    create_topics(bootstrap, dict.fromkeys(TOPICS, partitions_per_topic))
    total = partitions_per_topic * len(TOPICS)
    for strategy in ASSIGNORS:
        group, members = f"lab05-{strategy}", []
        for i in range(MEMBERS):
            members.append(Member(bootstrap, group, strategy, f"{strategy}-member-{i}"))
            settle(members, total)
        while members:
            members.pop(0).stop()
            settle(members, total)


def group_rows(row):
    """One `__consumer_offsets` record -> (group, offset, generation, protocol, member,
    topic, partition) per assigned partition; a member with no partition is one row with
    topic None, and a generation with no member (an empty group) one row with member None."""
    from kafka_ref.group.offsets_records import GroupKey, read_group_metadata_value, read_key
    from kafka_ref.protocol.consumer_protocol import decode_assignment

    if row["key"] is None or row["value"] is None:
        return []
    if int.from_bytes(bytes(row["key"])[:2], "big") > 2:
        return []  # the consumer group protocol's records (KIP-848): no classic generation
    key = read_key(bytes(row["key"]))
    if not isinstance(key, GroupKey):
        return []  # a committed offset
    group = read_group_metadata_value(key.group, bytes(row["value"]))
    base = (key.group, row["offset"], group.generation_id, group.protocol_name)
    rows = []
    for member_id, member in group.members.items():
        tps = decode_assignment(member.assignment)[1] if member.assignment else []
        rows += [(*base, member_id, tp.topic, tp.partition) for tp in tps]
        rows += [] if tps else [(*base, member_id, None, None)]
    return rows or [(*base, None, None, None)]


def analyse(spark, data_dir: str) -> list[tuple]:
    rows = spark.read.format("kafka_ref_segments").load(data_dir)
    offsets_topic = rows.where(rows.topic == "__consumer_offsets").select("key", "value", "offset")
    return offsets_topic.rdd.flatMap(group_rows).collect()


def rebalances(decoded: list[tuple]) -> dict[str, list[dict]]:
    """Per assignor, one entry per generation in log order: its members, the partitions that
    moved (a new owner other than the last one) and the partitions that stopped."""
    by_group: dict[str, dict[int, tuple[int, dict, set]]] = {}
    for group, offset, generation, _protocol, member, topic, partition in decoded:
        gens = by_group.setdefault(group, {})
        _, owners, members = gens.setdefault(generation, (offset, {}, set()))
        if member is not None:
            members.add(member)
        if topic is not None:
            owners[(topic, partition)] = member
    out: dict[str, list[dict]] = {}
    for group, gens in by_group.items():
        strategy = group.removeprefix("lab05-")
        last_owner: dict = {}
        previous: dict = {}
        steps = []
        for generation in sorted(gens, key=lambda g: gens[g][0]):
            _, owners, members = gens[generation]
            moved = sum(1 for tp, m in owners.items() if last_owner.get(tp, m) != m)
            if strategy == "cooperative-sticky":  # KIP-429: only what leaves its owner stops
                stopped = sum(1 for tp, m in previous.items() if owners.get(tp) != m)
            else:  # eager: every member revokes everything before it rejoins
                stopped = len(previous)
            counts = [list(owners.values()).count(m) for m in members]
            steps.append(
                {
                    "generation": generation,
                    "members": len(members),
                    "who": frozenset(members),
                    "moved": moved,
                    "stopped": stopped,
                    "busiest": max(counts, default=0),
                    "idlest": min(counts, default=0),
                    "owners": dict(owners),
                }
            )
            last_owner.update(owners)
            previous = owners
        out[strategy] = steps
    return out


def membership_changes(gens: list[dict]) -> list[dict]:
    """The generations merged per change of membership: a cooperative rebalance takes two
    generations (revoke, then assign) for one member joining or leaving."""
    changes: list[dict] = []
    for g in gens:
        if changes and changes[-1]["who"] == g["who"]:
            changes[-1]["moved"] += g["moved"]
            changes[-1]["stopped"] += g["stopped"]
            changes[-1]["generations"] += 1
        else:
            changes.append({**g, "generations": 1})
    return changes


def last_full(gens: list[dict]) -> list[dict]:
    """The last generation with every member in, as a list of at most one."""
    return [g for g in gens if g["members"] == MEMBERS][-1:]


def member_name(member_id: str) -> str:
    """A member id is `<client id>-<UUID>` (36 characters): the client id."""
    return member_id[:-37] if len(member_id) > 37 else member_id


def partitions_of(owners: dict, member: str, topic: str) -> str:
    return ", ".join(str(p) for (t, p), m in sorted(owners.items()) if m == member and t == topic)


def members_after(change: int) -> int:
    """The churn's changes: 1..N are joins, N+1..2N leaves."""
    return change if change <= CHURN_MEMBERS else 2 * CHURN_MEMBERS - change


def unowned_per_change(intervals: list[dict]) -> list[list]:
    """Per run and change of membership: the partitions unowned at some point, and among
    them those given back to the member that had them (stopped without moving)."""
    rows = []
    for run in PROTOCOLS:
        for change in range(
            2, 2 * CHURN_MEMBERS
        ):  # the first join and last leave own nothing before/after
            mine = [i for i in intervals if i["run"] == run and i["change"] == change]
            unowned = {(i["topic"], i["partition"]) for i in mine}
            kept = {
                (i["topic"], i["partition"]) for i in mine if i["from_member"] == i["to_member"]
            }
            rows.append([run, change, members_after(change), len(unowned), len(kept)])
    return rows


def plot_unowned(axis, intervals: list[dict]) -> None:
    """Unowned seconds per partition, the runs side by side."""
    partitions = sorted({(i["topic"], i["partition"]) for i in intervals})
    width = 0.8 / len(PROTOCOLS)
    for k, run in enumerate(PROTOCOLS):
        seconds = [
            sum(
                i["seconds"]
                for i in intervals
                if i["run"] == run and (i["topic"], i["partition"]) == tp
            )
            for tp in partitions
        ]
        axis.bar([x + k * width for x in range(len(partitions))], seconds, width, label=run)
    axis.set_xticks(
        [x + 0.4 - width / 2 for x in range(len(partitions))],
        [f"{t}-{p}" for t, p in partitions],
        rotation=60,
    )
    axis.set(title="Time each partition had no owner", ylabel="seconds, whole churn")
    axis.legend(fontsize="small")


def report(
    out: str,
    steps: dict[str, list[dict]],
    intervals: list[dict],
    totals: list[dict],
    partitions: int,
) -> None:
    with figure(os.path.join(out, "lab05.png"), 1, 3, size=(16, 4.5)) as (
        _fig,
        (left, right, unowned),
    ):
        plot_unowned(unowned, intervals)
        labels: list[str] = []
        for strategy in ASSIGNORS:
            changes = membership_changes(steps.get(strategy, []))
            x = range(len(changes))
            left.plot(x, [c["moved"] for c in changes], marker="o", label=strategy)
            right.plot(x, [c["stopped"] for c in changes], marker="o", label=strategy)
            if len(changes) > len(labels):
                labels = [f"{c['members']}" for c in changes]
        for axis in (left, right):
            axis.set_xticks(range(len(labels)), labels)
        left.set(
            title="Partitions moved per rebalance",
            xlabel="members after the change",
            ylabel="partitions given to a new owner",
        )
        right.set(
            title="Partitions stopped per rebalance",
            xlabel="members after the change",
            ylabel="partitions revoked while rebalancing",
        )
        left.legend()

    summary = []
    for strategy in ASSIGNORS:
        gens = steps.get(strategy, [])
        full = [g for g in gens if g["members"] == MEMBERS]
        summary.append(
            [
                strategy,
                len(gens),
                sum(g["moved"] for g in gens),
                sum(g["stopped"] for g in gens),
                f"{full[-1]['busiest']} / {full[-1]['idlest']}" if full else "-",
            ]
        )
    text = "# Lab 05: assignors and rebalances\n\n## Per assignor\n\n"
    text += markdown_table(
        [
            "assignor",
            "generations",
            "partitions moved",
            "partitions stopped",
            f"busiest / idlest member with {MEMBERS} members",
        ],
        summary,
    )
    text += (
        f"\n## Who owns what with {MEMBERS} members\n\nThe last generation with {MEMBERS} "
        "members; members in the order of their member ids (the client id, then a UUID), the "
        "order range and round-robin deal in.\n\n"
    )
    text += markdown_table(
        ["assignor", "member", *TOPICS],
        [
            [s, member_name(m), *(partitions_of(g["owners"], m, t) for t in TOPICS)]
            for s in ASSIGNORS
            for g in last_full(steps.get(s, []))
            for m in sorted(g["who"])
        ],
    )
    text += "\n## Per change of membership\n\n" + markdown_table(
        ["assignor", "members after", "generations", "moved", "stopped"],
        [
            [s, c["members"], c["generations"], c["moved"], c["stopped"]]
            for s in ASSIGNORS
            for c in membership_changes(steps.get(s, []))
        ],
    )
    text += "\n## Per generation\n\n" + markdown_table(
        ["assignor", "generation", "members", "moved", "stopped", "busiest", "idlest"],
        [
            [s, g["generation"], g["members"], g["moved"], g["stopped"], g["busiest"], g["idlest"]]
            for s in ASSIGNORS
            for g in steps.get(s, [])
        ],
    )
    by_run = {t["run"]: t for t in totals}
    text += (
        "\n## Unowned partitions per protocol\n\n"
        f"The same churn ({CHURN_MEMBERS} librdkafka members "
        "join one by one, then leave one by one) under the classic protocol and the consumer group "
        "protocol (KIP-848); a partition is unowned from a revoke (or a loss) to its next assign "
        "anywhere in the group.\n\n"
    )
    text += markdown_table(
        [
            "protocol",
            "intervals",
            "unowned partition-seconds",
            "median interval (s)",
            "max interval (s)",
        ],
        [
            [run, t["intervals"], f"{t['total']:.2f}", f"{t['median']:.3f}", f"{t['max']:.3f}"]
            for run in PROTOCOLS
            for t in [by_run.get(run, {"intervals": 0, "total": 0.0, "median": 0.0, "max": 0.0})]
        ],
    )
    text += (
        "\n## Unowned partitions per change of membership\n\nOf the group's "
        f"{partitions} partitions: those unowned at some point of the change, and among them those "
        "given back to the member that had them (stopped without moving).\n\n"
    )
    text += markdown_table(
        ["protocol", "change", "members after", "unowned", "unowned without moving"],
        unowned_per_change(intervals),
    )
    with open(os.path.join(out, "lab05.md"), "w") as f:
        f.write(text)


# ------------------------------------------------ the classic and the consumer group protocol
# The same churn under the classic protocol (the leader assigns, librdkafka's assignors) and
# the consumer group protocol of KIP-848 (the coordinator assigns, a heartbeat at a time).
PROTOCOLS = {
    "classic-range": {"group.protocol": "classic", "partition.assignment.strategy": "range"},
    "classic-cooperative-sticky": {
        "group.protocol": "classic",
        "partition.assignment.strategy": "cooperative-sticky",
    },
    "consumer-uniform": {"group.protocol": "consumer", "group.remote.assignor": "uniform"},
}
CHURN_MEMBERS = 3
EVENTS = "lab05-events"


class Churn:
    """One group's churn: the change of membership it is at, and the events of its members."""

    def __init__(self, bootstrap: str, run: str) -> None:
        from confluent_kafka import Producer

        self.bootstrap, self.run, self.change = bootstrap, run, 0
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def record(self, member: str, kind: str, partitions) -> None:
        """Every callback, one record per partition: run, change, member, kind, partition."""
        at = time.time()
        for tp in partitions:
            event = {"run": self.run, "change": self.change, "member": member, "kind": kind}
            event |= {"topic": tp.topic, "partition": tp.partition, "at": at}
            self.producer.produce(EVENTS, json.dumps(event).encode())
        self.producer.poll(0)


class ClientMember:
    """A confluent-kafka (librdkafka) consumer polling in its own thread; its rebalance
    callbacks record what it gets and keep `owned` (incremental for cooperative and KIP-848,
    whole for eager, whose revoke lists all it owns)."""

    def __init__(self, churn: Churn, name: str) -> None:
        from confluent_kafka import Consumer

        config = {"bootstrap.servers": churn.bootstrap, "group.id": f"lab05-{churn.run}"}
        config |= {"client.id": name, "enable.auto.commit": False} | PROTOCOLS[churn.run]
        if config["group.protocol"] == "classic":  # KIP-848 sets these on the broker
            config |= {"heartbeat.interval.ms": 100, "session.timeout.ms": 6000}
        self.churn, self.name, self.owned = churn, name, set()
        self.consumer = Consumer(config)
        self.leave = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def callback(self, kind: str):
        def on_event(_consumer, partitions) -> None:
            self.churn.record(self.name, kind, partitions)
            tps = {(tp.topic, tp.partition) for tp in partitions}
            self.owned = self.owned | tps if kind == "assign" else self.owned - tps

        return on_event

    def run(self) -> None:
        try:
            self.consumer.subscribe(
                list(TOPICS),
                on_assign=self.callback("assign"),
                on_revoke=self.callback("revoke"),
                on_lost=self.callback("lost"),
            )
            while not self.leave.is_set():
                self.consumer.poll(0.1)
        except BaseException as e:  # reported by settle()
            self.error = e
        finally:
            self.consumer.close()  # leaves the group: the revoke callback runs first

    def stop(self) -> None:
        self.leave.set()
        self.thread.join(30)


def churn(bootstrap: str, run: str, total: int) -> None:
    """Members join one by one, then leave one by one (the first to join leaves first),
    each change settled before the next; every event tells the change it belongs to."""
    events, members = Churn(bootstrap, run), []
    for i in range(CHURN_MEMBERS):
        events.change += 1
        members.append(ClientMember(events, f"{run}-member-{i}"))
        settle(members, total)
    while members:
        events.change += 1
        members.pop(0).stop()
        settle(members, total)
    if events.producer.flush(30) != 0:
        raise RuntimeError(f"{run}: events not delivered in 30 s")


def together(*calls) -> None:
    """Run the calls at once, each in its own thread; raise the first one's error."""
    errors: list[BaseException] = []

    def one(call) -> None:
        try:
            call()
        except BaseException as e:  # raised in the caller's thread below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def protocols_workload(bootstrap: str, partitions_per_topic: int) -> None:
    """The three runs at once, each its own group (their events tell them apart)."""
    create_topics(bootstrap, {EVENTS: 1})
    total = partitions_per_topic * len(TOPICS)
    together(*(lambda run=run: churn(bootstrap, run, total) for run in PROTOCOLS))


def unowned_intervals(spark, bootstrap: str) -> tuple[list[dict], list[dict]]:
    """Per run and partition, the intervals no member owned it: from a revoke (or a loss)
    to the next assign of that partition anywhere in the group. Returns the intervals (run,
    change, topic, partition, seconds, from, to) and per run their total, median and max."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    raw = (
        spark.read.format("kafka_ref")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", EVENTS)
        .load()
    )
    schema = (
        "run STRING, change INT, member STRING, kind STRING, topic STRING, partition INT, at DOUBLE"
    )
    events = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("e")).select("e.*")
    per_partition = Window.partitionBy("run", "topic", "partition").orderBy("at", "kind")
    following = events.select(
        "*",
        F.lead("kind").over(per_partition).alias("next_kind"),
        F.lead("at").over(per_partition).alias("next_at"),
        F.lead("member").over(per_partition).alias("next_member"),
    )
    # A revoke followed by another revoke or by nothing (the group emptied) closes no interval.
    intervals = following.where(F.col("kind").isin("revoke", "lost")).where(
        F.col("next_kind") == "assign"
    )
    intervals = intervals.select(
        "run",
        "change",
        "topic",
        "partition",
        (F.col("next_at") - F.col("at")).alias("seconds"),
        F.col("member").alias("from_member"),
        F.col("next_member").alias("to_member"),
    ).cache()
    totals = intervals.groupBy("run").agg(
        F.sum("seconds").alias("total"),
        F.percentile_approx("seconds", 0.5).alias("median"),
        F.max("seconds").alias("max"),
        F.count("*").alias("intervals"),
    )
    return (
        [r.asDict() for r in intervals.orderBy("run", "change", "topic", "partition").collect()],
        [r.asDict() for r in totals.collect()],
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        # No compaction: every generation's record must still be in __consumer_offsets;
        # one partition of it (Kafka's default is 50) holds all the groups. KIP-848's
        # members heartbeat at the interval the coordinator sets (Kafka's default is 5 s).
        configs = {
            "group.initial.rebalance.delay.ms": 0,
            "log.cleaner.enable": "false",
            "offsets.topic.num.partitions": 1,
            "group.consumer.heartbeat.interval.ms": 250,
        }
        partitions = max(3, round(6 * args.scale))
        with spark_for(args.master, scratch) as spark:
            with local_broker(data_dir, **configs) as broker:
                together(
                    lambda: workload(broker.bootstrap, partitions),
                    lambda: protocols_workload(broker.bootstrap, partitions),
                )
                intervals, totals = unowned_intervals(spark, broker.bootstrap)
            decoded = analyse(spark, data_dir)
    report(args.out, rebalances(decoded), intervals, totals, partitions * len(TOPICS))
    print_table(args.out, "lab05.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
