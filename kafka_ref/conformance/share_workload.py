"""A share group under fire: members killed with -9 while they hold records, nothing lost.

A share group promises at-least-once delivery with a per-record verdict: a record a member
acquired and never acknowledged (it was killed holding it) comes back to another member once
its acquisition lock expires, with a higher delivery count; a record accepted is never
delivered again. This workload tests both promises from outside:

* a producer writes `records` numbered values to a topic at a steady rate;
* `members` share consumers of one group run as child processes
  (`python -m kafka_ref.conformance.share_workload member ...`, librdkafka's ShareConsumer,
  explicit acknowledgement). After each poll a member accepts every record and commits; it
  prints one JSON line per record it was given (`delivered`, with its delivery count) and,
  once the commit succeeded, one per accepted record (`accepted`);
* every `kill_every` seconds the oldest member is killed with SIGKILL, usually while it
  holds records, and a new one is started in its place;
* the run ends when every record has been accepted, or at the deadline.

The checks (`check`): every record was accepted (none lost); none was accepted twice by
the members' confirmed commits (a record whose acceptance was confirmed must not be
delivered again); a record delivered more than once was delivered to a member killed while
holding it, or its acknowledgement was lost with a killed member. What a killed member
accepted without printing it is unknown, as with Jepsen's indeterminate writes: it counts
as accepted only if no other member was given it later.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field


@dataclass
class ShareRun:
    """What the members printed, and who was killed."""

    records: int
    delivered: dict[int, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    accepted: Counter = field(default_factory=Counter)  # value -> confirmed acceptances
    killed: list[int] = field(default_factory=list)  # member numbers killed with -9
    elapsed: float = 0.0

    def record(self, member: int, line: str) -> None:
        event = json.loads(line)
        if event["kind"] == "delivered":
            self.delivered[event["value"]].append((member, event["count"]))
        elif event["kind"] == "accepted":
            self.accepted[event["value"]] += 1

    def done(self) -> bool:
        return len(self.accepted) >= self.records


def check(run: ShareRun) -> dict:
    """The verdict: lost, accepted twice, redelivered after a confirmed acceptance."""
    values = range(run.records)
    lost = [v for v in values if v not in run.accepted and not _accepted_by_the_dead(run, v)]
    twice = sorted(v for v, n in run.accepted.items() if n > 1)
    redelivered = Counter(len(run.delivered[v]) for v in values if len(run.delivered[v]) > 1)
    after_a_kill = sum(
        1 for v in values if len(run.delivered[v]) > 1 and run.delivered[v][0][0] in run.killed
    )
    return {
        "records": run.records,
        "accepted": len(run.accepted),
        "lost": lost,
        "accepted_twice": twice,
        "redelivered": sum(redelivered.values()),
        "redelivered_after_a_kill": after_a_kill,
        "members_killed": len(run.killed),
        "max_delivery_count": max((c for ds in run.delivered.values() for _, c in ds), default=0),
        "seconds": round(run.elapsed, 1),
        "valid": not lost and not twice,
    }


def _accepted_by_the_dead(run: ShareRun, value: int) -> bool:
    """Given last to a member that was killed, and never to anyone after: that member's
    acceptance may have reached the broker before the kill (its line did not)."""
    deliveries = run.delivered.get(value)
    return bool(deliveries) and deliveries[-1][0] in run.killed


def run_workload(
    bootstrap: str,
    topic: str,
    group: str,
    records: int = 2000,
    members: int = 3,
    kill_every: float = 3.0,
    deadline: float = 120.0,
    rate: float = 500.0,
) -> ShareRun:
    """Produce, consume with `members` member processes, kill one every `kill_every` s."""
    from confluent_kafka import Producer

    run, lock = ShareRun(records), threading.Lock()
    processes: dict[int, subprocess.Popen] = {}
    readers: list[threading.Thread] = []

    def start(number: int) -> None:
        command = [sys.executable, "-m", "kafka_ref.conformance.share_workload", "member"]
        command += ["--bootstrap", bootstrap, "--topic", topic, "--group", group]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        processes[number] = proc

        def read() -> None:
            for line in proc.stdout:
                with lock:
                    run.record(number, line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        readers.append(reader)

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    started = time.monotonic()
    for number in range(members):
        start(number)
    next_member, sent, next_kill = members, 0, started + kill_every
    try:
        while True:
            now = time.monotonic()
            while sent < records and sent < (now - started) * rate:
                producer.produce(topic, value=b"%d" % sent)
                sent += 1
            producer.poll(0)
            with lock:
                if run.done():
                    break
            if now - started > deadline:
                break
            if now >= next_kill and sent < records:  # kill while records still flow
                oldest = min(processes)
                processes.pop(oldest).send_signal(signal.SIGKILL)
                run.killed.append(oldest)
                start(next_member)
                next_member += 1
                next_kill = now + kill_every
            time.sleep(0.02)
        assert producer.flush(30) == 0, "the producer could not deliver every record"
    finally:
        run.elapsed = time.monotonic() - started
        for proc in processes.values():
            proc.terminate()
        for proc in processes.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for reader in readers:
            reader.join(5)
    return run


def member(bootstrap: str, topic: str, group: str, work_seconds: float) -> None:
    """One member: poll, print what was given, accept all, commit, print what was accepted."""
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "log_level": 3,
        }
    )
    consumer.subscribe([topic])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set():
            given = [m for m in consumer.poll(0.5) if m.error() is None]
            for m in given:
                _say("delivered", int(m.value()), m.delivery_count())
                consumer.acknowledge(m)
            if given:
                time.sleep(work_seconds)  # the work: a kill now finds the records held
                results = consumer.commit_sync(30)
                failed = {(tp.topic, tp.partition) for tp, err in results.items() if err}
                for m in given:
                    if (m.topic(), m.partition()) not in failed:
                        _say("accepted", int(m.value()), m.delivery_count())
    finally:
        consumer.close()


def _say(kind: str, value: int, count: int) -> None:
    sys.stdout.write(json.dumps({"kind": kind, "value": value, "count": count}) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="share_workload", description=__doc__.split("\n")[0])
    parser.add_argument("role", choices=["member"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument(
        "--work-ms", type=int, default=200, help="time spent on each poll's records"
    )
    args = parser.parse_args(argv)
    member(args.bootstrap, args.topic, args.group, args.work_ms / 1000)


if __name__ == "__main__":
    main()
