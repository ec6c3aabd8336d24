"""librdkafka consumers with `group.protocol=consumer` (KIP-848) against a kafka-ref broker.

Consumers join and leave a group while a producer keeps writing. Under KIP-848 librdkafka
assigns incrementally: its callbacks name only the partitions added or taken away, and a
consumer owns a partition from the assign callback that adds it to the revoke (or lost)
callback that takes it away. Each consumer runs in a process of its own (as in
member_process.py: a librdkafka close can block inside C), and reports what it owns after
every poll. The test checks, after every round of polls, that no partition is owned by two
live consumers (CGRP-6); at the end, that the consumers left own every partition once and
the group is Stable (CGRP-7), and that every record produced was consumed by someone.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import time

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient

from kafka_ref.tools.server_process import free_port
from tests.interop.conftest import GROUP_BROKER_CONFIGS, BrokerProcess
from tests.interop.member_process import Member, Report
from tests.interop.test_groups import PARTITIONS, make_topic

pytestmark = pytest.mark.timeout(180)


def _serve_incremental(conn, config: dict, topic: str) -> None:
    """The child: like member_process's, with KIP-848's incremental callbacks."""
    from confluent_kafka import Consumer

    consumer = Consumer(config)
    seen = Report()

    def assign(_consumer, partitions) -> None:
        seen.owned |= {tp.partition for tp in partitions}
        seen.assigned += 1

    def revoke(_consumer, partitions) -> None:
        seen.owned -= {tp.partition for tp in partitions}
        seen.revoked += 1

    def poll() -> Report:
        seen.records = []
        for m in consumer.consume(200, 0.05):
            if m.error():
                raise RuntimeError(f"a consumer error: {m.error()}")
            if m.partition() not in seen.owned:
                raise AssertionError(f"a record of partition {m.partition()}, unowned")
            seen.records.append((time.monotonic(), m.partition(), m.offset()))
        seen.member_id = consumer.memberid() or ""
        return seen

    commands = {
        "subscribe": lambda: consumer.subscribe(
            [topic], on_assign=assign, on_revoke=revoke, on_lost=revoke
        ),
        "poll": poll,
        "close": consumer.close,
    }
    while True:
        command = conn.recv()
        try:
            conn.send(("ok", commands[command]()))
        except Exception as error:
            conn.send(("error", f"{type(error).__name__}: {error}"))
        if command == "close":
            return


class ConsumerProtocolMember(Member):
    """A `group.protocol=consumer` consumer in a child process."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 200,
        }
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(
            target=_serve_incremental, args=(child_conn, config, topic), daemon=True
        )
        self._process.start()
        child_conn.close()
        self.member_id, self.owned = "", set()
        self.assigned = self.revoked = 0
        self.assigned_at = self.last_poll = 0.0
        self.records = []
        self.close_seconds = None


def _no_partition_twice(members) -> None:
    owners: dict[int, str] = {}
    for m in members:
        for p in m.owned:
            assert p not in owners, f"partition {p} owned by {owners[p]} and {m.member_id}"
            owners[p] = m.member_id


@pytest.mark.spec("CGRP-6", "CGRP-7")
def test_consumers_join_and_leave_under_load_and_no_partition_has_two_owners(group_broker):
    bootstrap = f"127.0.0.1:{group_broker.port}"
    topic = group = "kip848-load"
    make_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    produced = 0

    def produce(n: int) -> None:
        nonlocal produced
        for i in range(n):
            producer.produce(
                topic, f"{produced + i}".encode(), partition=(produced + i) % PARTITIONS
            )
        produced += n
        producer.flush(10)

    live: list[ConsumerProtocolMember] = []
    gone: list[ConsumerProtocolMember] = []

    def rounds(n: int) -> None:
        for _ in range(n):
            produce(20)
            for m in live:
                m.poll()
            _no_partition_twice(live)
            time.sleep(0.05)

    try:
        for _ in range(3):  # three join, one after another, while records come
            member = ConsumerProtocolMember(bootstrap, group, topic)
            member.subscribe()
            live.append(member)
            rounds(15)
        leaving = live.pop(0)  # one leaves (its close commits, auto.commit)
        leaving.close()
        gone.append(leaving)
        rounds(15)
        member = ConsumerProtocolMember(bootstrap, group, topic)  # another joins
        member.subscribe()
        live.append(member)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the group settles with the last three
            rounds(1)
            owned = [p for m in live for p in m.owned]
            if sorted(owned) == list(range(PARTITIONS)) and all(m.owned for m in live):
                break
        assert sorted(p for m in live for p in m.owned) == list(range(PARTITIONS))
        admin = AdminClient({"bootstrap.servers": bootstrap})
        deadline = time.monotonic() + 30
        while True:  # the members own their partitions; the last epochs may still be due
            described = admin.describe_consumer_groups([group])[group].result(10)
            if described.state == ConsumerGroupState.STABLE or time.monotonic() > deadline:
                break
            rounds(1)
        assert described.state == ConsumerGroupState.STABLE, described.state
        assert described.type == ConsumerGroupType.CONSUMER  # ConsumerGroupDescribe (CGRP-16)
        assert {m.member_id for m in described.members} == {m.member_id for m in live}
        # every record was consumed by someone (a moved partition may be read twice)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen = {(p, o) for m in live + gone for _, p, o in m.records}
            if len(seen) == produced:
                break
            for m in live:
                m.poll()
        seen = {(p, o) for m in live + gone for _, p, o in m.records}
        per_partition = {p: sum(1 for q, _ in seen if q == p) for p in range(PARTITIONS)}
        assert len(seen) == produced, per_partition
    finally:
        for m in live:
            m.close()


@pytest.mark.spec("CGRP-16")
def test_a_consumer_group_is_listed_and_described_as_one(group_broker):
    bootstrap = f"127.0.0.1:{group_broker.port}"
    topic = group = "kip848-described"
    make_topic(bootstrap, topic)
    member = ConsumerProtocolMember(bootstrap, group, topic)
    try:
        member.subscribe()
        deadline = time.monotonic() + 30
        while len(member.owned) < PARTITIONS and time.monotonic() < deadline:
            member.poll()
        admin = AdminClient({"bootstrap.servers": bootstrap})
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(10)
        assert group in {g.group_id for g in listed.valid}
        assert all(g.type == ConsumerGroupType.CONSUMER for g in listed.valid)
        tool = [sys.executable, "-m", "kafka_ref.cli", "groups", "--bootstrap-server", bootstrap]
        out = subprocess.run(
            [*tool, "--describe", "--group", group, "--members"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert member.member_id in out.stdout and f" {PARTITIONS} " in out.stdout
        state = subprocess.run(
            [*tool, "--describe", "--group", group, "--state"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert state.returncode == 0, state.stderr
        row = state.stdout.split("\n")[1]
        assert row.split()[3:] == ["uniform", "Stable", "1"], state.stdout
    finally:
        member.close()


@pytest.mark.spec("CGRP-13")
def test_a_restarted_coordinator_keeps_the_group_and_its_members(tmp_path):
    """The broker stops and starts again: the member heartbeats on with its epoch, keeps its
    partitions (no revoke, no loss) and reads on."""
    broker = BrokerProcess(str(tmp_path / "data"), free_port(), GROUP_BROKER_CONFIGS)
    broker.start()
    bootstrap = f"127.0.0.1:{broker.port}"
    topic = group = "kip848-restart"
    member = None
    try:
        make_topic(bootstrap, topic, 60)
        member = ConsumerProtocolMember(bootstrap, group, topic)
        member.subscribe()
        deadline = time.monotonic() + 30
        while len(member.records) < 60 and time.monotonic() < deadline:
            member.poll()
        assert len(member.records) == 60 and len(member.owned) == PARTITIONS
        member_id, assigned = member.member_id, member.assigned
        broker.restart()
        make_topic_records(bootstrap, topic, 60)
        deadline = time.monotonic() + 60
        while len(member.records) < 120 and time.monotonic() < deadline:
            member.poll()
        assert len({(p, o) for _, p, o in member.records}) == 120
        assert member.member_id == member_id and member.revoked == 0
        assert member.assigned == assigned and len(member.owned) == PARTITIONS
    finally:
        if member is not None:
            member.close()
        broker.stop()


def make_topic_records(bootstrap: str, topic: str, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        producer.produce(topic, value=f"more-{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
