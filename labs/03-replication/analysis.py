"""Lab 03 analysis: acknowledged writes lost under each truncation rule, in the simulator.

    kafka-ref lab analyse 03 --out /tmp/lab03        # your solution.py
    kafka-ref lab analyse 03 --reference --out /tmp/lab03-reference

The same random campaigns run in kafka-ref's deterministic cluster simulator
(kafka_ref/sim): 3 brokers, RF 3, acks=all and acks=1 writes, and a fault every few
hundred milliseconds (kill -9, clean stop, restart, network cut), once with
`replica.truncation=high-watermark` (the rule before Kafka 0.11) and once with
`leader-epoch` (your `truncation_step` and your `leader_high_watermark`); a third time
with `leader-epoch` and power losses of all three brokers at once among the faults. Every
acknowledged (acks=all) write becomes a row, lost or kept; PySpark sums them per setting.
The first run that lost a write under each rule is played again, step by step (the
simulator is deterministic: the same seed gives the same run), and its history printed:
who led which epoch, what each replica held, every truncation and why.

Then a scripted sequence of several unclean leader changes (KAFKA-6361's kind) runs with
your `truncation_step` twice: with the followers of Kafka 2.7+ (they also truncate when a
fetch is answered with a diverging epoch, KIP-595's check) and with those of Kafka 2.0 to
2.6 (only OffsetsForLeaderEpoch answers truncate). PySpark reads the two replicas' segment
files (`kafka_ref_segments`) and joins them on the offset: the first offset where they
differ, if any. `lab03.png` and `lab03.md` answer the handout's questions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile

from kafka_ref.sim import SimCluster
from kafka_ref.tools.lab_analysis import markdown_table, parse_args, print_table, spark_for
from kafka_ref.tools.lab_history import TracedCluster, history_table, until_lost
from kafka_ref.tools.plots import figure

# Processes die (kill -9), stop, restart at once, or lose the network; machines keep their
# page cache. The third setting adds power losses of every broker at once.
FAULTS = ("crash", "stop", "restart", "isolate")
SETTINGS = [
    ("high-watermark", False),
    ("leader-epoch", False),
    ("leader-epoch", True),
]
STEPS = 40


def setting_name(rule: str, power_losses: bool) -> str:
    return f"{rule}, power losses" if power_losses else rule


def play(cluster: SimCluster, seed: int, power_losses: bool) -> None:
    """The campaign of `seed`: writes and faults, then every broker back and 3 s to settle."""
    rng = random.Random(seed)
    faults = (*FAULTS, "power loss") if power_losses else FAULTS
    written = 0
    for _step in range(STEPS):
        for _ in range(rng.randrange(1, 4)):
            cluster.produce(b"w%d" % written, acks=rng.choice(["all", 1]))
            written += 1
        cluster.run(rng.choice([5, 30, 100, 400]))
        if rng.random() < 0.4:
            fault = rng.choice(faults)
            broker = rng.choice([cluster.leader(), *range(3)])
            if broker is None:
                continue
            alive = cluster.brokers[broker].alive
            if fault == "power loss":
                for b in range(3):
                    if cluster.brokers[b].alive:
                        cluster.crash(b, lose_unflushed=True)
            elif not alive:
                cluster.start(broker)
            elif fault == "crash":
                cluster.crash(broker)
            elif fault == "stop":
                cluster.stop(broker)
            elif fault == "restart":
                cluster.restart(broker)
            elif fault == "isolate":
                cluster.isolate(broker)
    cluster.heal()
    for broker in range(3):
        if not cluster.brokers[broker].alive:
            cluster.start(broker)
    cluster.run(3_000)


def campaign(rule: str, power_losses: bool, seed: int) -> list[tuple]:
    """One run; a row per acknowledged (acks=all) write:
    (setting, seed, value, offset, lost, diverged)."""
    with SimCluster(brokers=3, seed=seed, truncation=rule) as cluster:
        play(cluster, seed, power_losses)
        lost = {id(w) for w in cluster.lost_writes()}
        diverged = bool(cluster.divergence())
        name = setting_name(rule, power_losses)
        return [
            (name, seed, w.value.decode(), w.offset, id(w) in lost, diverged)
            for w in cluster.acked_writes
        ]


def story(rule: str, seed: int, value: str, offset: int) -> str:
    """The run of `seed` again, step by step, following the write `value` at `offset`."""
    follow = (value.encode(), offset)
    with TracedCluster(brokers=3, seed=seed, truncation=rule, follow=follow) as cluster:
        play(cluster, seed, power_losses=False)
        leader = cluster.leader()
        held = {r.offset: r.value for r in cluster.records(leader)}.get(offset)
        held = "nothing" if held is None else held.decode()
        steps, after = until_lost(cluster.steps, follow[0])
    return (
        f"\n## A lost write under {rule}: seed {seed}\n\n"
        f"{value} was acknowledged at offset {offset}; at the end the leader, broker {leader}, "
        f"holds {held} there. The run again, step by step, up to the election of a leader "
        f"that lacks {value} (each broker: its role and the epoch it knows, LEO, HW, and "
        f"whether it holds {value} at offset {offset}):\n\n"
        + history_table(steps, brokers=3)
        + (f"\n{after} more events until the end of the run.\n" if after else "")
    )


# ---------------------------------------------------------------- several unclean changes
A, B = 0, 1


def unclean_changes(data_dir: str, truncate_on_fetch: bool) -> list[str]:
    """Two brokers, unclean election on, acks=1; A and B each lead twice, each time without
    the records the other wrote. Returns the run's truncations; the logs stay in
    `data_dir` (broker-0/, broker-1/) for Spark.

    A writes a0-a9 (both have them), then a10-a14 while B is cut off. A dies: B leads and
    writes b10-b19. B stops: A comes back alone and leads (unclean), writes a15-a17. A
    stops: B comes back alone and leads (unclean), writes b20-b22. A starts and follows B:
    its epoch 0 goes to 15 where B's ends at 10, and B never had A's last epoch.
    """
    with TracedCluster(
        brokers=2,
        seed=4,
        unclean_leader_election=True,
        data_dir=data_dir,
        truncate_on_fetch=truncate_on_fetch,
    ) as cluster:

        def write(prefix: bytes, offsets: range) -> None:
            for i in offsets:
                cluster.produce(prefix + b"%d" % i, acks=1)
            cluster.run(200)

        write(b"a", range(10))
        cluster.isolate(B)
        write(b"a", range(10, 15))
        cluster.crash(A)
        cluster.heal()
        cluster.run(1_000)
        write(b"b", range(10, 20))
        cluster.stop(B)
        cluster.run(100)
        cluster.start(A)
        cluster.run(100)
        write(b"a", range(15, 18))
        cluster.stop(A)
        cluster.run(100)
        cluster.start(B)
        cluster.run(100)
        write(b"b", range(20, 23))
        cluster.start(A)
        cluster.run(1_000)
        assert cluster.leader() == B, cluster.describe()
        return [f"{s.ms} ms: {s.event}" for s in cluster.steps if " truncates " in s.event]


def compare_logs(spark, data_dirs: dict[str, str]) -> dict[str, list]:
    """Per run (name -> its data directory), both replicas' records side by side by offset
    (a full outer join of their segment files), with the epoch of each record's batch."""
    from pyspark.sql import functions as F

    def replica(broker: int, name: str):
        frames = [
            spark.read.format("kafka_ref_segments")
            .load(os.path.join(data_dir, f"broker-{broker}"))
            .withColumn("run", F.lit(run))
            for run, data_dir in data_dirs.items()
        ]
        union = frames[0]
        for frame in frames[1:]:
            union = union.unionByName(frame)
        return union.select(
            "run",
            "offset",
            F.col("value").cast("string").alias(f"{name}_value"),
            F.col("partitionLeaderEpoch").alias(f"{name}_epoch"),
        )

    rows = replica(A, "a").join(replica(B, "b"), ["run", "offset"], "full")
    runs: dict[str, list] = {run: [] for run in data_dirs}
    for r in rows.orderBy("run", "offset").collect():
        runs[r["run"]].append(r)
    return runs


def runs_of(rows: list, side: str) -> str:
    """A replica's log as runs of one epoch: `0-9 a0..a9 (epoch 0), 10-14 ...`."""
    runs: list[list] = []
    for r in rows:
        value, epoch = r[f"{side}_value"], r[f"{side}_epoch"]
        if value is None:
            continue
        if runs and runs[-1][3] == epoch and runs[-1][1] == r["offset"] - 1:
            runs[-1][1], runs[-1][4] = r["offset"], value
        else:
            runs.append([r["offset"], r["offset"], value, epoch, value])
    return ", ".join(f"{a}-{b} {v}..{w} (epoch {e})" for a, b, v, e, w in runs)


def unclean_report(spark, scratch: str) -> list[dict]:
    """The unclean sequence with each kind of follower, and how the two logs compare."""
    modes = {
        "Kafka 2.7+: truncate on OffsetsForLeaderEpoch and on fetch": True,
        "Kafka 2.0-2.6: truncate on OffsetsForLeaderEpoch only": False,
    }
    data_dirs = {name: os.path.join(scratch, f"unclean-{on}") for name, on in modes.items()}
    truncations = {name: unclean_changes(data_dirs[name], on) for name, on in modes.items()}
    compared = compare_logs(spark, data_dirs)
    results = []
    for name in modes:
        rows = compared[name]
        differ = [r for r in rows if r["a_value"] != r["b_value"]]
        first = differ[0] if differ else None
        results.append(
            {
                "followers": name,
                "truncations": truncations[name],
                "first_difference": f"offset {first['offset']}: A {first['a_value']}, "
                f"B {first['b_value']}"
                if first
                else "none: identical",
                "differ": len(differ),
                "a": runs_of(rows, "a"),
                "b": runs_of(rows, "b"),
            }
        )
    return results


# ---------------------------------------------------------------------------- Spark
def analyse(spark, rows: list[tuple]) -> list:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        rows, "setting string, seed int, value string, offset long, lost boolean, diverged boolean"
    )
    lost = F.col("lost")
    return (
        frame.groupBy("setting")
        .agg(
            F.count("*").alias("acked"),
            F.sum(lost.cast("int")).alias("lost"),
            F.countDistinct(F.when(lost, F.col("seed"))).alias("runs_with_loss"),
            F.array_sort(F.collect_set(F.when(lost, F.col("seed")))).alias("seeds_with_loss"),
            F.countDistinct(F.when(F.col("diverged"), F.col("seed"))).alias("runs_diverged"),
            F.countDistinct("seed").alias("runs"),
            # the first lost write of the first run that lost one: (seed, offset, value)
            F.min(F.when(lost, F.struct("seed", "offset", "value"))).alias("first_lost"),
        )
        .orderBy("setting")
        .collect()
    )


def report(out: str, results: list, stories: list[str], unclean: list[dict]) -> None:
    with figure(os.path.join(out, "lab03.png"), size=(8, 4)) as (_fig, ax):
        names = [r["setting"] for r in results]
        width = 0.35
        ax.bar(
            [i - width / 2 for i in range(len(names))],
            [r["runs_with_loss"] for r in results],
            width,
            label="runs that lost an acked write",
        )
        ax.bar(
            [i + width / 2 for i in range(len(names))],
            [r["runs_diverged"] for r in results],
            width,
            label="runs whose replicas diverged",
        )
        ax.set_xticks(range(len(names)), names)
        ax.set(title=f"{results[0]['runs']} random fault campaigns per setting", ylabel="runs")
        ax.legend()
    table = markdown_table(
        [
            "replica.truncation",
            "runs",
            "acked writes",
            "lost",
            "runs with a loss",
            "seeds with a loss",
            "runs diverged",
        ],
        [
            [
                r["setting"],
                r["runs"],
                r["acked"],
                r["lost"],
                r["runs_with_loss"],
                " ".join(map(str, r["seeds_with_loss"])) or "-",
                r["runs_diverged"],
            ]
            for r in results
        ],
    )
    table += "".join(stories) or "\nNo setting lost an acknowledged write.\n"
    table += (
        "\n## Several unclean leader changes, with your truncation_step\n\n"
        "Broker A (0) and broker B (1) each lead twice, each time without what the other "
        "wrote (see `unclean_changes`); at the end B leads and A follows it.\n\n"
    )
    table += markdown_table(
        ["followers", "offsets that differ", "first difference", "truncations of A"],
        [
            [
                u["followers"],
                u["differ"],
                u["first_difference"],
                "; ".join(u["truncations"]) or "none",
            ]
            for u in unclean
        ],
    )
    for u in unclean:
        table += f"\n{u['followers']}:\n\n- A: {u['a']}\n- B: {u['b']}\n"
    with open(os.path.join(out, "lab03.md"), "w") as f:
        f.write("# Lab 03: truncation rules under faults\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    runs = max(10, int(40 * args.scale))
    rows = [
        row
        for rule, power in SETTINGS
        for seed in range(runs)
        for row in campaign(rule, power, seed)
    ]
    with tempfile.TemporaryDirectory() as scratch, spark_for(args.master, scratch) as spark:
        results = analyse(spark, rows)
        unclean = unclean_report(spark, scratch)
    stories = [
        story(
            r["setting"],
            r["first_lost"]["seed"],
            r["first_lost"]["value"],
            r["first_lost"]["offset"],
        )
        for r in results
        if r["first_lost"] is not None and "power" not in r["setting"]
    ]
    report(args.out, results, stories, unclean)
    print_table(args.out, "lab03.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
