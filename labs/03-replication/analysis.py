"""Lab 03 analysis: acknowledged writes lost under each truncation rule, in the simulator.

    kafka-ref lab analyse 03 --out /tmp/lab03        # your solution.py
    kafka-ref lab analyse 03 --reference --out /tmp/lab03-reference

The same random campaigns run twice in kafka-ref's deterministic cluster simulator
(kafka_ref/sim): 3 brokers, RF 3, acks=all and acks=1 writes, and a fault every few
hundred milliseconds (kill -9, clean stop, restart, network cut), once with
`replica.truncation=high-watermark` (the rule before Kafka 0.11) and once with
`leader-epoch` (your `truncation_step` and your `leader_high_watermark`). Every acknowledged
(acks=all) write becomes a row, lost or kept; PySpark sums them per rule, and
`lab03.png` and `lab03.md` answer the handout's questions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile

from kafka_ref.sim import SimCluster
from kafka_ref.tools.lab_analysis import markdown_table, parse_args, print_table, spark_for
from kafka_ref.tools.plots import figure

RULES = ("high-watermark", "leader-epoch")
# Processes die (kill -9), stop, restart at once, or lose the network; machines keep their
# page cache. (A power loss of every ISR replica at once loses what none had fsynced, under
# any rule: Kafka's durability is replication, not fsync, so that is not the rules' test.)
FAULTS = ("crash", "stop", "restart", "isolate")


def campaign(rule: str, seed: int, steps: int) -> list[tuple]:
    """One run; a row per acknowledged write: (rule, seed, acks, lost, last fault)."""
    rng = random.Random(seed)
    last_fault = "none"
    with SimCluster(brokers=3, seed=seed, truncation=rule) as cluster:
        for step in range(steps):
            for _ in range(rng.randrange(1, 4)):
                cluster.produce(b"s%d-%d" % (seed, step), acks=rng.choice(["all", 1]))
            cluster.run(rng.choice([5, 30, 100, 400]))
            if rng.random() < 0.4:
                last_fault = rng.choice(FAULTS)
                broker = rng.choice([cluster.leader(), *range(3)])
                if broker is None:
                    continue
                alive = cluster.brokers[broker].alive
                if last_fault == "crash" and alive:
                    cluster.crash(broker)
                elif last_fault == "stop" and alive:
                    cluster.stop(broker)
                elif last_fault == "restart" and alive:
                    cluster.restart(broker)
                elif last_fault == "isolate" and alive:
                    cluster.isolate(broker)
                elif not alive:
                    cluster.start(broker)
        cluster.heal()
        for broker in range(3):
            if not cluster.brokers[broker].alive:
                cluster.start(broker)
        cluster.run(3_000)
        lost = {id(w) for w in cluster.lost_writes()}
        diverged = bool(cluster.divergence())
        return [
            (rule, seed, str(w.acks), id(w) in lost, diverged, last_fault)
            for w in cluster.acked_writes
        ]


def analyse(spark, rows: list[tuple]) -> list:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        rows, "rule string, seed int, acks string, lost boolean, diverged boolean, fault string"
    )
    return (
        frame.groupBy("rule")
        .agg(
            F.count("*").alias("acked"),
            F.sum(F.col("lost").cast("int")).alias("lost"),
            F.countDistinct(F.when(F.col("lost"), F.col("seed"))).alias("runs_with_loss"),
            F.countDistinct(F.when(F.col("diverged"), F.col("seed"))).alias("runs_diverged"),
            F.countDistinct("seed").alias("runs"),
        )
        .orderBy("rule")
        .collect()
    )


def report(out: str, results: list) -> None:
    with figure(os.path.join(out, "lab03.png"), size=(7, 4)) as (_fig, ax):
        rules = [r["rule"] for r in results]
        width = 0.35
        ax.bar([i - width / 2 for i in range(len(rules))], [r["runs_with_loss"] for r in results],
               width, label="runs that lost an acked write")  # fmt: skip
        ax.bar([i + width / 2 for i in range(len(rules))], [r["runs_diverged"] for r in results],
               width, label="runs whose replicas diverged")  # fmt: skip
        ax.set_xticks(range(len(rules)), rules)
        ax.set(title=f"{results[0]['runs']} random fault campaigns per rule", ylabel="runs")
        ax.legend()
    table = markdown_table(
        ["replica.truncation", "runs", "acked writes", "lost", "runs with a loss", "runs diverged"],
        [[r["rule"], r["runs"], r["acked"], r["lost"], r["runs_with_loss"], r["runs_diverged"]]
         for r in results],
    )  # fmt: skip
    with open(os.path.join(out, "lab03.md"), "w") as f:
        f.write("# Lab 03: truncation rules under faults\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    runs = max(4, int(40 * args.scale))
    rows = [row for rule in RULES for seed in range(runs) for row in campaign(rule, seed, 40)]
    with tempfile.TemporaryDirectory() as scratch, spark_for(args.master, scratch) as spark:
        results = analyse(spark, rows)
    report(args.out, results)
    print_table(args.out, "lab03.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
