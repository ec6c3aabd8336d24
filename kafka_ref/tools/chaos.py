"""Run a Jepsen-style fault campaign on a local cluster and judge safety and liveness.

    kafka-ref chaos --seed 1 --faults 100 --report run.json --report run.md
    kafka-ref chaos --seed 1 --duration 90 --config replica.truncation=high-watermark

It starts Debian's ZooKeeper and three kafka-ref brokers (each behind a loopback proxy the
nemesis can cut), creates the topic `chaos` (3 partitions, replication factor 3,
`min.insync.replicas=2`), and runs an idempotent librdkafka producer (acks=all, 2,000
values a second) and a consumer group of two while the nemesis, one fault every 3-8 s,
kills (-9), stops (SIGTERM), pauses (SIGSTOP/SIGCONT), restarts and partitions brokers from
each other and from ZooKeeper, preferring the controller and the leaders. `--faults N` and
`--duration S` bound the campaign (whichever comes first); `--seed` fixes the nemesis'
choices. Then everything heals, a final read takes each partition from offset 0, and the
history checker reports lost, duplicated and reordered acknowledged writes (HIST-1..6),
the consumer group's re-deliveries, and, for every fault, the time from the moment the
cluster was whole again (every partition has a live leader and an ISR of at least
min.insync.replicas, read from ZooKeeper) to the next acknowledgement; the worst windows
are named. `--config KEY=VALUE` is passed to every broker, e.g.
`replica.truncation=high-watermark` to see the loss KIP-101 describes; `--mutant NAME` runs
brokers with one of the conformance suite's known bugs, to see the campaign catch it.

Exit code 0 when the campaign is valid (CHAOS-1, CHAOS-2): no lost, duplicated or
reordered acknowledged write and no window over `--max-window` seconds; 1 otherwise.
Ctrl-C or SIGTERM stops it and the cluster. The cluster's
files and logs stay in `--data-dir` (a temp dir by default): `broker-N.log` per broker.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from kafka_ref.conformance.nemesis import KINDS, KRAFT_KINDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1, help="the nemesis' random seed (1)")
    parser.add_argument("--faults", type=int, metavar="N", help="stop after N faults")
    parser.add_argument(
        "--duration", type=float, metavar="S", help="stop starting faults after S s"
    )
    parser.add_argument("--rate", type=float, default=2000.0, help="values sent a second (2000)")
    parser.add_argument(
        "--kraft",
        action="store_true",
        help="three KRaft nodes (broker and controller each) instead of ZooKeeper and brokers",
    )
    parser.add_argument(
        "--nemesis",
        metavar="KINDS",
        help=f"faults to use (ZooKeeper: {','.join(KINDS)}; KRaft: {','.join(KRAFT_KINDS)})",
    )
    parser.add_argument("--data-dir", metavar="DIR", help="the cluster's files (a temp dir)")
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="for every broker"
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=6000,
        help="zookeeper.session.timeout.ms, or KRaft's broker.session.timeout.ms (6000)",
    )
    parser.add_argument(
        "--max-window",
        type=float,
        default=30.0,
        metavar="S",
        help="longest allowed whole-to-acknowledgement window (30)",
    )
    parser.add_argument(
        "--mutant",
        metavar="NAME",
        help="brokers with a known bug (python -m kafka_ref.conformance.mutant_broker --list)",
    )
    parser.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="PATH",
        help="write the report: .md as Markdown, anything else as JSON (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    from kafka_ref.cli import UsageError
    from kafka_ref.conformance import campaign
    from kafka_ref.conformance.mutants import MUTANTS
    from kafka_ref.tools.cluster import zookeeper_installed

    if args.faults is None and args.duration is None:
        raise UsageError("give --faults N or --duration S (or both)")
    if (args.faults is not None and args.faults < 1) or (args.duration or 1) <= 0:
        raise UsageError("--faults and --duration must be positive")
    known = KRAFT_KINDS if args.kraft else KINDS
    kinds = tuple(k.strip() for k in (args.nemesis or ",".join(known)).split(",") if k.strip())
    if not kinds or set(kinds) - set(known):
        raise UsageError(f"--nemesis {args.nemesis!r}: choose from {','.join(known)}")
    configs = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--config {item!r} is not KEY=VALUE")
        configs[key.strip()] = value
    if args.mutant is not None and args.mutant not in MUTANTS:
        raise UsageError(f"--mutant {args.mutant!r}: choose from {', '.join(sorted(MUTANTS))}")
    if not args.kraft and not zookeeper_installed():
        raise UsageError("no ZooKeeper: install Debian's zookeeper package (and java)")
    opts = campaign.Options(
        seed=args.seed,
        faults=args.faults,
        duration=args.duration,
        rate=args.rate,
        kinds=kinds,
        configs=configs,
        data_dir=args.data_dir,
        session_timeout_ms=args.session_timeout_ms,
        max_window=args.max_window,
        mutant=args.mutant,
        kraft=args.kraft,
    )
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops the campaign as Ctrl-C does
    signal.signal(signal.SIGINT, _interrupt)  # even when started in the background
    try:
        report = campaign.run(opts, say=lambda line: print(line, file=sys.stderr, flush=True))
    except (RuntimeError, TimeoutError) as err:
        print(f"kafka-ref chaos: {err}", file=sys.stderr)
        return 1
    text = markdown(report)
    print(text)
    for path in args.report:
        with open(path, "w") as f:
            f.write(text if path.endswith(".md") else json.dumps(report, indent=1) + "\n")
    return 0 if report["valid"] else 1


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _command(r: dict) -> str:
    parts = ["kafka-ref chaos", f"--seed {r['seed']}", f"--faults {r['faults']}"]
    if r.get("kraft"):
        parts.append("--kraft")
    if r["rate"] != 2000:
        parts.append(f"--rate {r['rate']:g}")
    if tuple(r["kinds"]) != (KRAFT_KINDS if r.get("kraft") else KINDS):
        parts.append(f"--nemesis {','.join(r['kinds'])}")
    parts += [f"--config {k}={v}" for k, v in r["configs"].items()]
    if r.get("mutant"):
        parts.append(f"--mutant {r['mutant']}")
    return " ".join(parts)


def markdown(r: dict) -> str:
    """The report as a page: the verdict, the figures, the worst windows, the fault log."""
    verdict = "valid" if r["valid"] else "INVALID: " + "; ".join(r["reasons"])
    g = r["group"]
    lines = [
        f"## Seed {r['seed']}: {r['faults']} faults"
        + (f", {', '.join(f'{k}={v}' for k, v in r['configs'].items())}" if r["configs"] else ""),
        "",
        f"`{_command(r)}` ({r['elapsed_s']:.0f} s): **{verdict}**",
        "",
        "| sent | acknowledged | unknown | lost | anomalies | re-delivered (values) | rebalances |"
        " worst window |",
        "|---|---|---|---|---|---|---|---|",
        f"| {r['sent']} | {r['acked']} | {r['unknown']} | {r['lost']} | "
        f"{', '.join(f'{k} {v}' for k, v in r['anomalies'].items()) or 'none'} | "
        f"{g['redeliveries']} ({g['redelivered_values']}) | {g['rebalances']} | "
        f"{r['max_window_s']:.2f} s |",
        "",
        "Worst windows (whole again -> next acknowledgement):",
        "",
        "| fault | kind | broker | started | healed | whole | next ack | window |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in r["worst_windows"]:
        lines.append(
            f"| {f['n']} | {f['kind']} | {f['broker']} | {f['started']:.1f} | "
            f"{f['healed']:.1f} | {f['whole']:.1f} | {f['next_ack']:.1f} | "
            f"{f['window']:.2f} s |"
        )
    lines += [
        "",
        "Longest stretches with no acknowledgement (seconds since the start):",
        "",
        "| from | to | seconds | of which whole |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {x['from']:.1f} | {x['to']:.1f} | {x['seconds']:.1f} | {x['whole_seconds']:.1f} |"
        for x in r["gaps"][:5]
    ]
    if r.get("stale_isr"):
        lines += [
            "",
            "Longest times an ISR named a broker not registered in ZooKeeper (dead):",
            "",
            "| partition | broker | from | seconds |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {x['partition']} | {x['broker']} | {x['from']:.1f} | {x['seconds']:.1f} |"
            for x in r["stale_isr"]
        ]
    failovers = r.get("controller_failovers", [])
    if failovers:
        moved = sorted(f["seconds"] for f in failovers if f["seconds"] is not None)
        lines += [
            "",
            "Faults that struck the active controller, and the seconds until another was named"
            " (-: it stayed controller):",
            "",
            "| fault | kind | failover |",
            "|---|---|---|",
        ]
        lines += [
            f"| {f['fault']} | {f['kind']} | "
            f"{'-' if f['seconds'] is None else format(f['seconds'], '.2f') + ' s'} |"
            for f in failovers
        ]
        if moved:
            lines += ["", f"Failover: median {moved[len(moved) // 2]:.2f} s, max {moved[-1]:.2f} s"]
    if r["lost_examples"]:
        lines += ["", f"Lost (partition, value), first of {r['lost']}: {r['lost_examples'][:10]}"]
    kinds: dict[str, int] = {}
    for f in r["fault_log"]:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    lines += ["", "Faults: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())), ""]
    return "\n".join(lines)
