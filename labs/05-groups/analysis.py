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
the moving ones under the cooperative protocol (KIP-429). `lab05.png` and `lab05.md` answer
the handout's questions.
"""

from __future__ import annotations

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


def report(out: str, steps: dict[str, list[dict]]) -> None:
    with figure(os.path.join(out, "lab05.png"), 1, 2, size=(11, 4)) as (_fig, (left, right)):
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
    with open(os.path.join(out, "lab05.md"), "w") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        # No compaction: every generation's record must still be in __consumer_offsets;
        # one partition of it (Kafka's default is 50) holds all three groups.
        configs = {
            "group.initial.rebalance.delay.ms": 0,
            "log.cleaner.enable": "false",
            "offsets.topic.num.partitions": 1,
        }
        with local_broker(data_dir, **configs) as broker:
            workload(broker.bootstrap, max(3, round(6 * args.scale)))
        with spark_for(args.master, scratch) as spark:
            decoded = analyse(spark, data_dir)
    report(args.out, rebalances(decoded))
    print_table(args.out, "lab05.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
