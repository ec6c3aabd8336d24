"""Lab 04 analysis: availability against durability, by election and min.insync.replicas.

    kafka-ref lab analyse 04 --out /tmp/lab04        # your solution.py
    kafka-ref lab analyse 04 --reference --out /tmp/lab04-reference

The same random fault campaigns run four times in kafka-ref's deterministic cluster
simulator (kafka_ref/sim): clean and unclean leader election, each with
`min.insync.replicas` 1 and 2. Three brokers, RF 3; an acks=all write every 20 ms; a fault
every few hundred milliseconds, drawn from the seed alone so that every setting gets the
same ones: a broker killed (kill -9) or stopped, a dead broker started again, a follower
cut off from the others (it leaves the ISR after replica.lag.time.max.ms), the network
healed. Every leader runs your `can_join_isr` and `out_of_sync_replicas`, the controller
your `elect_leader`.

Every write becomes a row: when it was sent, the partition's condition then (healthy, no
leader, leader dead but not yet noticed, leader cut off, ISR below min.insync.replicas, an
ISR member that cannot keep up), what became of it (acknowledged, the error it got, or no
answer at all), whether it is in the leader's log at the end, and, acknowledged, whether it
was lost. PySpark counts per setting the lost and refused writes, the outcomes by class
and by the condition at sending, and finds the unavailability windows (runs of
consecutive writes that were not acknowledged) with a window function over each run's
writes in time order. The first lost write of each setting is played again, step by step
(the simulator is deterministic: the same seed gives the same run). `lab04.png` and
`lab04.md` answer the handout's questions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from collections import Counter

from kafka_ref.sim import SimCluster
from kafka_ref.sim.cluster import CLIENT
from kafka_ref.tools.lab_analysis import markdown_table, parse_args, print_table, spark_for
from kafka_ref.tools.lab_history import TracedCluster, history_table, until_lost
from kafka_ref.tools.plots import figure

SETTINGS = [(unclean, min_isr) for unclean in (False, True) for min_isr in (1, 2)]
WRITE_EVERY_MS = 20
STEPS = 30

# What became of a write, and what each outcome means for the application.
OUTCOMES = {
    "acknowledged": "the whole ISR had it (acks=all), and at least min.insync.replicas "
    "replicas were in the ISR",
    "LEADER_NOT_AVAILABLE": "no leader for ten retries 50 ms apart: the partition was "
    "offline (clean election waits for an ISR member); never appended",
    "NOT_ENOUGH_REPLICAS": "the ISR was smaller than min.insync.replicas: refused before "
    "the append, never in the log",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "appended, then the ISR shrank below "
    "min.insync.replicas before it was committed: in doubt, it may stay in the log",
    "REQUEST_TIMED_OUT": "appended, but an ISR member did not have it within the request "
    "timeout (1 s here): in doubt",
    "no answer": "the request or its answer was lost: the leader it went to died or was cut "
    "off before answering. This producer has no timeout; a real one gives up after "
    "request.timeout.ms and retries (duplicates without idempotence): in doubt",
}
# The partition's condition when a write was sent, as the controller and the network say.
CONDITIONS = {
    "healthy": "a live, reachable leader; every ISR member alive and reachable from it",
    "ISR member cannot keep up": "an ISR member is dead or cut off: acks=all waits for "
    "it until it leaves the ISR (replica.lag.time.max.ms, 1 s here)",
    "ISR below min.insync.replicas": "a reachable leader with too few ISR members",
    "leader dead, not yet noticed": "the leader died; the controller acts when its session "
    "expires (300 ms here)",
    "leader cut off": "the leader is alive and registered but the client cannot reach it",
    "offline": "no leader: no ISR member is alive (clean election), or no replica at all",
}


def name(unclean: bool, min_isr: int) -> str:
    return f"{'unclean' if unclean else 'clean'}, min.isr {min_isr}"


def condition(cluster: SimCluster, min_isr: int) -> str:
    """The partition's condition now (one of CONDITIONS)."""
    state = cluster.controller.state[(cluster.topic, 0)]
    leader = state.leader
    if leader is None:
        return "offline"
    if not cluster.brokers[leader].alive:
        return "leader dead, not yet noticed"
    if cluster.network.is_cut(leader, CLIENT):
        return "leader cut off"
    if len(state.isr) < min_isr:
        return "ISR below min.insync.replicas"
    followers = [r for r in state.isr if r != leader]
    if any(not cluster.brokers[r].alive or cluster.network.is_cut(leader, r) for r in followers):
        return "ISR member cannot keep up"
    return "healthy"


def play(cluster: SimCluster, seed: int, min_isr: int) -> list[tuple[int, str, object]]:
    """The campaign of `seed`; every write as (sent ms, condition then, Write)."""
    rng = random.Random(seed)
    sent: list[tuple[int, str, object]] = []
    for _ in range(STEPS):
        # every draw is made whatever the cluster's state: the same faults in every setting
        writes = rng.randrange(5, 25)
        fault, broker, kill = rng.random(), rng.randrange(3), rng.random() < 0.5
        for _write in range(writes):
            now, why = cluster.now, condition(cluster, min_isr)
            sent.append((now, why, cluster.produce(b"w%d" % len(sent))))
            cluster.run(WRITE_EVERY_MS)
        alive = cluster.brokers[broker].alive
        if fault < 0.25:
            if alive and broker != cluster.leader():
                cluster.isolate(broker)  # a follower falls behind and leaves the ISR
        elif fault < 0.55:
            if alive:
                (cluster.crash if kill else cluster.stop)(broker)
        elif fault < 0.9:
            if not alive:
                cluster.start(broker)
        else:
            cluster.heal()
    cluster.heal()
    for broker in range(3):
        if not cluster.brokers[broker].alive:
            cluster.start(broker)
    cluster.run(3_000)
    return sent


def campaign(unclean: bool, min_isr: int, seed: int) -> list[tuple]:
    """One run; a row per write:
    (setting, seed, value, sent ms, condition, outcome, offset, in the log, lost)."""
    with SimCluster(
        brokers=3, seed=seed, unclean_leader_election=unclean, min_insync_replicas=min_isr
    ) as cluster:
        sent = play(cluster, seed, min_isr)
        lost = {id(w) for w in cluster.lost_writes()}
        leader = cluster.leader()
        in_log = {r.value for r in cluster.records(leader)} if leader is not None else set()
        setting = name(unclean, min_isr)
        return [
            (
                setting,
                seed,
                w.value.decode(),
                at,
                why,
                "acknowledged" if w.acked else (w.error.name if w.done else "no answer"),
                w.offset,
                w.value in in_log,
                id(w) in lost,
            )
            for at, why, w in sent
        ]


def story(unclean: bool, min_isr: int, seed: int, value: str, offset: int) -> str:
    """The run of `seed` again, step by step, following the lost write `value`."""
    follow = (value.encode(), offset)
    with TracedCluster(
        brokers=3,
        seed=seed,
        unclean_leader_election=unclean,
        min_insync_replicas=min_isr,
        follow=follow,
    ) as cluster:
        play(cluster, seed, min_isr)
        leader = cluster.leader()
        held = {r.offset: r.value for r in cluster.records(leader)}.get(offset)
        held = "nothing" if held is None else held.decode()
        steps, after = until_lost(cluster.steps, follow[0])
    return (
        f"\n## A lost write under {name(unclean, min_isr)}: seed {seed}\n\n"
        f"{value} was acknowledged at offset {offset}; at the end the leader, broker {leader}, "
        f"holds {held} there. The run again, step by step, up to the election of a leader "
        f"that lacks {value} (the other writes are left out; each broker: its role and the "
        f"epoch it knows, LEO, HW, and whether it holds {value} at offset {offset}):\n\n"
        + history_table(steps, brokers=3)
        + (f"\n{after} more events until the end of the run.\n" if after else "")
    )


def analyse(spark, rows: list[tuple]) -> tuple[list, list, list]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    writes = spark.createDataFrame(
        rows,
        "setting string, seed int, value string, sent_ms long, condition string, "
        "outcome string, offset long, in_log boolean, lost boolean",
    ).cache()
    # In time order within a run: a write that is not acknowledged after one that was opens
    # an unavailability window; the window so far is this write's index minus the index of
    # the last acknowledged write before it.
    order = Window.partitionBy("setting", "seed").orderBy("sent_ms")
    upto = order.rowsBetween(Window.unboundedPreceding, 0)
    ok = F.col("outcome") == "acknowledged"
    index = F.row_number().over(order)
    last_ok = F.max(F.when(ok, index)).over(upto)
    marked = writes.withColumn("index", index).withColumn(
        "window", F.when(~ok, F.col("index") - F.coalesce(last_ok, F.lit(0)))
    )
    lost = F.col("lost")
    settings = (
        marked.groupBy("setting")
        .agg(
            F.count("*").alias("writes"),
            F.sum(ok.cast("int")).alias("acked"),
            F.sum(lost.cast("int")).alias("lost"),
            F.countDistinct(F.when(lost, F.col("seed"))).alias("runs_with_loss"),
            F.array_sort(F.collect_set(F.when(lost, F.col("seed")))).alias("seeds_with_loss"),
            F.countDistinct("seed").alias("runs"),
            F.sum((F.col("window") == 1).cast("int")).alias("windows"),
            F.max("window").alias("longest"),
            F.min(F.when(lost, F.struct("seed", "offset", "value"))).alias("first_lost"),
        )
        .orderBy("setting")
        .collect()
    )
    # one pass for both tables: per (setting, outcome, condition), summed here each way
    cells = (
        writes.groupBy("setting", "outcome", "condition")
        .agg(F.count("*").alias("writes"), F.sum(F.col("in_log").cast("int")).alias("in_log"))
        .collect()
    )
    writes.unpersist()
    outcomes, in_log, conditions, acked = Counter(), Counter(), Counter(), Counter()
    for c in cells:
        outcome, condition = (c["setting"], c["outcome"]), (c["setting"], c["condition"])
        outcomes[outcome] += c["writes"]
        in_log[outcome] += c["in_log"]
        conditions[condition] += c["writes"]
        acked[condition] += c["writes"] if c["outcome"] == "acknowledged" else 0
    return (
        settings,
        [
            {"setting": s, "outcome": o, "writes": n, "in_log": in_log[s, o]}
            for (s, o), n in outcomes.items()
        ],
        [
            {"setting": s, "condition": k, "writes": n, "acked": acked[s, k]}
            for (s, k), n in conditions.items()
        ],
    )


def pivot(rows: list, key: str, settings: list[str], cell) -> list[list]:
    """One line per value of `key` (in the order of its legend), one column per setting."""
    found = {(r["setting"], r[key]): r for r in rows}
    legend = OUTCOMES if key == "outcome" else CONDITIONS
    return [
        [value, *(cell(found[(s, value)]) if (s, value) in found else "-" for s in settings)]
        for value in legend
        if any((s, value) in found for s in settings)
    ]


def report(out: str, settings: list, outcomes: list, conditions: list, stories: list) -> None:
    labels = [r["setting"] for r in settings]
    with figure(os.path.join(out, "lab04.png"), 1, 2, size=(12, 4.5)) as (fig, (left, right)):
        left.bar(labels, [r["lost"] for r in settings], color="tab:red")
        left.set(title="Acknowledged (acks=all) writes lost", ylabel="writes")
        right.bar(labels, [100 * (1 - r["acked"] / r["writes"]) for r in settings])
        right.set(title="Writes not acknowledged (unavailable)", ylabel="% of writes")
        for ax in (left, right):
            ax.tick_params(axis="x", labelrotation=15)
        fig.suptitle(f"{settings[0]['runs']} random fault campaigns per setting, 3 brokers, RF 3")
    table = markdown_table(
        [
            "setting",
            "runs",
            "writes",
            "acknowledged",
            "lost",
            "runs with a loss",
            "seeds with a loss",
            "unavailability windows",
            "not acknowledged (s)",
            "longest window (s)",
        ],
        [
            [
                r["setting"],
                r["runs"],
                r["writes"],
                f"{r['acked']} ({r['acked'] / r['writes']:.0%})",
                r["lost"],
                r["runs_with_loss"],
                " ".join(map(str, r["seeds_with_loss"])) or "-",
                r["windows"] or 0,
                f"{(r['writes'] - r['acked']) * WRITE_EVERY_MS / 1000:.1f}",
                f"{(r['longest'] or 0) * WRITE_EVERY_MS / 1000:.1f}",
            ]
            for r in settings
        ],
    )
    table += (
        "\n## What became of the writes\n\nWrites per outcome, and in brackets how many of "
        "them are in the leader's log at the end.\n\n"
    )
    table += markdown_table(
        ["outcome", *labels],
        pivot(outcomes, "outcome", labels, lambda r: f"{r['writes']} ({r['in_log']})"),
    )
    table += "\n" + "".join(f"- **{k}**: {v}.\n" for k, v in OUTCOMES.items())
    table += (
        "\n## The partition when a write was sent\n\nWrites sent in each condition, and the "
        "share of them acknowledged.\n\n"
    )
    table += markdown_table(
        ["condition", *labels],
        pivot(
            conditions,
            "condition",
            labels,
            lambda r: f"{r['writes']} ({r['acked'] / r['writes']:.0%})",
        ),
    )
    table += "\n" + "".join(f"- **{k}**: {v}.\n" for k, v in CONDITIONS.items())
    table += "".join(stories)
    with open(os.path.join(out, "lab04.md"), "w") as f:
        f.write("# Lab 04: availability against durability\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    runs = max(3, int(20 * args.scale))
    rows = [
        row
        for unclean, min_isr in SETTINGS
        for seed in range(runs)
        for row in campaign(unclean, min_isr, seed)
    ]
    with tempfile.TemporaryDirectory() as scratch, spark_for(args.master, scratch) as spark:
        settings, outcomes, conditions = analyse(spark, rows)
    stories = [
        story(unclean, min_isr, lost["seed"], lost["value"], lost["offset"])
        for unclean, min_isr in SETTINGS
        for r in settings
        if r["setting"] == name(unclean, min_isr) and (lost := r["first_lost"]) is not None
    ]
    report(args.out, settings, outcomes, conditions, stories)
    print_table(args.out, "lab04.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
