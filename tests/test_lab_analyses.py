"""The labs' analyses (LAB-4): each runs on small data and writes a plot and a table that
answers its handout's questions.

Every analysis runs once, in this process (as `main(argv)`, the command line's entry
point), with the reference, at `--scale 0.2`. A lab whose analysis promises more than a
plot and a table (a seed and a history for a lost write, the LSO lag in milliseconds, ...)
has its own test below, which checks those promises on the same run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import re
import sys
from types import ModuleType

import pytest

from kafka_ref.seams import ENV
from kafka_ref.tools.lab import ROOT, labs

pytestmark = pytest.mark.timeout(600)


def analysis_module(lab: str) -> ModuleType:
    path = ROOT / "labs" / labs()[lab].path.name / "analysis.py"
    spec = importlib.util.spec_from_file_location(f"lab{lab}_analysis", path)
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs, as any module is (a dataclass looks its module up), then
    # taken out: Spark's workers cannot import it, so its functions must go to them by value.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def analyse(lab: str, out, monkeypatch) -> str:
    """Run lab `lab`'s analysis with the reference; check its PNG and its Markdown table,
    and that the table was printed. Returns the table."""
    monkeypatch.delenv(ENV, raising=False)
    module = analysis_module(lab)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert module.main(["--out", str(out), "--scale", "0.2", "--master", "local[2]"]) == 0
    pngs = list(out.glob("*.png"))
    tables = list(out.glob("*.md"))
    assert len(pngs) == 1 and pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(tables) == 1 and "|" in tables[0].read_text()
    table = tables[0].read_text()
    assert table in printed.getvalue()  # printed for the student
    return table


def section(table: str, title: str) -> str:
    """The part of the Markdown `table` under the heading `## title...`."""
    found = re.search(rf"^## {re.escape(title)}.*?(?=^## |\Z)", table, re.M | re.S)
    assert found, f"no section {title!r} in:\n{table}"
    return found.group(0)


def rows_of(markdown: str) -> list[list[str]]:
    """The cells of every row of the first Markdown table in `markdown`, header excluded."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = itertools.takewhile(lambda line: line.startswith("|"), lines[start:])
    return [[c.strip() for c in line.split("|")[1:-1]] for line in list(table)[2:]]


def test_every_lab_has_a_test_of_its_analysis():
    tested = {name[len("test_lab") :][:2] for name in globals() if name.startswith("test_lab")}
    assert set(labs()) <= tested, f"no test of the analysis of lab {set(labs()) - tested}"


# ---------------------------------------------------------------------------- lab 01
@pytest.mark.spec("LAB-4")
def test_lab01_gives_the_index_cost_per_gib_and_the_scan_bounded_by_the_interval(
    tmp_path, spark, monkeypatch
):
    """Per interval: index bytes per GiB of log, and the worst scan at most one interval
    even where the largest batch is bigger than the interval."""
    rows = rows_of(analyse("01", tmp_path, monkeypatch))
    assert [int(r[0]) for r in rows] == [256, 1024, 4096, 16384]
    for interval, _entries, index, log, per_gib, _avg, worst, _largest in rows:
        assert float(per_gib) == pytest.approx(int(index) / int(log) * 1024, abs=0.01)
        assert int(worst) <= int(interval)
    assert int(rows[0][7]) > int(rows[0][0]), "some batch is larger than the smallest interval"


# ---------------------------------------------------------------------------- lab 02
@pytest.mark.spec("LAB-4")
def test_lab02_gives_the_hottest_key_the_sticky_batches_and_the_wait_in_a_batch(
    tmp_path, spark, monkeypatch
):
    """The hottest Zipf key alone outweighs a fair share far more than a uniform key; the
    reference's sticky partitioner never sends two batches in a row to one partition; a
    record waits longer in its batch as linger.ms grows, and batches get fewer."""
    table = analyse("02", tmp_path, monkeypatch)
    spread = {r[0]: r for r in rows_of(section(table, "Records per partition"))}
    hottest = {k: float(r[-1].split("(")[1].rstrip(")")) for k, r in spread.items()}
    assert hottest["zipf"] > 5 * hottest["uniform"], spread
    [keyless] = rows_of(section(table, "Keyless records"))
    assert int(keyless[1]) > 1 and keyless[-1] == "0", keyless
    # Lingering longest makes records wait longer and batches fewer than not lingering at
    # all; the exact waits depend on the machine's load, so only the two ends are compared.
    batching = rows_of(section(table, "Batching"))
    (first, *_, last) = batching
    assert float(last[5]) > float(first[5]) and int(last[3]) < int(first[3]), batching


# ---------------------------------------------------------------------------- lab 05
@pytest.mark.spec("LAB-4")
def test_lab05_shows_who_owns_what_and_which_partitions_each_protocol_stops(
    tmp_path, spark, monkeypatch
):
    """With four members, each assignor's table lists four members in member id order, and
    every partition of both topics has exactly one owner; range deals each topic alone, so
    its first member has the same partition numbers in both topics. Under churn, eager range
    leaves every partition unowned at each change; cooperative-sticky and KIP-848 only the
    ones that move."""
    table = analyse("05", tmp_path, monkeypatch)
    owners = rows_of(section(table, "Who owns what"))
    by = {}
    for assignor, member, clicks, views in owners:
        by.setdefault(assignor, []).append((member, clicks, views))
    assert sorted(by) == ["cooperative-sticky", "range", "roundrobin"]
    for assignor, members in by.items():
        assert [m for m, _, _ in members] == [f"{assignor}-member-{i}" for i in range(4)]
        for column in (1, 2):
            owned = [p for m in members for p in m[column].split(", ") if p]
            assert sorted(owned) == sorted(set(owned)) and owned, members
    assert by["range"][0][1] == by["range"][0][2] != "", by["range"]
    # The same churn under the classic and the consumer group protocol (KIP-848): eager
    # range stops every partition at every change, even those it gives back to their owner;
    # cooperative-sticky and KIP-848 stop only the ones that move, never all of them.
    per_change = rows_of(section(table, "Unowned partitions per change"))
    runs = {}
    for run, _change, _after, unowned, kept in per_change:
        runs.setdefault(run, []).append((int(unowned), int(kept)))
    assert sorted(runs) == ["classic-cooperative-sticky", "classic-range", "consumer-uniform"]
    total = int(re.search(r"Of the group's (\d+) partitions", table).group(1))
    assert all(unowned == total for unowned, _ in runs["classic-range"]), runs
    assert any(kept > 0 for _, kept in runs["classic-range"]), runs
    for run in ("classic-cooperative-sticky", "consumer-uniform"):
        assert all(kept == 0 and 0 < unowned < total for unowned, kept in runs[run]), runs
    totals = {r[0]: r for r in rows_of(section(table, "Unowned partitions per protocol"))}
    assert sorted(totals) == sorted(runs), totals
    assert int(totals["classic-range"][1]) > int(totals["consumer-uniform"][1]) > 0, totals


# ---------------------------------------------------------------------------- lab 06
@pytest.mark.spec("LAB-4")
def test_lab06_follows_a_dropped_answer_with_idempotence_off_and_on(tmp_path, spark, monkeypatch):
    """Without idempotence the retried values are in the log twice; with it, the retry is
    answered with the base offset where the first copy is, and the log holds one."""
    table = analyse("06", tmp_path, monkeypatch)
    off = section(table, "A lost answer in idempotence-off")
    on = section(table, "A lost answer in idempotence-on")
    assert "without a producer id" in off and "(2 copies)" in off, off
    assert re.search(r"producer id \d+, epoch \d+, first sequence \d+", on), on
    answered = re.search(r"answered error code 0, base offset (\d+)", on).group(1)
    assert f"is at offset {answered} (1 copy)" in on, on
    counts = {r[0]: r for r in rows_of(table)}
    assert all(r[7] == "0" and r[8] == "0" for k, r in counts.items() if "-on-" in k), counts


# ---------------------------------------------------------------------------- lab 08
@pytest.mark.spec("LAB-4")
def test_lab08_times_the_tombstones_and_compares_two_dirty_ratios(tmp_path, spark, monkeypatch):
    """The tombstones go, later than delete.retention.ms after they were written; the
    compacted log's records are its keys plus what its active segment holds; the lazier
    ratio cleans less often and keeps a bigger log."""
    module = analysis_module("08")
    table = analyse("08", tmp_path, monkeypatch)
    gone = re.search(r"first without them at [\d.]+ s: ([\d.]+) s after", table)
    assert gone and float(gone.group(1)) > module.DELETE_RETENTION_MS / 1000, table
    last = rows_of(table)[-1]
    records, active, keys = int(last[3]), int(last[4]), int(last[9])
    assert keys <= records <= keys + active, last
    ratios = {r[0]: r for r in rows_of(section(table, "min.cleanable.dirty.ratio"))}
    eager, lazy = ratios[module.COMPACTED], ratios[module.LAZY]
    assert int(lazy[2]) < int(eager[2]) and float(lazy[4]) > float(eager[4]), ratios


# ---------------------------------------------------------------------------- lab 09
@pytest.mark.spec("LAB-4")
def test_lab09_gives_the_largest_batch_and_gzip_on_small_batches(tmp_path, spark, monkeypatch):
    """No stored batch exceeds its batch.size, and gzip saves less on 1 KiB batches than
    on 16 KiB ones, against the uncompressed run of the same batch.size."""
    runs = {r[0]: r for r in rows_of(analyse("09", tmp_path, monkeypatch))}
    for topic, size, _codec, *_rest in runs.values():
        assert int(runs[topic][6]) <= int(size), runs[topic]
    small, large = runs["batch-1024-gzip"][9], runs["codec-gzip"][9]
    assert int(small.rstrip("%")) > int(large.rstrip("%")), (small, large)


# ---------------------------------------------------------------------------- lab 03
@pytest.mark.spec("LAB-4")
def test_lab03_prints_the_seed_and_the_history_of_a_lost_write(tmp_path, spark, monkeypatch):
    """Under the high-watermark rule some run loses an acknowledged write: the table names
    its seed and tells the run step by step up to the election of a leader without it,
    through the truncation that dropped it. Leader-epoch truncation loses none without
    power losses; with power losses of every broker it does."""
    table = analyse("03", tmp_path, monkeypatch)
    rows = {r.split("|")[1].strip(): r.split("|")[2:-1] for r in table.splitlines()[4:7]}
    assert int(rows["high-watermark"][2]) > 0 and int(rows["leader-epoch"][2]) == 0, table
    assert int(rows["leader-epoch, power losses"][2]) > 0, table
    story = section(table, "A lost write under high-watermark: seed ")
    seed = int(re.search(r"seed (\d+)", story).group(1))
    assert str(seed) in rows["high-watermark"][4].split(), "the seed is among the lossy ones"
    value = re.search(r"(w\d+) was acknowledged at offset (\d+)", story).group(1)
    history = [line for line in story.splitlines() if line.startswith("| ")][1:]
    events = [line.split("|")[2] for line in history]
    acked = next(i for i, e in enumerate(events) if f"{value} acknowledged" in e)
    cut = next(i for i, e in enumerate(events) if "truncates its log" in e and "to its HW" in e)
    assert acked < cut and "leads epoch" in events[-1], story
    assert f"lacks {value}" in history[-1] and f"has {value}" in history[acked], story
    assert "A lost write under leader-epoch" not in table


@pytest.mark.spec("LAB-4", "TRUNC-6")
def test_lab03_one_round_of_truncation_diverges_only_without_truncation_on_fetch(
    tmp_path, spark, monkeypatch
):
    """The scripted unclean leader changes, read back with Spark from the replicas' segment
    files: with the reference both kinds of followers end identical; with a step that
    always stops after one round, the followers of Kafka 2.0-2.6 keep A's a10-a14 where B
    has b10-b14, and those of Kafka 2.7+ are repaired by the diverging epoch of a fetch."""
    from kafka_ref.replication import follower_fetch_state
    from kafka_ref.replication.truncation import TruncationStep, truncation_step

    module = analysis_module("03")
    reference = module.unclean_report(spark, str(tmp_path / "reference"))
    assert [u["differ"] for u in reference] == [0, 0]
    assert all("asks again" in u["truncations"][0] for u in reference), reference

    def one_round(*args) -> TruncationStep:
        return TruncationStep(truncation_step(*args).offset, True)

    monkeypatch.setattr(follower_fetch_state, "truncation_step", one_round)
    on_fetch, offsets_only = module.unclean_report(spark, str(tmp_path / "one-round"))
    assert on_fetch["differ"] == 0 and "diverging epoch" in on_fetch["truncations"][-1]
    assert offsets_only["differ"] == 5, offsets_only
    assert offsets_only["first_difference"] == "offset 10: A a10, B b10"
    assert offsets_only["a"].startswith("0-14 a0..a14 (epoch 0)"), offsets_only


# ---------------------------------------------------------------------------- lab 04
@pytest.mark.spec("LAB-4")
def test_lab04_explains_every_outcome_and_condition_and_follows_a_lost_write(
    tmp_path, spark, monkeypatch
):
    """Every class of outcome in the table ("no answer" included) and every condition of
    the partition has its line of explanation; clean election loses nothing, unclean
    loses writes, and one of them is told step by step with its seed."""
    module = analysis_module("04")
    table = analyse("04", tmp_path, monkeypatch)
    outcomes = section(table, "What became of the writes")
    classes = [r.split("|")[1].strip() for r in outcomes.splitlines() if r.startswith("| ")][1:]
    assert "no answer" in classes and "acknowledged" in classes, outcomes
    for name in classes:
        assert name in module.OUTCOMES and f"- **{name}**: " in outcomes
    conditions = section(table, "The partition when a write was sent")
    found = [r.split("|")[1].strip() for r in conditions.splitlines() if r.startswith("| ")][1:]
    assert "healthy" in found and all(f"- **{c}**: " in conditions for c in found)
    rows = {r.split("|")[1].strip(): r.split("|")[2:-1] for r in table.splitlines()[4:8]}
    assert [int(rows[f"clean, min.isr {m}"][3]) for m in (1, 2)] == [0, 0], table
    assert int(rows["unclean, min.isr 1"][3]) > 0, table
    story = section(table, "A lost write under unclean, min.isr 1: seed ")
    assert "unclean election: broker" in story and "acknowledged (offset=" in story, story


# ---------------------------------------------------------------------------- lab 07
@pytest.mark.spec("LAB-4")
def test_lab07_gives_the_lso_lag_in_ms_and_offsets_and_the_bytes_fetched_for_nothing(
    tmp_path, spark, monkeypatch
):
    """The table has the LSO lag in offsets (p50, p99, max) and in milliseconds per kind
    of record, the bytes of aborted batches read_committed fetched and dropped, and how
    long a forgotten transaction held the LSO: about its transaction.timeout.ms."""
    module = analysis_module("07")
    table = analyse("07", tmp_path, monkeypatch)
    counts = table.splitlines()[4].split("|")[1:-1]
    aborted, filtered = int(counts[2]), int(counts[7].split()[0])
    assert aborted > 0 and filtered == aborted, table
    fetched = section(table, "The bytes read_committed fetched for nothing")
    total, batches, dropped, _markers = fetched.splitlines()[4].split("|")[1:-1]
    assert 0 < int(dropped.split()[0]) < int(total) and int(batches) > 0, fetched
    offsets = section(table, "The LSO lag in offsets")
    assert "| HW - LSO p50 | p99 | max |" in offsets
    p50, p99, most = (int(x) for x in offsets.splitlines()[4].split("|")[3:6])
    assert 0 <= p50 <= p99 <= most and most > 0, offsets
    in_time = section(table, "The LSO lag in time")
    assert "| lag p50 (ms) | p99 (ms) | max (ms) |" in in_time
    lags = {
        r.split("|")[1].strip(): r.split("|")[2:-1]
        for r in in_time.splitlines()[6:]
        if r.startswith("| ")
    }
    committed = lags["steady: committed"]
    assert 0 <= int(committed[1]) <= int(committed[2]) <= int(committed[3]), in_time
    # The timeout runs from the transaction's start, a little before its record is in the
    # log, and the samples are 10 ms apart (more on a busy machine): 200 ms of slack.
    timeout = module.FORGOTTEN_TIMEOUT_MS - 200
    late = lags["after the forgotten transaction: outside transactions"]
    assert int(late[3]) >= timeout, in_time
    held = int(re.search(r"the LSO stayed at offset \d+ for (\d+) ms", in_time).group(1))
    assert held >= timeout, in_time
    assert "COMMIT marker" in section(table, "The log around its first marker")


# ---------------------------------------------------------------------------- lab 10
@pytest.mark.spec("LAB-4")
def test_lab10_times_the_elections_and_tells_the_slowest_without_jitter(
    tmp_path, spark, monkeypatch
):
    """Every setting lost leaders and elected new ones; per setting the percentiles are in
    order, no election took less than one epoch, and the quorum commits again only after
    the election; losing 20% of the messages leaves it longest without a commit. The
    slowest election without jitter is told from its seed: the leader's crash, candidates,
    the new leader."""
    module = analysis_module("10")
    table = analyse("10", tmp_path, monkeypatch)
    rows = {r[0]: r for r in rows_of(table)}
    assert list(rows) == [s.name for s in module.SETTINGS], table
    for r in rows.values():
        lost, p50, p90, p99, most = (int(x) for x in r[2:7])
        assert lost > 0 and 0 < p50 <= p90 <= p99 <= most, r
        assert float(r[7]) >= 1 and int(r[9]) >= p50, r
    share = {name: float(r[12].rstrip("%")) for name, r in rows.items()}
    assert max(share, key=share.get) == "20% of messages lost", share
    story = section(table, "The slowest election under jitter 0 ms: seed ")
    events = story.split("```")[1].strip().splitlines()
    assert events[0].split()[1] == "crash", story
    assert any("Candidate(" in e for e in events), story
    assert any("Leader(" in e for e in events), story


# ---------------------------------------------------------------------------- lab 11
@pytest.mark.spec("LAB-4")
def test_lab11_times_redelivery_by_lock_and_counts_poison_deliveries(tmp_path, spark, monkeypatch):
    """Every setting finishes (its SPSO reaches the end); the records of a hung member wait
    about the lock for their next delivery, longer as the lock grows, and those of a crashed
    member about a poll; a 1 s lock processes records twice and RENEW prevents it; a poison
    record is delivered exactly the delivery limit's number of times. A crashed member's
    records are released at once, and a waiting member's fetch is woken for them."""
    module = analysis_module("11")
    table = analyse("11", tmp_path, monkeypatch)
    rows = {r[0]: r for r in rows_of(table)}
    assert list(rows) == [s.name for s in module.SETTINGS], table
    records = int(re.search(r"(\d+) records per run", table).group(1))
    for r in rows.values():
        assert int(r[4]) == records, r  # the lowest final SPSO: every run finished
    settings = {s.name: s for s in module.SETTINGS}
    wait = {name: int(r[13]) for name, r in rows.items()}
    for name, s in settings.items():
        if s.factor in ("baseline", "lock") and not s.renew and s.lock_ms > 1_000:
            assert s.lock_ms - 500 <= wait[name] <= s.lock_ms + 200, (name, wait[name])
        if s.crash:
            assert wait[name] <= module.MAX_WAIT_MS, (name, wait[name])  # no lock waited for
        assert float(rows[name][10]) == s.limit, (name, rows[name])  # deliveries per poison
    twice = {name: int(r[7]) for name, r in rows.items()}
    assert twice["lock 1 s"] > 0 and twice["lock 1 s, RENEW"] < twice["lock 1 s"], twice
    outcomes = {r[0]: r for r in rows_of(section(table, "Deliveries by outcome"))}
    assert int(outcomes["crashes, not hangs"][6]) > 0 and outcomes["crashes, not hangs"][5] == "0"
