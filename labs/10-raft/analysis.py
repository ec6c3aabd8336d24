"""Lab 10 analysis: how long KRaft's quorum goes without a leader, and why.

    kafka-ref lab analyse 10 --out /tmp/lab10        # your solution.py
    kafka-ref lab analyse 10 --reference --out /tmp/lab10-reference

Seeded runs of kafka-ref's deterministic Raft simulator (kafka_ref/sim/raft_cluster.py):
voters on real logs, the application appending a batch to the leader every 25 ms, and the
leader killed (a power loss) every second or so and started again a few hundred ms later.
Every voter decides votes with your `can_grant_vote` and truncates with your
`truncation_offset`. The simulator's timeouts are Kafka's divided by ten or more: an
election timeout of 100 ms (a wait drawn from [100, 200) ms), a fetch timeout of 200 ms.

One setting changes one thing from the baseline (three voters, Kafka's jitter, a perfect
network, no other crash): the random part of the election timeout (`election_jitter_ms`:
0, 2, 10, 25 ms, and Kafka's 100 ms; the experiment of the Raft paper's Figure 16), the
share of messages lost (5%, 20%), the chance that a node crashes after handling a message
(on top of the leader's killings), or five voters instead of three.

Each run is watched every millisecond of simulated time: who leads which epoch, and the
high watermark (the largest of the nodes', a commit each time it moves). Each loss of a
leader (it crashed, killed or not) becomes a row: when it was lost, when a node led a
later epoch (the **election time**), how many epochs that took (more than one: a split or
failed election), and when the quorum committed again (the time **without a leader able to
commit**). PySpark aggregates them per setting, and finds the **unavailable windows**,
stretches of more than 100 ms without a commit, with a window function over each run's
commits in time order. The slowest election of the settings with the least jitter is told
step by step from its seed (the simulator is deterministic: the same seed gives the same
run). `lab10.png` and `lab10.md` answer the handout's questions.
"""

from __future__ import annotations

import dataclasses
import os
import random
import sys
import tempfile

from kafka_ref.sim.raft_cluster import (
    SIM_QUORUM_CONFIG,
    RaftSimConfig,
    RaftSimulation,
    scratch_directory,
)
from kafka_ref.tools.lab_analysis import markdown_table, parse_args, print_table, spark_for
from kafka_ref.tools.plots import figure

RUN_MS = 15_000  # simulated time per run
CALM_MS = 2_000  # no killing in the last CALM_MS: every election started ends
WINDOW_MS = 100  # a gap between commits longer than this is an unavailable window
TIMEOUT_MS = SIM_QUORUM_CONFIG.election_timeout_ms


@dataclasses.dataclass(frozen=True)
class Setting:
    factor: str  # what it changes from the baseline
    name: str
    voters: int = 3
    jitter_ms: int | None = None  # None: Kafka's, the election timeout itself
    drop_rate: float = 0.0
    crash_rate: float = 0.0

    def config(self) -> RaftSimConfig:
        quorum = dataclasses.replace(SIM_QUORUM_CONFIG, election_jitter_ms=self.jitter_ms)
        return RaftSimConfig(drop_rate=self.drop_rate, crash_rate=self.crash_rate, quorum=quorum)


BASELINE = Setting("baseline", f"baseline: jitter {TIMEOUT_MS} ms (Kafka's)")
SETTINGS = [
    *(Setting("jitter", f"jitter {j} ms", jitter_ms=j) for j in (0, 2, 10, 25)),
    BASELINE,
    *(Setting("message loss", f"{d:.0%} of messages lost", drop_rate=d) for d in (0.05, 0.2)),
    *(Setting("crashes", f"crash rate {c}", crash_rate=c) for c in (0.002, 0.01)),
    Setting("voters", "5 voters", voters=5),
]
JITTER = [s for s in SETTINGS if s.factor == "jitter"] + [BASELINE]


class Watch:
    """Looks at the simulation after every millisecond; kills the leader from time to time
    and records every election that follows a leader's loss."""

    def __init__(self, sim: RaftSimulation, setting: Setting, seed: int) -> None:
        self.sim, self.setting, self.seed = sim, setting, seed
        self.rng = random.Random(seed)  # when to kill, and how long the node stays down
        self.leader: int | None = None
        self.epoch = -1
        self.committed = 0  # the largest high watermark seen
        self.commits: list[int] = []  # when it moved
        self.election: dict | None = None  # under way since a leader was lost
        self.elections: list[dict] = []
        self.kill_at: int | None = None
        self.deposed = 0  # leaders replaced while still up (resigned, or a later epoch won)

    def tick(self) -> None:
        sim, now = self.sim, self.sim.clock.milliseconds()
        leader = sim.leader()
        epoch = sim.nodes[leader].client.epoch if leader is not None else -1
        hw = max((n.client.high_watermark for n in sim.nodes.values() if n.up), default=0)
        if hw > self.committed:
            self.committed = hw
            self.commits.append(now)
        election = self.election
        if election is None and self.leader is not None and not sim.nodes[self.leader].up:
            # the setting's crash rate struck the leader (a killing starts its own election)
            election = self.election = {"cause": "crashed", "lost_epoch": self.epoch, "loss": now}
            self.kill_at = None
        if election is not None:
            if "elected" not in election and epoch > election["lost_epoch"]:
                election |= {"elected": now, "new_epoch": epoch, "mark": self.committed}
            if "elected" in election and self.committed > election["mark"]:
                election["recovered"] = now
                self.elections.append(election)
                self.election = None
        elif leader is not None and self.leader is not None and epoch > self.epoch:
            self.deposed += 1
        if leader is not None and epoch >= self.epoch:
            self.leader, self.epoch = leader, epoch
        self.maybe_kill(now, leader)

    def maybe_kill(self, now: int, leader: int | None) -> None:
        """Once the leader has committed in its epoch, kill it 300-700 ms later; it comes
        back 100-400 ms after that."""
        if self.election is not None or leader is None or now > RUN_MS - CALM_MS:
            return
        if self.kill_at is None:
            if self.commits and self.commits[-1] == now:
                self.kill_at = now + self.rng.randint(300, 700)
            return
        if now >= self.kill_at:
            self.sim.crash(leader)
            back = self.rng.randint(100, 400)
            self.sim.scheduler.schedule(back / 1000, lambda: self.sim.start(leader))
            self.kill_at = None
            self.election = {"cause": "killed", "lost_epoch": self.epoch, "loss": now}


def campaign(setting: Setting, seed: int) -> tuple[list[tuple], list[tuple], tuple]:
    """One run: (its elections, its commits, (setting, seed, deposed leaders))."""
    with scratch_directory() as directory:
        sim = RaftSimulation(directory, voters=setting.voters, seed=seed, config=setting.config())
        watch = Watch(sim, setting, seed)
        while sim.clock.milliseconds() < RUN_MS:
            sim.scheduler.advance(1)
            watch.tick()
        sim.check()  # log matching across the logs, as every event was checked on the way
        for node in sim.voter_ids:
            sim.crash(node)  # closes its files
    elections = [
        (
            setting.name,
            seed,
            e["cause"],
            e["lost_epoch"],
            e["new_epoch"],
            e["loss"],
            e["elected"],
            e["recovered"],
        )
        for e in watch.elections
    ]
    # the run's start and end bound its first and last window: no commit at all is one
    # window as long as the run
    commits = [(setting.name, seed, ms) for ms in [0, *watch.commits, RUN_MS]]
    return elections, commits, (setting.name, seed, watch.deposed)


def story(setting: Setting, seed: int, loss_ms: int, recovered_ms: int) -> str:
    """The run of `seed` again, and what happened from the loss to the first commit."""
    with scratch_directory() as directory:
        sim = RaftSimulation(directory, voters=setting.voters, seed=seed, config=setting.config())
        watch = Watch(sim, setting, seed)
        while sim.clock.milliseconds() <= recovered_ms:
            sim.scheduler.advance(1)
            watch.tick()
        for node in sim.voter_ids:
            sim.crash(node)
    lines = [line for line in sim.history if loss_ms - 5 <= int(line.split()[0]) <= recovered_ms]
    return (
        f"\n## The slowest election under {setting.name}: seed {seed}\n\n"
        f"The leader was lost at {loss_ms} ms and the quorum committed again at "
        f"{recovered_ms} ms. What the simulator recorded in between (ms, event; each state "
        f"is a node's new epoch state):\n\n```\n" + "\n".join(lines) + "\n```\n"
    )


def analyse(spark, elections: list, commits: list, runs: list) -> tuple[list, dict]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    lost = spark.createDataFrame(
        elections,
        "setting string, seed int, cause string, lost_epoch int, new_epoch int, "
        "loss_ms long, elected_ms long, recovered_ms long",
    ).select(
        "setting",
        "seed",
        "cause",
        (F.col("elected_ms") - F.col("loss_ms")).alias("election"),
        (F.col("recovered_ms") - F.col("loss_ms")).alias("unavailable"),
        (F.col("new_epoch") - F.col("lost_epoch")).alias("epochs"),
        "loss_ms",
        "recovered_ms",
    )
    per_setting = (
        lost.groupBy("setting")
        .agg(
            F.count("*").alias("elections"),
            F.percentile_approx("election", [0.5, 0.9, 0.99], 10_000).alias("election_p"),
            F.max("election").alias("election_max"),
            F.avg("epochs").alias("epochs"),
            F.avg((F.col("epochs") > 1).cast("int")).alias("split"),
            F.percentile_approx("unavailable", [0.5, 0.99], 10_000).alias("unavailable_p"),
            F.sort_array(F.collect_list("election")).alias("times"),
            F.max(F.struct("election", "seed", "loss_ms", "recovered_ms")).alias("slowest"),
        )
        .collect()
    )
    # Unavailable windows: in time order within a run, the gap since the previous commit.
    order = Window.partitionBy("setting", "seed").orderBy("ms")
    gaps = (
        spark.createDataFrame(commits, "setting string, seed int, ms long")
        .withColumn("gap", F.col("ms") - F.lag("ms").over(order))
        .where(F.col("gap") > WINDOW_MS)
        .groupBy("setting")
        .agg(
            F.count("*").alias("windows"),
            F.sum("gap").alias("unavailable_ms"),
            F.max("gap").alias("longest"),
        )
        .collect()
    )
    deposed = (
        spark.createDataFrame(runs, "setting string, seed int, deposed int")
        .groupBy("setting")
        .agg(F.count("*").alias("runs"), F.sum("deposed").alias("deposed"))
        .collect()
    )
    windows = {r["setting"]: r.asDict() for r in gaps}
    for r in deposed:
        windows.setdefault(r["setting"], {"windows": 0, "unavailable_ms": 0, "longest": 0})
        windows[r["setting"]] |= r.asDict()
    return per_setting, windows


def report(out: str, per_setting: list, windows: dict, stories: list) -> None:
    found = {r["setting"]: r for r in per_setting}
    rows = [(s, found.get(s.name), windows[s.name]) for s in SETTINGS]
    with figure(os.path.join(out, "lab10.png"), 1, 3, size=(16, 5)) as (fig, axes):
        cdf, times, unavailable = axes
        for s in JITTER:
            r = found.get(s.name)
            if r is not None and r["times"]:
                n = len(r["times"])
                cdf.step(r["times"], [(i + 1) / n for i in range(n)], where="post", label=s.name)
        cdf.set(
            title="Election time after a leader's loss, by jitter",
            xlabel="ms from the loss to a leader of a later epoch",
            ylabel="share of elections",
        )
        if cdf.lines:
            cdf.legend(fontsize=8)
        labels = [s.name for s, r, _ in rows if r is not None]
        p50 = [r["election_p"][0] for _, r, _ in rows if r is not None]
        p99 = [r["election_p"][2] for _, r, _ in rows if r is not None]
        positions = range(len(labels))
        times.barh([p - 0.2 for p in positions], p50, height=0.4, label="median")
        times.barh([p + 0.2 for p in positions], p99, height=0.4, label="p99")
        times.set_yticks(list(positions), labels, fontsize=8)
        times.invert_yaxis()
        times.set(title="Election time by setting", xlabel="ms")
        times.legend(fontsize=8)
        share = [100 * w["unavailable_ms"] / (w["runs"] * RUN_MS) for _, _, w in rows]
        unavailable.barh(range(len(rows)), share, color="tab:red")
        unavailable.set_yticks(list(range(len(rows))), [s.name for s, _, _ in rows], fontsize=8)
        unavailable.invert_yaxis()
        unavailable.set(
            title=f"Time without a commit for over {WINDOW_MS} ms",
            xlabel="% of the simulated time",
        )
        fig.suptitle(
            f"The leader killed about every second; {rows[0][2]['runs']} runs of "
            f"{RUN_MS // 1000} s per setting"
        )
    table = markdown_table(
        [
            "setting",
            "runs",
            "leaders lost",
            "election p50 (ms)",
            "p90",
            "p99",
            "max",
            "epochs per election",
            "split or failed",
            "no commit after a loss p50 (ms)",
            "p99",
            "windows > 100 ms",
            "time in them",
            "longest (ms)",
            "leaders deposed alive",
        ],
        [
            [
                s.name,
                w["runs"],
                r["elections"] if r else 0,
                *(r["election_p"] if r else ["-"] * 3),
                r["election_max"] if r else "-",
                f"{r['epochs']:.2f}" if r else "-",
                f"{r['split']:.0%}" if r else "-",
                *(r["unavailable_p"] if r else ["-"] * 2),
                w["windows"],
                f"{100 * w['unavailable_ms'] / (w['runs'] * RUN_MS):.1f}%",
                w["longest"] or 0,
                w["deposed"],
            ]
            for s, r, w in rows
        ],
    )
    table += (
        "\n- **leaders lost**: the leader crashed (killed every second or so, or by the "
        "setting's crash rate) and a later epoch had a leader that committed.\n"
        "- **election**: from the loss to the first moment a node leads a later epoch.\n"
        "- **epochs per election**: the new leader's epoch minus the lost one's; more than 1 "
        "means candidates that did not win (a split vote, or a candidate that lost its "
        "votes to messages lost or a crash).\n"
        "- **no commit after a loss**: from the loss to the first commit of the new leader "
        "(its LeaderChange record): the time no leader was able to commit.\n"
        f"- **windows > {WINDOW_MS} ms**: stretches without any commit longer than "
        f"{WINDOW_MS} ms (the application appends every 25 ms), whatever their cause, the "
        "first election of each run included.\n"
        "- **leaders deposed alive**: a later epoch got a leader while the old one was up "
        "(it lost its followers to lost messages, or resigned).\n"
    )
    table += "".join(stories)
    with open(os.path.join(out, "lab10.md"), "w") as f:
        f.write("# Lab 10: elections and unavailability in KRaft's quorum\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    seeds = max(2, round(12 * args.scale))
    elections, commits, runs = [], [], []
    for setting in SETTINGS:
        for seed in range(seeds):
            e, c, r = campaign(setting, seed)
            elections += e
            commits += c
            runs.append(r)
    with tempfile.TemporaryDirectory() as scratch, spark_for(args.master, scratch) as spark:
        per_setting, windows = analyse(spark, elections, commits, runs)
    found = {r["setting"]: r for r in per_setting}
    stories = []
    for setting in JITTER[:1]:  # the least jitter
        slowest = found[setting.name]["slowest"] if setting.name in found else None
        if slowest is not None:
            stories.append(
                story(setting, slowest["seed"], slowest["loss_ms"], slowest["recovered_ms"])
            )
    report(args.out, per_setting, windows, stories)
    print_table(args.out, "lab10.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
