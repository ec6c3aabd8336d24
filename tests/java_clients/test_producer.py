"""Apache Kafka's Java producer against kafka-ref: idempotent through faults, transactional.

The idempotent producer (acks=all, retries, five requests in flight) keeps sending while the
broker is paused past the request timeout (so that its retries are duplicates), then killed
and restarted: every acknowledged record is in the log exactly once, each
key's records in the order sent, and the broker's producer state (DescribeProducers) has
one producer whose last sequence counts the partition's records. The transactional
producer commits, aborts, leaves a transaction open while consumers look, and is fenced by
a successor with its transactional.id.
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest

pytestmark = pytest.mark.timeout(180)
REQUEST_TIMEOUT_MS = 3000


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(java, broker, name: str, partitions: int, **configs: str) -> None:
    topics = [{"name": name, "partitions": partitions, "configs": configs}]
    assert java.call("create-topics", bootstrap=broker.bootstrap, topics=topics) == {name: "ok"}


def values_by_partition(java, broker, topic: str, isolation: str) -> dict[int, list[str]]:
    read = java.call("read", bootstrap=broker.bootstrap, topic=topic, isolation=isolation)
    return {int(p): [value for _, _, value, _ in records] for p, records in read["records"].items()}


@pytest.mark.spec("JAVA-2")
def test_the_idempotent_producer_writes_each_record_once_through_a_pause_and_a_crash(java, broker):
    """A quarter of the way, the broker is paused (SIGSTOP) longer than the producer's
    request timeout: the producer gives up on its requests in flight and sends them again on
    a new connection, while the broker, resumed, appends the ones it had already read, so
    the retries are duplicates it must recognise. Halfway, the broker is killed (SIGKILL)
    and restarted: it rebuilds its producer state from the log."""
    topic, count, keys = topic_name("idem"), 20_000, 10
    create_topic(java, broker, topic, 3)
    faults: list[tuple[str, int]] = []

    def pause_then_crash(event: dict) -> None:
        if not faults and event["acked"] >= count // 4:
            faults.append(("pause", event["acked"]))
            os.kill(broker.pid, signal.SIGSTOP)
            time.sleep(REQUEST_TIMEOUT_MS / 1000 + 2)
            os.kill(broker.pid, signal.SIGCONT)
        elif len(faults) == 1 and event["acked"] >= count // 2:
            faults.append(("crash", event["acked"]))
            broker.restart(signal.SIGKILL)

    sent = java.call(
        "produce",
        bootstrap=broker.bootstrap,
        topic=topic,
        count=count,
        keys=keys,
        event_every=1000,
        on_event=pause_then_crash,
        props={
            "max.in.flight.requests.per.connection": 5,
            "batch.size": 4096,
            "delivery.timeout.ms": 120_000,
            "request.timeout.ms": REQUEST_TIMEOUT_MS,
        },
    )
    assert [what for what, _ in faults] == ["pause", "crash"]
    assert faults[-1][1] < count  # the broker died while records were in flight
    assert sent["errors"] == [] and sent["acked"] == count

    by_partition = values_by_partition(java, broker, topic, "read_uncommitted")
    written = sorted(int(v) for values in by_partition.values() for v in values)
    assert written == list(range(count))  # none lost, none twice
    for values in by_partition.values():  # a key's records in the order sent
        for key in range(keys):
            of_key = [int(v) for v in values if int(v) % keys == key]
            assert of_key == sorted(of_key)

    partitions = [f"{topic}-{p}" for p in by_partition]
    producers = java.call("describe-producers", bootstrap=broker.bootstrap, partitions=partitions)
    ids = {p["producer_id"] for states in producers.values() for p in states}
    assert len(ids) == 1, producers
    for p, values in by_partition.items():
        (state,) = producers[f"{topic}-{p}"]
        assert state["last_sequence"] == len(values) - 1


@pytest.mark.spec("JAVA-3")
def test_the_transactional_producer_commits_aborts_and_is_fenced(java, broker):
    topic, group = topic_name("txn"), f"txn-group-{uuid.uuid4().hex[:6]}"
    create_topic(java, broker, topic, 2)
    seen = java.call(
        "transactions",
        bootstrap=broker.bootstrap,
        topic=topic,
        group=group,
        transactional_id=f"tx-{uuid.uuid4().hex[:6]}",
        records=10,
    )

    def of(prefix: str, partition: int) -> list[str]:  # k0 -> partition 0, k1 -> 1
        return [f"{prefix}{i}" for i in range(10) if i % 2 == partition]

    open_txn = seen["while_open"]
    committed, uncommitted = open_txn["read_committed"], open_txn["read_uncommitted"]
    for p in (0, 1):
        # The last stable offset stops at the open transaction's first record: c1 (5
        # records and a commit marker), a- (5 records and an abort marker) come before it.
        assert committed["end_offsets"][f"{topic}-{p}"] == 12
        assert uncommitted["end_offsets"][f"{topic}-{p}"] == 17
    assert sorted(committed["values"]) == sorted(of("c1-", 0) + of("c1-", 1))
    assert {v.split("-")[0] for v in uncommitted["values"]} == {"c1", "a", "c2"}

    # Offsets sent to a transaction count only once it commits.
    assert seen["offsets_after_abort"] == {} and seen["offsets_while_open"] == {}
    assert seen["offsets_after_commit"] == {f"{topic}-0": 7}
    # transactions v2 (the broker's default transaction.version): the zombie's first produce
    # has the leader add its partition, the coordinator says fenced, and the leader answers
    # INVALID_PRODUCER_EPOCH, as Kafka 4.4 does (TXN-95)
    assert seen["fenced"].endswith("InvalidProducerEpochException")

    after = values_by_partition(java, broker, topic, "read_committed")
    for p in (0, 1):
        assert after[p] == of("c1-", p) + of("c2-", p) + of("c3-", p)
    everything = values_by_partition(java, broker, topic, "read_uncommitted")
    assert all(v in everything[p] for p in (0, 1) for v in of("a-", p))  # aborted, still there
