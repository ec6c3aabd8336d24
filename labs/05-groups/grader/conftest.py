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
    """`group_assignment(group, strategy, topics, instances, expected_partitions)`."""

    def run(*args, **kwargs):
        return settled_assignment(broker.bootstrap, *args, broker=broker, **kwargs)

    return run


def settled_assignment(
    bootstrap: str, group: str, strategy: str | dict[str, list[str]], topics: list[str],
    instances: list[str], expected_partitions: int, timeout: float = 60.0,
    broker: LabBroker | None = None,
) -> dict[str, list[tuple[str, int]]]:  # fmt: skip
    """Start one consumer per static instance id in `group`, each polling in its own thread,
    and return instance id -> its sorted partitions once the group is stable: every one of
    the `expected_partitions` owned by exactly one member, the same for a whole second.
    `strategy`: the assignor of every member, or instance id -> its assignors in order of
    preference. Raises what a consumer raised (the leader runs the assignor in poll())."""
    if isinstance(strategy, dict):
        preferences = strategy
    else:
        preferences = {instance: [strategy] for instance in instances}
    stop = threading.Event()
    errors: list[BaseException] = []
    consumers = {
        instance: Consumer(
            bootstrap,
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
    try:
        deadline, stable_since, last = time.monotonic() + timeout, None, None
        while time.monotonic() < deadline:
            if errors:
                raise errors[0]
            if broker is not None:  # the coordinator failed running your code
                broker.raise_if_failed()
            now = {i: sorted(tuple(tp) for tp in c.assignment()) for i, c in consumers.items()}
            owned = [tp for tps in now.values() for tp in tps]
            if len(owned) == len(set(owned)) == expected_partitions and now == last:
                if stable_since and time.monotonic() - stable_since >= 1.0:
                    return now
                stable_since = stable_since or time.monotonic()
            else:
                stable_since = None
            last = now
            time.sleep(0.1)
        raise AssertionError(f"the group did not settle in {timeout:.0f} s: last seen {last}")
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for c in consumers.values():
            c.close()
