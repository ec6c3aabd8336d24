"""A real kafka-ref broker for the grader's end-to-end checks, in this process, and a group
of our consumers on it: their leader runs the student's assignor when it assigns."""

from __future__ import annotations

import threading
import time

import pytest

from kafka_ref.client import Consumer
from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.tools.lab_analysis import LabBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab05")
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data),
        "group.initial.rebalance.delay.ms": "0",  # the first member is assigned at once
    }
    thread = LabBroker(props).start()
    yield thread
    thread.stop()


@pytest.fixture(scope="module")
def create_topics(broker):
    """`create_topics({name: partitions})` on the broker."""

    def create(topics: dict[str, int]) -> None:
        admin = Admin(broker.bootstrap)
        try:
            admin.create_topics([NewTopic(name, n, 1) for name, n in topics.items()])
        finally:
            admin.close()

    return create


@pytest.fixture
def group_assignment(broker):
    """`group_assignment(group, strategy, topics, instances)`: see `settled_assignment`."""

    def run(*args, **kwargs):
        return settled_assignment(broker, *args, **kwargs)

    return run


def settled_assignment(
    broker: LabBroker,
    group: str,
    strategy: str | dict[str, list[str]],
    topics: list[str],
    instances: list[str],
    timeout: float = 60.0,
) -> dict[str, list[tuple[str, int]]]:
    """Start one consumer per static instance id in `group`, each polling in its own thread,
    and return instance id -> its sorted partitions once the group has settled: the
    coordinator says it is Stable with exactly these members, each consumer holds what the
    coordinator gave it, and so for a whole second. Settled is not right: a wrong assignor
    settles too, and the test then says how its assignment differs from the expected one.
    `strategy`: the assignor of every member, or instance id -> its assignors in order of
    preference. Raises what a consumer raised (the leader runs the assignor in poll()), or
    what the coordinator raised running the student's code."""
    if isinstance(strategy, dict):
        preferences = strategy
    else:
        preferences = {instance: [strategy] for instance in instances}
    stop = threading.Event()
    errors: list[BaseException] = []
    consumers = {
        instance: Consumer(
            broker.bootstrap,
            group_id=group,
            group_instance_id=instance,
            client_id=instance,
            partition_assignment_strategy=preferences[instance],
            heartbeat_interval_ms=100,
            session_timeout_ms=6000,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        for instance in instances
    }

    def run(consumer: Consumer) -> None:
        try:
            consumer.subscribe(topics)
            while not stop.is_set():
                consumer.poll(0.1)
        except BaseException as e:  # reported to the test below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in consumers.values()]
    for t in threads:
        t.start()
        time.sleep(0.2)  # members join one after the other
    admin = Admin(broker.bootstrap)
    try:
        deadline, settled_since, last = time.monotonic() + timeout, None, None
        while time.monotonic() < deadline:
            if errors:
                raise errors[0]
            broker.raise_if_failed()  # the coordinator failed running your code
            held = {i: sorted(tuple(tp) for tp in c.assignment()) for i, c in consumers.items()}
            if held == last and held == coordinators_assignment(admin, group):
                settled_since = settled_since or time.monotonic()
                if time.monotonic() - settled_since >= 1.0:
                    return held
            else:
                settled_since = None
            last = held
            time.sleep(0.1)
        raise AssertionError(f"the group did not settle in {timeout:.0f} s: last seen {last}")
    finally:
        admin.close()
        stop.set()
        for t in threads:
            t.join(5)
        for c in consumers.values():
            c.close()


def coordinators_assignment(admin: Admin, group: str) -> dict[str, list[tuple[str, int]]] | None:
    """Instance id -> its partitions as the coordinator gave them; None unless Stable.
    (Each consumer's client id is its instance id: DescribeGroups before v4 has no
    instance id.)"""
    description = admin.describe_groups([group])[group]
    if description.state != "Stable":
        return None
    return {m.client_id: sorted(tuple(tp) for tp in m.assignment) for m in description.members}
