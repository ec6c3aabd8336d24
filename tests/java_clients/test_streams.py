"""Kafka Streams with exactly_once_v2 over kafka-ref: a word count killed and restarted.

The word count (tests/java, `WordCount`) reads lines, repartitions the words by word and
counts them in a state store backed by a compacted changelog, sending each new count to
the output topic. Each of its stream threads commits, in one transaction, the counts it
sent, the changelog records and the input offsets (KIP-447). The test writes the input in
chunks of known content (seeded): each run of the application starts, and once it runs a
chunk is written at a steady pace while it counts. At a random moment of that (seeded), as
soon as a transaction of the application is open with counts already written to the output
(its last stable offset below its high watermark), the run is killed with SIGKILL; the next
run starts on the same state directory; the last one is left to finish. Read
read_committed, each word's counts on the output are then exactly 1, 2, ..., n, n its
number of occurrences in the input: a count missing or doubled by a crash shows as a gap
or a repeat.

One instance, then two (the one killed drawn each time, the other taking over its tasks
until it is back). CI runs two kills each; KAFKA_REF_LONG=1 runs ten, and two instances
that are static members of the group too. Last, over a three-broker cluster, the brokers
are killed instead, each in turn (three kills; nine in the long form). Kafka Streams leans
on much of the broker: internal topics created with configs, the classic group with its
own assignor, transactions with offsets, read_committed fetches, DeleteRecords on the
repartition topic.
"""

from __future__ import annotations

import collections
import json
import random
import signal
import struct
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_ref.conformance.wire import Wire
from tests.conftest import campaign
from tests.java_clients.harness import wordcount_command
from tests.java_clients.test_producer import create_topic

KILLS = campaign(2, 10)
SEED = 20_240_501
WORDS = [f"w{i:02d}" for i in range(40)]
LINES_PER_CHUNK = 300
WORDS_PER_LINE = 6
PARTITIONS = 3

pytestmark = pytest.mark.timeout(180 + 60 * KILLS)


def input_chunks(rng: random.Random, chunks: int) -> list[list[str]]:
    return [
        [" ".join(rng.choice(WORDS) for _ in range(WORDS_PER_LINE)) for _ in range(LINES_PER_CHUNK)]
        for _ in range(chunks)
    ]


def write_lines(bootstrap: str, topic: str, lines: list[str], seconds: float) -> None:
    """`lines` to `topic` in ten equal parts over about `seconds`."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i, line in enumerate(lines):
        producer.produce(topic, line.encode(), key=str(i).encode())
        if (i + 1) % (len(lines) // 10) == 0:
            producer.flush(30)
            time.sleep(seconds / 10)
    assert producer.flush(30) == 0


def counts_on_output(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """word -> every count the output holds for it, in offset order, read read_committed."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    counts: dict[str, list[int]] = collections.defaultdict(list)
    at_end: set[int] = set()
    deadline = time.monotonic() + 30
    while len(at_end) < PARTITIONS and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            if message.error() is not None:
                at_end.add(message.partition())  # _PARTITION_EOF
                continue
            counts[message.key().decode()].append(struct.unpack(">q", message.value())[0])
    consumer.close()
    assert len(at_end) == PARTITIONS, "the output could not be read to its end"
    return counts


class StreamsApp:
    """One run of the word count; its state changes come as events on stdout."""

    def __init__(self, log_path: str, **arguments: object) -> None:
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                wordcount_command(**arguments), stdout=subprocess.PIPE, stderr=log, text=True
            )

    def wait_running(self, timeout: float = 90) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the word count exited ({self.proc.wait()})")
            if json.loads(line)["event"]["state"] == "RUNNING":
                return
        raise AssertionError("the word count did not reach RUNNING")

    def stop(self, sig: int) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


# (instances, static membership): the long form adds static members (KIP-345), each
# restart taking its killed predecessor's place under the same group.instance.id.
VARIANTS = {"one-instance": (1, False), "two-instances": (2, False)}
if campaign(0, 1):
    VARIANTS["two-static-instances"] = (2, True)


@pytest.mark.spec("JAVA-27")
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_word_count_killed_and_restarted_counts_every_word_exactly_once(
    java, broker, tmp_path, variant
):
    """With two instances, the one killed is drawn each time; the other takes over its tasks
    (a rebalance) until it is back."""
    instances, static = VARIANTS[variant]
    rng = random.Random(SEED + instances)
    app_id = f"wordcount-{uuid.uuid4().hex[:6]}"
    source, sink = f"{app_id}-lines", f"{app_id}-counts"
    create_topic(java, broker, source, PARTITIONS)
    create_topic(java, broker, sink, PARTITIONS)
    chunks = input_chunks(rng, KILLS + 1)
    expected = collections.Counter(w for chunk in chunks for line in chunk for w in line.split())

    def start(i: int) -> StreamsApp:
        static_member = {"consumer.group.instance.id": f"{app_id}-{i}"} if static else {}
        app = StreamsApp(
            str(tmp_path / f"wordcount-{i}.log"),
            application_id=app_id,
            bootstrap=broker.bootstrap,
            input=source,
            output=sink,
            state_dir=str(tmp_path / f"state-{i}"),
            props=static_member,
        )
        app.wait_running()
        return app

    apps: list[StreamsApp] = []
    kills = []
    try:
        apps.extend(start(i) for i in range(instances))
        for run, chunk in enumerate(chunks):
            writer = threading.Thread(target=write_lines, args=(broker.bootstrap, source, chunk, 2))
            writer.start()
            if run < KILLS:
                victim, pause = rng.randrange(instances), round(rng.uniform(0.2, 1.8), 2)
                time.sleep(pause)
                caught = wait_open_transaction(broker.port, sink)
                apps[victim].stop(signal.SIGKILL)
                kills.append((victim, pause, caught))
                writer.join(60)
                apps[victim] = start(victim)
            else:
                writer.join(60)
                wait_for_counts(broker.bootstrap, sink, expected)
    finally:
        for app in apps:
            app.stop(signal.SIGTERM)
    # Each kill cut a transaction short: counts it had sent are in the log, never committed.
    assert len(kills) == KILLS and all(caught for *_, caught in kills), kills

    # Streams deleted the repartition topic's processed records (DeleteRecords).
    with Wire("127.0.0.1", broker.port) as wire:
        repartition = f"{app_id}-counts-repartition"
        starts = [wire.list_offset(repartition, p, -2).offset for p in range(PARTITIONS)]
    assert any(start > 0 for start in starts), starts

    counts = counts_on_output(broker.bootstrap, sink)
    assert set(counts) == set(expected), f"seed {SEED}"
    wrong = {w: c for w, c in counts.items() if c != list(range(1, expected[w] + 1))}
    assert not wrong, f"seed {SEED}, kills {kills}: {summarize(wrong, expected)}"


def wait_open_transaction(port: int, topic: str, timeout: float = 20) -> bool:
    """Waits until a transaction holds records on `topic` (a partition's last stable offset
    is below its high watermark); False if none did within `timeout`."""
    read_uncommitted, read_committed, latest = 0, 1, -1
    deadline = time.monotonic() + timeout
    with Wire("127.0.0.1", port) as wire:
        while time.monotonic() < deadline:
            for p in range(PARTITIONS):
                stable = wire.list_offset(topic, p, latest, read_committed).offset
                if stable < wire.list_offset(topic, p, latest, read_uncommitted).offset:
                    return True
            time.sleep(0.01)
    return False


def wait_for_counts(bootstrap: str, topic: str, expected: collections.Counter) -> None:
    deadline = time.monotonic() + 120
    while True:
        last = {w: c[-1] for w, c in counts_on_output(bootstrap, topic).items()}
        if last == dict(expected) or time.monotonic() > deadline:
            return  # the final check says what is wrong, if anything
        time.sleep(1)


def summarize(wrong: dict[str, list[int]], expected: collections.Counter) -> str:
    """Each wrong word: its expected count, and where its counts skip or repeat."""
    lines = []
    for word, counts in sorted(wrong.items())[:10]:
        repeats = [c for c, n in collections.Counter(counts).items() if n > 1]
        missing = sorted(set(range(1, expected[word] + 1)) - set(counts))
        lines.append(
            f"{word}: expected {expected[word]}, last {counts[-1] if counts else None}, "
            f"repeated {repeats[:5]}, missing {missing[:5]}"
        )
    return "; ".join(lines)


BROKER_KILLS = campaign(3, 9)


@pytest.mark.spec("JAVA-28")
@pytest.mark.timeout(240 + 60 * BROKER_KILLS)
def test_a_word_count_stays_exact_when_brokers_of_a_cluster_crash(java, cluster, tmp_path):
    """The word count over a kafka-ref cluster of three brokers (every topic replicated
    three times, min.insync.replicas 2, acks=all): while a chunk is written and counted, a
    broker is killed with SIGKILL and then restarted; each broker in turn, in a seeded order,
    so the coordinators of the application's group and transactions die too."""
    rng = random.Random(SEED)
    app_id = f"wordcount-{uuid.uuid4().hex[:6]}"
    source, sink, bootstrap = f"{app_id}-lines", f"{app_id}-counts", cluster.bootstrap()
    replicated = {
        "partitions": PARTITIONS,
        "replication_factor": 3,
        "configs": {"min.insync.replicas": "2"},
    }
    topics = [{"name": name, **replicated} for name in (source, sink)]
    assert java.call("create-topics", bootstrap=bootstrap, topics=topics) == {
        source: "ok",
        sink: "ok",
    }
    chunks = input_chunks(rng, BROKER_KILLS + 1)
    expected = collections.Counter(w for chunk in chunks for line in chunk for w in line.split())
    victims = [rng.sample([1, 2, 3], 3) for _ in range(0, BROKER_KILLS, 3)]
    victims = [v for order in victims for v in order][:BROKER_KILLS]
    app = StreamsApp(
        str(tmp_path / "wordcount.log"),
        application_id=app_id,
        bootstrap=bootstrap,
        input=source,
        output=sink,
        state_dir=str(tmp_path / "state"),
        props={"replication.factor": "3", "topic.min.insync.replicas": "2"},
    )
    try:
        app.wait_running()
        for run, chunk in enumerate(chunks):
            writer = threading.Thread(target=write_lines, args=(bootstrap, source, chunk, 2))
            writer.start()
            if run < BROKER_KILLS:
                time.sleep(round(rng.uniform(0.2, 1.8), 2))
                cluster.stop(victims[run], signal.SIGKILL)
            writer.join(120)
            cluster.ensure_running()
        wait_for_counts(cluster.bootstrap(), sink, expected)
        running = app.proc.poll() is None  # throughout: every fault retried, none fatal
    finally:
        app.stop(signal.SIGTERM)
    assert running, f"the word count exited with {app.proc.returncode}"

    counts = counts_on_output(cluster.bootstrap(), sink)
    assert set(counts) == set(expected), f"seed {SEED}"
    wrong = {w: c for w, c in counts.items() if c != list(range(1, expected[w] + 1))}
    assert not wrong, f"seed {SEED}, brokers killed {victims}: {summarize(wrong, expected)}"
