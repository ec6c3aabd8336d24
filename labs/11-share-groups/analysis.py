"""Lab 11 analysis: what the lock duration and the delivery limit cost a share group.

    kafka-ref lab analyse 11 --out /tmp/lab11        # your solution.py
    kafka-ref lab analyse 11 --reference --out /tmp/lab11-reference

Seeded runs of a share group on kafka-ref's `SharePartition` (kafka_ref/share/share_partition.py)
with your `acknowledge_record`, `release_on_lock_timeout` and `next_start_offset`, on a
simulated clock (`ManualClock`): a deterministic event loop plays four members reading one
partition of 2,000 records (in batches of ten), ten records per fetch, 10 ms of work per
record, acknowledging each fetch's records together when they are done. The lock timer
runs at every event, as the broker's does at each lock deadline and before each fetch; a
member's fetch that acquires nothing waits, as a ShareFetch does, until records can be
acquired (released, or a lock expired) or 500 ms have passed.

Some records are hard. 2% are *slow* (1.2 to 3 s of work); 5% are *flaky* (each delivery
fails with probability 1/2, and the member RELEASEs the record, to be retried); 0.5% are
*poison*: the member that processes one *hangs*, holding what it fetched, and a supervisor
starts a new member in its place 5 s later; besides them a member hangs at random about once
every 200 fetches. One setting changes one thing from the baseline (a 5 s lock, a delivery
limit of 5, members that hang): the lock duration (1 s, 15 s, Kafka's 30 s), a 1 s lock
that members RENEW every half lock while they work, the delivery limit (2, 10), or members
that *crash* instead of hanging (their connection closes and the broker releases what they
held at once, SHARE-25; the new member starts 1 s later).

Every delivery is a row: the record, its kind, the member, when it was acquired and with
which delivery count, and its outcome: `accepted`, `released`, `refused` (processed, but
the member's acknowledgement was refused: a lock of its batch had expired, and a whole
acknowledgement is applied or refused), `late` (processed, and acknowledged once another
member had made it done: below the SPSO, ignored), `hung` or `crashed` (held by a member
that hung or crashed). PySpark aggregates them per setting and, with a window function over each
record's deliveries in time order (`lead`), measures how long a record held by a member
that hung or crashed waited for its next delivery. `lab11.png` and `lab11.md` answer the
handout's questions.
"""

from __future__ import annotations

import dataclasses
import heapq
import os
import random
import sys
import tempfile
from collections.abc import Iterator

from kafka_ref.clock import ManualClock
from kafka_ref.errors import ErrorCode
from kafka_ref.share.persister import RecordState, ShareState
from kafka_ref.share.share_partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    FetchedBatch,
    SharePartition,
    SharePartitionConfig,
)
from kafka_ref.tools.lab_analysis import markdown_table, parse_args, print_table, spark_for
from kafka_ref.tools.plots import figure

RENEW = AcknowledgeType.RENEW
MEMBERS = 4
MAX_RECORDS = 10  # per fetch
BATCH = 10  # records per batch in the log
WORK_MS = 10  # per ordinary record
SLOW_MS = (1_200, 3_000)
MAX_WAIT_MS = 500  # a ShareFetch that acquires nothing waits at most this (MaxWaitMs)
HANG_RESTART_MS = 5_000  # a hung member is replaced after this
CRASH_RESTART_MS = 1_000
HANG_PER_FETCH = 1 / 200
MAX_RECORD_LOCKS = 100  # group.share.partition.max.record.locks
HORIZON_MS = 1_800_000  # a run ends here if its records are not all done
KINDS = (("poison", 0.005), ("slow", 0.02), ("flaky", 0.05))


@dataclasses.dataclass(frozen=True)
class Setting:
    factor: str
    name: str
    lock_ms: int = 5_000
    limit: int = 5
    crash: bool = False
    renew: bool = False


BASELINE = Setting("baseline", "baseline: lock 5 s, limit 5")
SETTINGS = [
    BASELINE,
    Setting("lock", "lock 1 s", lock_ms=1_000),
    Setting("lock", "lock 15 s", lock_ms=15_000),
    Setting("lock", "lock 30 s (Kafka's)", lock_ms=30_000),
    Setting("lock", "lock 1 s, RENEW", lock_ms=1_000, renew=True),
    Setting("limit", "limit 2", limit=2),
    Setting("limit", "limit 10", limit=10),
    Setting("failure", "crashes, not hangs", crash=True),
]
LOCKS = [s for s in SETTINGS if s.factor in ("baseline", "lock")]


class Run:
    """One seeded run: the share-partition, the members as generators, the event loop."""

    def __init__(self, setting: Setting, seed: int, records: int) -> None:
        self.setting, self.seed, self.records = setting, seed, records
        self.rng = random.Random(seed)
        self.kind = {}
        for offset in range(records):
            draw, kind = self.rng.random(), "ordinary"
            for name, share in KINDS:
                if draw < share:
                    kind = name
                    break
                draw -= share
            self.kind[offset] = kind
        self.log = [FetchedBatch(o, min(o + BATCH, records) - 1) for o in range(0, records, BATCH)]
        self.clock = ManualClock(0)
        config = SharePartitionConfig(setting.limit, setting.lock_ms, MAX_RECORD_LOCKS)
        self.sp = SharePartition.from_state(ShareState(), 0, config, self.clock)
        self.deliveries: list[list] = []  # rows, their outcome filled in later
        self.accepted: set[int] = set()
        self.events: list[tuple[int, int, int, int, Iterator[int]]] = []
        self.sequence = 0
        self.waiting: dict[int, Iterator[int]] = {}  # members whose ShareFetch waits
        self.token = [0] * MEMBERS  # a member's events of an older token are void
        self.generation = [0] * MEMBERS

    def now(self) -> int:
        return self.clock.milliseconds()

    def schedule(self, at: int, slot: int, life: Iterator[int]) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, slot, self.token[slot], life))

    def play(self) -> tuple[int, int]:
        """Run until every record is done or the horizon; (when it ended, the SPSO then)."""
        for slot in range(MEMBERS):
            self.schedule(slot, slot, self.member(slot))
        while self.events and self.sp.start_offset < self.records:
            at, _, slot, token, life = heapq.heappop(self.events)
            if token != self.token[slot]:
                continue  # a waiting ShareFetch woken earlier
            if at > HORIZON_MS:
                break
            self.clock.set(at)
            self.sp.expire_locks()  # the lock timer
            self.waiting.pop(slot, None)
            try:
                wait = next(life)
            except StopIteration as stop:  # the member is gone; its successor starts later
                self.generation[slot] += 1
                self.schedule(at + stop.value, slot, self.member(slot))
                self.wake()
                continue
            if wait < 0:  # nothing acquired: the ShareFetch waits for records, or MaxWaitMs
                self.waiting[slot] = life
            self.schedule(at + abs(wait), slot, life)
            self.wake()
        return self.now(), self.sp.start_offset

    def wake(self) -> None:
        """Records became acquirable (released, expired, a member gone): the waiting
        ShareFetches complete now (SHARE-22), as the broker's purgatory completes them."""
        sp = self.sp
        if not self.waiting or not sp.can_acquire() or sp.next_fetch_offset() >= self.records:
            return
        for slot, life in self.waiting.items():
            self.token[slot] += 1
            self.schedule(self.now(), slot, life)
        self.waiting.clear()

    def member(self, slot: int) -> Iterator[int]:
        """One member's life: fetch, work, acknowledge; yields how long it waits, returns
        after how long a successor starts when it hangs or crashes."""
        member = f"member-{slot}.{self.generation[slot]}"
        rng, setting, sp = self.rng, self.setting, self.sp
        while True:
            start = sp.next_fetch_offset()
            batches = [b for b in self.log if b.last_offset >= start][:3]
            runs = sp.acquire(member, batches, MAX_RECORDS, bound=self.records)
            got = [o for r in runs for o in range(r.first_offset, r.last_offset + 1)]
            if not got:
                deadline = sp.next_lock_deadline()
                until = MAX_WAIT_MS if deadline is None else deadline - self.now()
                yield -max(1, min(MAX_WAIT_MS, until))
                continue
            counts = {
                o: r.delivery_count for r in runs for o in range(r.first_offset, r.last_offset + 1)
            }
            rows = {}
            for offset in got:
                rows[offset] = [offset, self.kind[offset], member, self.now(), counts[offset]]
                self.deliveries.append(rows[offset])
            hang_at = rng.randrange(len(got)) if rng.random() < HANG_PER_FETCH else None
            verdicts: dict[int, AcknowledgeType] = {}
            for i, offset in enumerate(got):
                kind = self.kind[offset]
                if kind == "poison" or i == hang_at:
                    return self.fail(member, got, verdicts, rows)
                work = rng.randint(*SLOW_MS) if kind == "slow" else WORK_MS
                while work > 0:  # RENEW every half lock while working
                    step = min(work, setting.lock_ms // 2) if setting.renew else work
                    yield step
                    work -= step
                    if setting.renew and work > 0:  # every record of the fetch is held
                        renew = [AcknowledgementBatch(o, o, (int(RENEW),)) for o in got]
                        sp.acknowledge(member, renew)
                fails = kind == "flaky" and rng.random() < 0.5
                verdicts[offset] = AcknowledgeType.RELEASE if fails else AcknowledgeType.ACCEPT
            acks = [AcknowledgementBatch(o, o, (int(verdicts[o]),)) for o in got]
            done_below = sp.start_offset  # below it the acknowledgements are ignored
            error = sp.acknowledge(member, acks)
            for offset in got:
                if error != ErrorCode.NO_ERROR:
                    outcome = "refused"
                elif offset < done_below:
                    outcome = "late"
                elif verdicts[offset] is AcknowledgeType.ACCEPT:
                    outcome = "accepted"
                    self.accepted.add(offset)
                else:
                    outcome = "released"
                rows[offset] += [self.now(), outcome]

    def fail(self, member: str, got: list[int], verdicts: dict, rows: dict) -> int:
        """The member hangs (its records wait for their locks) or crashes (its connection
        closes: the broker releases them at once)."""
        outcome = "crashed" if self.setting.crash else "hung"
        for offset in got:
            rows[offset] += [self.now(), outcome]
        if self.setting.crash:
            self.sp.release_member(member)
            return CRASH_RESTART_MS
        return HANG_RESTART_MS


def campaign(setting: Setting, seed: int, records: int) -> tuple[list[tuple], tuple]:
    run = Run(setting, seed, records)
    ended, spso = run.play()
    archived = sum(
        1 for offset in range(records) if offset not in run.accepted and is_done(run.sp, offset)
    )
    deliveries = [(setting.name, seed, *row) for row in run.deliveries if len(row) == 7]
    return deliveries, (setting.name, seed, ended, spso, len(run.accepted), archived)


def is_done(sp: SharePartition, offset: int) -> bool:
    record = sp.records.get(offset)
    if offset < sp.start_offset:
        return True
    return record is not None and record.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


def analyse(spark, deliveries: list, runs: list) -> dict:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = spark.createDataFrame(
        deliveries,
        "setting string, seed int, offset int, kind string, member string, acquired_ms long, "
        "delivery_count int, ended_ms long, outcome string",
    )
    # Each record's deliveries in time order: when the next one came.
    order = Window.partitionBy("setting", "seed", "offset").orderBy("acquired_ms")
    timed = rows.withColumn("next_ms", F.lead("acquired_ms").over(order))
    waits = (
        # (a record whose lock had expired while its member worked went to another member
        # before the hang: not a wait)
        timed.where(
            F.col("outcome").isin("hung", "crashed") & (F.col("next_ms") >= F.col("ended_ms"))
        )
        .withColumn("wait", F.col("next_ms") - F.col("ended_ms"))
        .groupBy("setting")
        .agg(
            F.count("*").alias("waited"),
            F.percentile_approx("wait", [0.5, 0.99], 10_000).alias("wait_p"),
            F.sort_array(F.collect_list("wait")).alias("waits"),
        )
    )
    per_record = rows.groupBy("setting", "seed", "offset", "kind").agg(
        F.count("*").alias("deliveries"),
        F.sum(F.col("outcome").isin("accepted", "refused", "late").cast("int")).alias("worked"),
        F.max((F.col("outcome") == "accepted").cast("int")).alias("accepted"),
        F.min("acquired_ms").alias("first_ms"),
        F.max("ended_ms").alias("last_ms"),
    )
    records = per_record.groupBy("setting").agg(
        F.count("*").alias("delivered"),
        F.avg("deliveries").alias("per_record"),
        F.sum((F.col("worked") > 1).cast("int")).alias("twice"),
        F.sum(((F.col("kind") != "poison") & (F.col("accepted") == 0)).cast("int")).alias(
            "healthy_lost"
        ),
    )
    poison = (
        per_record.where(F.col("kind") == "poison")
        .groupBy("setting")
        .agg(
            F.count("*").alias("poison"),
            F.avg("deliveries").alias("poison_deliveries"),
            F.avg(F.col("last_ms") - F.col("first_ms")).alias("poison_ms"),
        )
    )
    outcomes = (
        rows.withColumn("outcome", F.concat(F.lit("n_"), "outcome"))
        .groupBy("setting")
        .pivot("outcome")
        .count()
    )
    totals = (
        spark.createDataFrame(
            runs,
            "setting string, seed int, ended_ms long, spso long, accepted int, archived int",
        )
        .groupBy("setting")
        .agg(
            F.count("*").alias("runs"),
            F.avg("ended_ms").alias("ended_ms"),
            F.min("spso").alias("min_spso"),
            F.sum("accepted").alias("accepted"),
            F.sum("archived").alias("archived"),
        )
    )
    found: dict[str, dict] = {}
    for frame in (totals, records, poison, waits, outcomes):
        for row in frame.collect():
            found.setdefault(row["setting"], {}).update(row.asDict())
    return found


def report(out: str, found: dict, records: int, seeds: int) -> None:
    def get(s: Setting, key: str, default=0):
        value = found.get(s.name, {}).get(key)
        return default if value is None else value

    with figure(os.path.join(out, "lab11.png"), 1, 3, size=(16, 5)) as (fig, axes):
        cdf, twice, limits = axes
        for s in LOCKS + [s for s in SETTINGS if s.crash]:
            waits = get(s, "waits", [])
            if waits:
                n = len(waits)
                cdf.step(
                    [w / 1000 for w in waits],
                    [(i + 1) / n for i in range(n)],
                    where="post",
                    label=s.name,
                )
        cdf.set(
            title="Wait for the next delivery after a hang or a crash",
            xlabel="s from the hang (crash) to the next delivery",
            ylabel="share of such records",
        )
        if cdf.lines:
            cdf.legend(fontsize=8)
        names = [s.name for s in LOCKS]
        twice.barh(names, [get(s, "twice") for s in LOCKS], color="tab:orange")
        twice.invert_yaxis()
        twice.set(title="Records processed twice or more, by lock", xlabel="records")
        share = [
            100 * get(s, "healthy_lost") / (records * max(1, get(s, "runs"))) for s in SETTINGS
        ]
        limits.barh([s.name for s in SETTINGS], share, color="tab:red")
        limits.invert_yaxis()
        limits.tick_params(axis="y", labelsize=8)
        limits.set(title="Healthy records archived", xlabel="% of the records")
        fig.suptitle(
            f"A share group of {MEMBERS} members on {records} records; "
            f"{get(BASELINE, 'runs')} runs per setting"
        )
    table = markdown_table(
        [
            "setting",
            "runs",
            "accepted",
            "archived",
            "lowest final SPSO",
            "time to finish (s)",
            "deliveries per record",
            "processed twice",
            "healthy archived",
            "poison records",
            "deliveries per poison",
            "s per poison",
            "waits after a hang or crash",
            "wait p50 (ms)",
            "wait p99 (ms)",
        ],
        [
            [
                s.name,
                get(s, "runs"),
                get(s, "accepted"),
                get(s, "archived"),
                get(s, "min_spso"),
                f"{get(s, 'ended_ms') / 1000:.1f}",
                f"{get(s, 'per_record'):.2f}",
                get(s, "twice"),
                get(s, "healthy_lost"),
                get(s, "poison"),
                f"{get(s, 'poison_deliveries'):.1f}",
                f"{get(s, 'poison_ms') / 1000:.1f}",
                get(s, "waited"),
                *(get(s, "wait_p", ["-", "-"])),
            ]
            for s in SETTINGS
        ],
    )
    outcome_names = ["accepted", "released", "refused", "late", "hung", "crashed"]
    outcomes = markdown_table(
        ["setting", *outcome_names],
        [[s.name, *(get(s, f"n_{name}") for name in outcome_names)] for s in SETTINGS],
    )
    table += (
        f"\n- **accepted**, **archived**: records of the {records} per run accepted by a "
        "member, and done without being accepted (here: archived at the delivery limit).\n"
        "- **lowest final SPSO**: the smallest share-partition start offset a run ended "
        f"with; {records} when every run finished.\n"
        "- **time to finish**: the mean simulated time until every record was done (or "
        f"the horizon, {HORIZON_MS // 1000} s).\n"
        "- **processed twice**: records that two members or more processed to the end (their "
        "delivery's outcome accepted, refused or late).\n"
        "- **healthy archived**: records that were not poison yet were never accepted.\n"
        "- **s per poison**: from a poison record's first delivery to the end of its last.\n"
        "- **wait**: from the moment a member hung or crashed holding a record to the "
        "record's next delivery (lead over the record's deliveries in time order), for the "
        "records not given to another member before it (their lock had expired already).\n"
        "\n## Deliveries by outcome\n\n" + outcomes + "\n- **accepted**, **released**: the "
        "member's acknowledgement was applied.\n- **refused**: processed, but the member's "
        "acknowledgement was refused (INVALID_RECORD_STATE): the lock of a record of its "
        "fetch had expired, and another member held it or had made it done.\n- **late**: "
        "processed and acknowledged after another member's acknowledgement had made it done "
        "and moved the SPSO past it: ignored, answered NO_ERROR (SHARE-4).\n- **hung**, "
        "**crashed**: held by a member that hung or crashed.\n"
    )
    with open(os.path.join(out, "lab11.md"), "w") as f:
        f.write(
            "# Lab 11: locks, delivery limits and failures in a share group\n\n"
            f"{MEMBERS} members, {records} records per run, the runs of seeds 0 to {seeds - 1} "
            "in each setting (the simulation is deterministic: a seed plays the same run "
            "again).\n\n" + table
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    records = max(200, round(2_000 * args.scale))
    seeds = max(2, round(6 * args.scale))
    deliveries: list[tuple] = []
    runs: list[tuple] = []
    for setting in SETTINGS:
        for seed in range(seeds):
            d, r = campaign(setting, seed, records)
            deliveries += d
            runs.append(r)
    with tempfile.TemporaryDirectory() as scratch, spark_for(args.master, scratch) as spark:
        found = analyse(spark, deliveries, runs)
    report(args.out, found, records, seeds)
    print_table(args.out, "lab11.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
