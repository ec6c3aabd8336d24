"""`kafka-ref bench cluster`: what replication costs, as one ratio measured in one run.

Replication's price is paid on the produce path: with `acks=all` the leader answers only
once every in-sync replica has fetched the batch (REPL-4), so each acknowledgement waits
for a follower's fetch round trip on top of the leader's own append, and the leader
serves its followers' fetches besides the producer. The honest comparison is the same
producer, the same messages, on the same machine at the same time:

* **single**: one kafka-ref broker (embedded mode), a topic with replication factor 1,
  `acks=1`;
* **cluster**: a local ZooKeeper and 3 kafka-ref broker processes
  (kafka_ref/tools/cluster.py), a topic with replication factor 3, `acks=all`.

For every message size and partition count the bench produces `--messages` messages with
confluent-kafka to each, after one acknowledged warm-up message per partition (`bench
broker`'s produce phase, kafka_ref/tools/bench_broker.py), alternating which goes first
when `--repeat` is above 1, and prints each measurement and then one `cluster ratio`
object: the cluster's MB/s and msgs/s over the single broker's
(kafka-ref aims at 0.5 or more). Everything runs on loopback: the figure is the cost of
the replication protocol and of the extra processes sharing the CPUs, not of a network.
All processes are stopped whatever happens; their logs are kept if something failed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

from kafka_ref.tools import cluster as local_cluster
from kafka_ref.tools.bench_broker import (
    BenchError,
    Case,
    Settings,
    Target,
    admin_config,
    check_reachable,
    create_topic,
    delete_topic,
    measure_produce,
)
from kafka_ref.tools.bench_compare import kafka_ref_process
from kafka_ref.tools.bench_report import Progress

BROKERS = 3
SINGLE, CLUSTER = "kafka-ref 1 broker acks=1", "kafka-ref 3 brokers rf=3 acks=all"
READY_SECONDS = 60.0


@contextlib.contextmanager
def local_processes(base: str) -> Iterator[tuple[Target, Target]]:
    """A single broker and a 3-broker cluster on ZooKeeper, stopped on the way out."""
    single = kafka_ref_process(os.path.join(base, "single"), os.path.join(base, "single.log"))
    zookeeper = local_cluster.ZooKeeperServer(os.path.join(base, "zookeeper"))
    configs = {"zookeeper.session.timeout.ms": 18000}  # nothing is killed: Kafka's default
    brokers = [
        local_cluster.BrokerProcess(
            i, os.path.join(base, f"broker-{i}"), zookeeper.connect, configs=configs
        )
        for i in range(1, BROKERS + 1)
    ]
    try:
        single.start()
        zookeeper.start()
        for broker in brokers:
            broker.start()
        bootstrap = ",".join(b.bootstrap for b in brokers)
        cluster = Target(CLUSTER, bootstrap, None, replication_factor=BROKERS)
        wait_for_brokers(cluster, BROKERS)
        yield Target(SINGLE, single.bootstrap, single.pid), cluster
    except RuntimeError as err:  # a process did not start
        raise BenchError(str(err)) from None
    finally:
        for broker in brokers:
            broker.stop()
        zookeeper.stop()
        single.stop()


def wait_for_brokers(target: Target, count: int) -> None:
    """Until Metadata lists `count` brokers and a controller: topics with RF 3 can be made."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(admin_config(target))
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            meta = admin.list_topics(timeout=5)
            if len(meta.brokers) == count and meta.controller_id >= 0:
                return
        time.sleep(0.2)
    raise BenchError(f"the cluster at {target.bootstrap} did not show {count} brokers")


def warm_up(target: Target, topic: str, partitions: int) -> None:
    """One acknowledged message per partition before the clock starts.

    A new topic's followers may ask the leader for its epoch before the leader has applied
    its own state; they then wait `replica.fetch.backoff.ms` (1 s, as in Kafka) before
    asking again, and no acks=all write completes meanwhile. That second is the cost of
    creating a topic, not of replicating it, so it stays out of the measurement."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": target.bootstrap, "acks": "all", "log_level": 4})
    for p in range(partitions):
        producer.produce(topic, b"warm-up", partition=p)
    if producer.flush(30) != 0:
        raise BenchError(f"topic {topic} on {target.bootstrap} does not take acks=all writes")


def produce_once(target: Target, case: Case, settings: Settings, progress: Progress) -> dict:
    topic = create_topic(target, case)
    try:
        warm_up(target, topic, case.partitions)
        name = f"{target.label} {case.size} B p={case.partitions}"
        with progress.step(name, settings.messages) as tick:
            row, _ = measure_produce(target, topic, case, settings, tick)
        return row
    finally:
        delete_topic(target, topic)


def ratio(single: dict, cluster: dict) -> dict:
    """The `cluster ratio` object of one size and partition count."""

    def over(metric: str) -> float | None:
        a, b = cluster[metric], single[metric]
        return round(a / b, 3) if a and b else None

    return {
        "what": "cluster ratio",
        "msg_size": single["msg_size"],
        "partitions": single["partitions"],
        "run": single.get("run"),
        "messages": min(single["messages"], cluster["messages"]),
        "single MB/s": single["MB/s"],
        "cluster MB/s": cluster["MB/s"],
        "single msgs/s": single["msgs/s"],
        "cluster msgs/s": cluster["msgs/s"],
        "ratio MB/s": over("MB/s"),
        "ratio msgs/s": over("msgs/s"),
    }


def bench_cluster(
    settings: Settings, emit: Callable[[dict], None], base: str | None = None
) -> list[dict]:
    """Start everything, measure every case on both, stop everything. Returns all rows."""
    workdir = base or tempfile.mkdtemp(prefix="kafka-ref-bench-cluster-")
    os.makedirs(workdir, exist_ok=True)
    failed = True
    rows: list[dict] = []
    try:
        with local_processes(workdir) as (single, cluster):
            for target in (single, cluster):
                check_reachable(target)
            cases = [(s, p) for s in settings.sizes for p in settings.partitions]
            with Progress(len(cases) * 2 * settings.repeat) as progress:
                for run in range(1, settings.repeat + 1):
                    for size, partitions in cases:
                        order = [(single, "1"), (cluster, "all")]
                        measured: dict[str, dict] = {}
                        for target, acks in order if run % 2 else order[::-1]:
                            row = produce_once(
                                target, Case(size, acks, partitions), settings, progress
                            ) | {"run": run}
                            measured[target.label] = row
                            rows.append(row)
                            emit(row)
                        rows.append(ratio(measured[SINGLE], measured[CLUSTER]))
                        emit(rows[-1])
        failed = False
        return rows
    finally:
        if failed:
            print(f"kafka-ref bench cluster: the logs are in {workdir}", file=sys.stderr)
        elif base is None:
            shutil.rmtree(workdir, ignore_errors=True)
