"""A librdkafka group consumer in a process of its own, driven step by step over a pipe.

librdkafka's `close()` of a consumer that went past `max.poll.interval.ms` without polling
can block forever inside C, holding the GIL, where neither pytest-timeout's signal nor a
thread can end it. The cause is in the client (librdkafka 2.16.0 under confluent-kafka
2.16.1), not in the broker: the revocation queued while the consumer did not poll is served
inside `close()`, and confluent-kafka's rebalance callback then calls `rd_kafka_assign(NULL)`
with the GIL held; that call waits for the consumer-group thread's answer, and when that
thread has already finished terminating (a race, lost in about one close in four here) the
answer never comes. No request to the broker is outstanding then.

A process can always be ended: the tests drive each consumer in a child process
(multiprocessing, spawn), one command at a time (subscribe, poll once, commit, close), and
keep in the parent what the consumer reported: the partitions it owns now (from its rebalance
callbacks), how often they were assigned and revoked, and every record it received with the
`time.monotonic()` of its arrival (CLOCK_MONOTONIC: one clock for every process of the
machine). A command that gets no answer in time fails the test, after the child is killed
(SIGKILL); a close that gets no answer in time only kills the child, with a warning, since
what the tests judge was reported before it.
"""

from __future__ import annotations

import multiprocessing
import time
import warnings
from dataclasses import dataclass, field

ANSWER_SECONDS = 30.0  # a poll, a subscribe or a commit answers in far less


@dataclass
class Report:
    """What the consumer saw up to now; a poll answers with it (records: the new ones)."""

    member_id: str = ""
    owned: set[int] = field(default_factory=set)
    assigned: int = 0
    revoked: int = 0
    assigned_at: float = 0.0
    last_poll: float = 0.0
    records: list[tuple[float, int, int]] = field(default_factory=list)  # (arrival, p, offset)


def _serve(conn, config: dict, topic: str) -> None:
    """The child: one consumer, one command at a time, each answered ("ok", value) or
    ("error", text)."""
    from confluent_kafka import Consumer

    consumer = Consumer(config)
    seen = Report()

    def assign(_consumer, partitions) -> None:
        seen.owned = {tp.partition for tp in partitions}
        seen.assigned += 1
        seen.assigned_at = time.monotonic()

    def revoke(_consumer, partitions) -> None:
        seen.owned = set()
        seen.revoked += 1

    def poll() -> Report:
        """One poll: it serves the rebalance callbacks, and with them the rejoin."""
        seen.last_poll = time.monotonic()
        seen.records = []
        for m in consumer.consume(100, 0.05):
            if m.error():
                raise RuntimeError(f"a consumer error: {m.error()}")
            if m.partition() not in seen.owned:
                raise AssertionError(f"a record of partition {m.partition()}, unowned")
            seen.records.append((time.monotonic(), m.partition(), m.offset()))
        seen.member_id = consumer.memberid() or ""
        return seen

    def commit() -> dict[int, int]:
        """Commit the positions (synchronously) and answer them."""
        positions = {tp.partition: tp.offset for tp in consumer.position(consumer.assignment())}
        consumer.commit(asynchronous=False)
        return positions

    commands = {
        "subscribe": lambda: consumer.subscribe(
            [topic], on_assign=assign, on_revoke=revoke, on_lost=revoke
        ),
        "poll": poll,
        "commit": commit,
        "close": consumer.close,
    }
    while True:
        command = conn.recv()
        try:
            conn.send(("ok", commands[command]()))
        except Exception as error:  # the parent raises it as an AssertionError
            conn.send(("error", f"{type(error).__name__}: {error}"))
        if command == "close":
            return


class Member:
    """The parent's side: a consumer in a child process and what it reported."""

    def __init__(self, bootstrap: str, group: str, topic: str, **config) -> None:
        config = {"bootstrap.servers": bootstrap, "group.id": group, **config}
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child_conn, config, topic), daemon=True
        )
        self._process.start()
        child_conn.close()
        self.member_id = ""
        self.owned: set[int] = set()
        self.assigned = self.revoked = 0
        self.assigned_at = self.last_poll = 0.0
        self.records: list[tuple[float, int, int]] = []  # every record, in arrival order
        self.close_seconds: float | None = None  # None: killed, its close did not return

    def _call(self, command: str, timeout: float = ANSWER_SECONDS):
        self._conn.send(command)
        if not self._conn.poll(timeout):
            self.kill()
            raise AssertionError(f"the consumer did not answer {command} within {timeout:g} s")
        status, value = self._conn.recv()
        if status != "ok":
            raise AssertionError(f"{command}: {value}")
        return value

    def subscribe(self) -> None:
        self._call("subscribe")

    def poll(self) -> None:
        report: Report = self._call("poll")
        self.member_id, self.owned = report.member_id, report.owned
        self.assigned, self.revoked = report.assigned, report.revoked
        self.assigned_at, self.last_poll = report.assigned_at, report.last_poll
        self.records += report.records

    def commit(self) -> dict[int, int]:
        """Commit what it read; the committed positions, by partition."""
        return self._call("commit")

    def close(self, timeout: float = 5.0) -> None:
        """Close, or kill the process if the close has not returned within `timeout`."""
        if not self._process.is_alive():
            return
        started = time.monotonic()
        try:
            self._call("close", timeout)
            self.close_seconds = time.monotonic() - started
        except (AssertionError, OSError) as error:  # nothing the tests judge comes after it
            warnings.warn(f"librdkafka's close, killed: {error}", stacklevel=2)
        self.kill()

    def kill(self) -> None:
        if self._process.is_alive():
            self._process.join(0.5)
        if self._process.is_alive():
            self._process.kill()  # SIGKILL: reaches a process blocked in C
            self._process.join(5)
        self._conn.close()
