"""Lab 04 analysis: availability against durability, by election and min.insync.replicas.

    kafka-ref lab analyse 04 --out /tmp/lab04        # your solution.py
    kafka-ref lab analyse 04 --reference --out /tmp/lab04-reference

The same random fault campaigns run four times in kafka-ref's deterministic cluster
simulator (kafka_ref/sim): clean and unclean leader election, each with
`min.insync.replicas` 1 and 2. Three brokers, RF 3; an acks=all write every 20 ms; a fault
every few hundred milliseconds: a follower cut off from the others (it leaves the ISR
after replica.lag.time.max.ms), the leader killed (kill -9) or stopped, a broker started
again, the network healed. Every leader runs your `can_join_isr` and
`out_of_sync_replicas`, the controller your `elect_leader`.

Every write becomes a row: when it was sent, what became of it (acknowledged, or the error
it got) and whether, acknowledged, it was lost by the end. PySpark counts per setting the
lost and refused writes, and finds the unavailability windows (runs of consecutive writes
that were not acknowledged) with a window function over each run's writes in time order.
`lab04.png` and `lab04.md` answer the handout's questions.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile

from kafka_ref.sim import SimCluster
from kafka_ref.tools.lab_analysis import markdown_table, parse_args, print_table, spark_for
from kafka_ref.tools.plots import figure

SETTINGS = [(unclean, min_isr) for unclean in (False, True) for min_isr in (1, 2)]
WRITE_EVERY_MS = 20


def name(unclean: bool, min_isr: int) -> str:
    return f"{'unclean' if unclean else 'clean'}, min.isr {min_isr}"


def campaign(unclean: bool, min_isr: int, seed: int, steps: int) -> list[tuple]:
    """One run; a row per write: (setting, seed, sent ms, outcome, lost)."""
    rng = random.Random(seed)  # the same faults for every setting
    sent: list[tuple[int, object]] = []
    with SimCluster(brokers=3, seed=seed, unclean_leader_election=unclean,
                    min_insync_replicas=min_isr) as cluster:  # fmt: skip
        for _ in range(steps):
            for _write in range(rng.randrange(5, 25)):
                sent.append((cluster.now, cluster.produce(b"s%d-%d" % (seed, len(sent)))))
                cluster.run(WRITE_EVERY_MS)
            fault, broker = rng.random(), rng.randrange(3)
            alive = cluster.brokers[broker].alive
            leader = cluster.leader()
            if fault < 0.3 and alive and broker != leader:
                cluster.isolate(broker)  # a follower falls behind and leaves the ISR
            elif fault < 0.5 and leader is not None:
                (cluster.crash if rng.random() < 0.5 else cluster.stop)(leader)
            elif fault < 0.8 and not alive:
                cluster.start(broker)
            elif fault < 0.9:
                cluster.heal()
        cluster.heal()
        for broker in range(3):
            if not cluster.brokers[broker].alive:
                cluster.start(broker)
        cluster.run(3_000)
        lost = {id(w) for w in cluster.lost_writes()}
        setting = name(unclean, min_isr)
        return [
            (setting, seed, at, "acked" if w.acked else (w.error.name if w.done else "no answer"),
             id(w) in lost)
            for at, w in sent
        ]  # fmt: skip


def analyse(spark, rows: list[tuple]) -> tuple[list, list]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    writes = spark.createDataFrame(
        rows, "setting string, seed int, sent_ms long, outcome string, lost boolean"
    )
    # In time order within a run: a write that is not acknowledged after one that was opens
    # an unavailability window; the window so far is this write's index minus the index of
    # the last acknowledged write before it. One window pass, then one aggregation.
    order = Window.partitionBy("setting", "seed").orderBy("sent_ms")
    upto = order.rowsBetween(Window.unboundedPreceding, 0)
    ok = F.col("outcome") == "acked"
    index = F.row_number().over(order)
    last_ok = F.max(F.when(ok, index)).over(upto)
    marked = writes.withColumn("index", index).withColumn(
        "window", F.when(~ok, F.col("index") - F.coalesce(last_ok, F.lit(0)))
    )
    grouped = (
        marked.groupBy("setting", "outcome")
        .agg(
            F.count("*").alias("writes"),
            F.sum(F.col("lost").cast("int")).alias("lost"),
            F.collect_set(F.when(F.col("lost"), F.col("seed"))).alias("seeds_with_loss"),
            F.collect_set("seed").alias("seeds"),
            F.sum((F.col("window") == 1).cast("int")).alias("windows"),
            F.max("window").alias("longest"),
        )
        .collect()
    )
    per_setting: dict[str, dict] = {}
    for r in grouped:
        s = per_setting.setdefault(r["setting"], {
            "setting": r["setting"], "writes": 0, "acked": 0, "lost": 0, "loss": set(),
            "runs": set(), "windows": 0, "unavailable_ms": 0, "longest_ms": 0,
        })  # fmt: skip
        s["writes"] += r["writes"]
        s["lost"] += r["lost"] or 0
        s["loss"] |= set(r["seeds_with_loss"])
        s["runs"] |= set(r["seeds"])
        if r["outcome"] == "acked":
            s["acked"] += r["writes"]
        else:  # writes go out every WRITE_EVERY_MS: a window of n writes lasts n times that
            s["windows"] += r["windows"]
            s["unavailable_ms"] += r["writes"] * WRITE_EVERY_MS
            s["longest_ms"] = max(s["longest_ms"], r["longest"] * WRITE_EVERY_MS)
    results = []
    for s in sorted(per_setting.values(), key=lambda s: s["setting"]):
        results.append(s | {"runs": len(s["runs"]), "runs_with_loss": len(s["loss"])})
    errors = sorted((r["setting"], r["outcome"], r["writes"]) for r in grouped
                    if r["outcome"] != "acked")  # fmt: skip
    return results, [{"setting": a, "outcome": b, "count": c} for a, b, c in errors]


def report(out: str, results: list, errors: list) -> None:
    labels = [r["setting"] for r in results]
    with figure(os.path.join(out, "lab04.png"), 1, 2, size=(12, 4.5)) as (fig, (left, right)):
        left.bar(labels, [r["lost"] for r in results], color="tab:red")
        left.set(title="Acknowledged (acks=all) writes lost", ylabel="writes")
        right.bar(labels, [100 * (1 - r["acked"] / r["writes"]) for r in results])
        right.set(title="Writes not acknowledged (unavailable)", ylabel="% of writes")
        for ax in (left, right):
            ax.tick_params(axis="x", labelrotation=15)
        fig.suptitle(f"{results[0]['runs']} random fault campaigns per setting, 3 brokers, RF 3")
    table = markdown_table(
        ["setting", "runs", "writes", "acknowledged", "lost", "runs with a loss",
         "unavailability windows", "unavailable (s)", "longest window (s)"],
        [[r["setting"], r["runs"], r["writes"], r["acked"], r["lost"], r["runs_with_loss"],
          r["windows"] or 0, f"{(r['unavailable_ms'] or 0) / 1000:.1f}",
          f"{(r['longest_ms'] or 0) / 1000:.1f}"] for r in results],
    )  # fmt: skip
    table += "\n" + markdown_table(
        ["setting", "why a write was not acknowledged", "writes"],
        [[e["setting"], e["outcome"], e["count"]] for e in errors],
    )
    with open(os.path.join(out, "lab04.md"), "w") as f:
        f.write("# Lab 04: availability against durability\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    runs = max(3, int(20 * args.scale))
    rows = [row for unclean, min_isr in SETTINGS for seed in range(runs)
            for row in campaign(unclean, min_isr, seed, 30)]  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch, spark_for(args.master, scratch) as spark:
        results, errors = analyse(spark, rows)
    report(args.out, results, errors)
    print_table(args.out, "lab04.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
