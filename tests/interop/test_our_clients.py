"""kafka-ref's own producer, consumer, admin client and console tools against a kafka-ref broker.

Uses the session broker of conftest.py. The codec topics (`oc-<codec>`) are added to
`produced`, so test_restart.py also reads them back with librdkafka after the restarts: a
second, independent consumer of the batches our producer built.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest
from kafka import KafkaProducer

from kafka_ref.cli import main
from kafka_ref.client import (
    Admin,
    ConfigResource,
    Consumer,
    NewTopic,
    Producer,
    TopicPartition,
)
from kafka_ref.client.partitioner import partition_for_key
from kafka_ref.client.subscription_state import NoOffsetForPartitionError
from kafka_ref.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from tests.interop.conftest import T_BASE, Produced, offset_inside_a_batch

pytestmark = pytest.mark.timeout(120)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RECORDS = 10_000
PARTITIONS = 3


def key(i: int) -> bytes:
    return b"key-%d" % i


def value(i: int) -> bytes:
    return b"value-%d-" % i + b"z" * (i % 30)


def consume(consumer: Consumer, expected: int, timeout: float = 30.0) -> list:
    records: list = []
    deadline = time.monotonic() + timeout
    while len(records) < expected and time.monotonic() < deadline:
        records.extend(consumer.poll(0.5))
    return records


def as_produced(records) -> list[Produced]:
    return sorted(Produced(r.partition, r.offset, r.key, r.value, r.timestamp) for r in records)


@pytest.fixture(scope="module")
def bootstrap(kafka_ref_broker) -> str:
    return kafka_ref_broker.bootstrap


@pytest.fixture(scope="module")
def admin(bootstrap):
    client = Admin(bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def topics(bootstrap, admin, produced) -> dict[str, str]:
    """One topic per codec: 10k keyed records each from our producer with acks=all."""
    names = {codec: f"oc-{codec}" for codec in CODECS}
    admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in names.values()])
    for codec, name in names.items():
        with Producer(bootstrap, acks="all", compression_type=codec) as producer:
            futures = [
                producer.send(name, value(i), key=key(i), timestamp=T_BASE + i)
                for i in range(RECORDS)
            ]
            producer.flush(60)
        sent = [f.result(0) for f in futures]
        produced[name] = sorted(
            Produced(m.partition, m.offset, key(i), value(i), m.timestamp)
            for i, m in enumerate(sent)
        )
    return names


@pytest.mark.spec("CLIENT-2", "CLIENT-6")
@pytest.mark.parametrize("codec", CODECS)
def test_keyed_records_land_by_murmur2_with_dense_offsets(topics, produced, codec):
    records = produced[topics[codec]]
    assert len(records) == RECORDS
    by_partition: dict[int, list[int]] = {}
    for r in records:
        assert r.partition == partition_for_key(r.key, PARTITIONS)
        by_partition.setdefault(r.partition, []).append(r.offset)
    assert sorted(by_partition) == list(range(PARTITIONS))
    for offsets in by_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))
    # in send order within a partition: the key number grows with the offset
    for p in range(PARTITIONS):
        numbers = [int(r.key[4:]) for r in sorted(x for x in records if x.partition == p)]
        assert numbers == sorted(numbers)


@pytest.mark.spec("CLIENT-6")
@pytest.mark.parametrize("codec", CODECS)
def test_consume_everything_by_assignment(bootstrap, topics, produced, codec):
    name = topics[codec]
    with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=2000) as consumer:
        consumer.assign([TopicPartition(name, p) for p in range(PARTITIONS)])
        records = consume(consumer, RECORDS)
        assert as_produced(records) == produced[name]
        assert {r.timestamp_type for r in records} == {0}  # CreateTime
        assert consumer.poll(0.2) == []  # nothing more, no duplicates


@pytest.mark.spec("CLIENT-16")
def test_the_next_fetch_is_sent_before_poll_returns(bootstrap, topics, produced):
    name = topics["none"]
    size = sum(1 for r in produced[name] if r.partition == 1)
    with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=RECORDS) as consumer:
        consumer.assign([TopicPartition(name, 1)])
        records = consume(consumer, size)  # one answer holds the whole partition
        assert len(records) == size and not consumer.fetcher.completed
        # ... and while we look at them, the next Fetch already waits at the broker
        assert consumer.fetcher.nodes_with_pending_fetch == {0}
        assert consumer.client.in_flight_count() >= 1
        assert consumer.poll(0.2) == []


@pytest.mark.spec("CLIENT-13")
@pytest.mark.parametrize("codec", CODECS)
def test_consume_from_an_offset_inside_a_batch(kafka_ref_broker, topics, produced, codec):
    name = topics[codec]
    partition0 = [r for r in produced[name] if r.partition == 0]
    start = offset_inside_a_batch(kafka_ref_broker.data_dir, name, 0, len(partition0) // 2)
    bootstrap = kafka_ref_broker.bootstrap
    with Consumer(bootstrap, auto_offset_reset="none") as consumer:
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        consumer.seek(tp, start)
        assert consumer.position(tp) == start
        records = consume(consumer, len(partition0) - start)
    assert as_produced(records) == partition0[start:]  # nothing below `start` returned


@pytest.mark.spec("CLIENT-17")
@pytest.mark.parametrize("codec", CODECS)
def test_consume_from_a_timestamp(bootstrap, topics, produced, codec):
    name = topics[codec]
    target = T_BASE + RECORDS * 3 // 4
    with Consumer(bootstrap) as consumer:
        tps = [TopicPartition(name, p) for p in range(PARTITIONS)]
        found = consumer.offsets_for_times(dict.fromkeys(tps, target))
        late = consumer.offsets_for_times(dict.fromkeys(tps, T_BASE + RECORDS + 1000))
        assert all(v is None for v in late.values())
        consumer.assign(tps)
        for tp in tps:
            expected = min(
                r for r in produced[name] if r.partition == tp.partition and r.timestamp >= target
            )
            assert found[tp] == (expected.offset, expected.timestamp)
            consumer.seek(tp, found[tp].offset)
        wanted = [r for r in produced[name] if r.timestamp >= target]
        records = consume(consumer, len(wanted))
    assert as_produced(records) == wanted


@pytest.mark.spec("CLIENT-2")
def test_our_partitioner_agrees_with_kafka_pythons_producer(bootstrap, admin):
    admin.create_topics([NewTopic("oc-kp", 7, 1), NewTopic("oc-ours", 7, 1)])
    keys = [b"user-%d" % i for i in range(300)] + [b"", b"\x00\xff", "ключ".encode()]
    theirs = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
    their_partitions = [theirs.send("oc-kp", b"v", key=k).get(30).partition for k in keys]
    theirs.close()
    with Producer(bootstrap) as ours:
        futures = [ours.send("oc-ours", b"v", key=k) for k in keys]
        ours.flush(30)
    assert [f.result().partition for f in futures] == their_partitions
    assert len(set(their_partitions)) == 7


@pytest.mark.spec("CLIENT-4", "CLIENT-10", "CLIENT-9")
def test_auto_created_topic_acks_0_and_1_and_sticky_keyless(bootstrap, admin):
    # the first Metadata answer says the topic is not there yet (being created): retry
    with Producer(bootstrap, acks=0, linger_ms=20) as producer:
        zero = [producer.send("oc-auto", b"v%d" % i) for i in range(50)]
        producer.flush(30)
    assert {f.result().offset for f in zero} == {-1}
    with Producer(bootstrap, acks=1, linger_ms=10_000, batch_size=1_000_000) as producer:
        ones = [producer.send("oc-auto", b"w%d" % i) for i in range(50)]
        producer.flush(30)
    assert len({f.result().partition for f in ones}) == 1  # one sticky batch
    offsets = [f.result().offset for f in ones]
    assert offsets == list(range(offsets[0], offsets[0] + 50))
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        tps = [TopicPartition("oc-auto", p) for p in consumer.partitions_for_topic("oc-auto")]
        assert sum(consumer.end_offsets(tps).values()) == 100  # acks=0 records did arrive


@pytest.mark.spec("CLIENT-7")
def test_a_non_retriable_error_fails_the_future(bootstrap, admin):
    admin.create_topics([NewTopic("oc-small", 1, 1, configs={"max.message.bytes": "2000"})])
    with Producer(bootstrap, batch_size=100_000) as producer:
        big = producer.send("oc-small", b"x" * 10_000)
        fine = producer.send("oc-small", b"y" * 10)
        with pytest.raises(KafkaError) as failure:
            big.result(30)
        assert failure.value.code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE)
        producer.flush(30)
    # both records were in one batch: the broker refuses a batch whole
    assert fine.exception() is not None
    with Producer(bootstrap) as producer, pytest.raises(KafkaError):
        producer.send("no such/topic", b"x").result(30)  # INVALID_TOPIC: not a name


@pytest.mark.spec("CLIENT-15")
def test_auto_offset_reset_after_records_are_deleted(bootstrap, admin):
    admin.create_topics([NewTopic("oc-reset", 1, 1)])
    tp = TopicPartition("oc-reset", 0)
    with Producer(bootstrap) as producer:
        for i in range(100):
            producer.send("oc-reset", b"%d" % i)
    assert admin.delete_records({tp: 60}) == {tp: 60}
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert consumer.beginning_offsets([tp]) == {tp: 60}
        consumer.seek(tp, 10)  # below the log start: OFFSET_OUT_OF_RANGE, then earliest
        records = consume(consumer, 40)
        assert [r.offset for r in records] == list(range(60, 100))
    with Consumer(bootstrap, auto_offset_reset="latest") as consumer:
        consumer.assign([tp])
        assert consumer.position(tp) == 100
        assert consumer.poll(0.3) == []
    with Consumer(bootstrap, auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        with pytest.raises(NoOffsetForPartitionError):
            consumer.poll(1.0)
        consumer.seek(tp, 10)
        with pytest.raises(OffsetOutOfRangeError):
            consume(consumer, 1, timeout=10)


@pytest.mark.spec("CLIENT-18")
def test_admin_topics_partitions_and_configs(bootstrap, admin):
    admin.create_topics([NewTopic("oc-admin", 2, 1, configs={"retention.ms": "123456"})])
    with pytest.raises(KafkaError) as exists:
        admin.create_topics([NewTopic("oc-admin", 2, 1)])
    assert exists.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert "oc-admin" in admin.list_topics()
    (described,) = admin.describe_topics(["oc-admin"])
    assert [(p.partition, p.leader, p.replicas) for p in described.partitions] == [
        (0, 0, (0,)),
        (1, 0, (0,)),
    ]
    resource = ConfigResource(ConfigResource.TOPIC, "oc-admin")
    configs = admin.describe_configs([resource])[resource]
    assert configs["retention.ms"].value == "123456" and not configs["retention.ms"].is_default
    assert configs["cleanup.policy"].is_default
    broker = ConfigResource(ConfigResource.BROKER, "0")
    assert "num.partitions" in admin.describe_configs([broker])[broker]
    admin.create_partitions({"oc-admin": 5})
    assert len(admin.describe_topics(["oc-admin"])[0].partitions) == 5
    with pytest.raises(KafkaError) as fewer:
        admin.create_partitions({"oc-admin": 2})
    assert fewer.value.code == ErrorCode.INVALID_PARTITIONS
    nodes, controller, cluster_id = admin.describe_cluster()
    assert [n.node_id for n in nodes] == [controller] == [0] and cluster_id
    admin.delete_topics(["oc-admin"])
    assert "oc-admin" not in admin.list_topics()
    with pytest.raises(KafkaError) as missing:
        admin.describe_topics(["oc-admin"])
    assert missing.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def run_cli(capsys, monkeypatch, argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.spec("CLIENT-19")
def test_console_tools_in_process(bootstrap, capsys, monkeypatch):
    b = ["--bootstrap-server", bootstrap]
    topic = ["--topic", "oc-cli"]
    code, out, _ = run_cli(
        capsys,
        monkeypatch,
        ["topics", *b, "--create", *topic, "--partitions", "2", "--config", "retention.ms=99999"],
    )
    assert (code, out) == (0, "Created topic oc-cli.\n")
    code, _, err = run_cli(capsys, monkeypatch, ["topics", *b, "--create", *topic])
    assert code == 1 and "TOPIC_ALREADY_EXISTS" in err and err.count("\n") == 1
    assert (
        run_cli(capsys, monkeypatch, ["topics", *b, "--create", *topic, "--if-not-exists"])[0] == 0
    )
    code, out, _ = run_cli(capsys, monkeypatch, ["topics", *b, "--list"])
    assert code == 0 and "oc-cli" in out.splitlines()
    code, out, _ = run_cli(capsys, monkeypatch, ["topics", *b, "--describe", *topic])
    lines = out.splitlines()
    assert lines[0] == (
        "Topic: oc-cli\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: retention.ms=99999"
    )
    assert lines[1:] == [
        f"\tTopic: oc-cli\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0" for p in (0, 1)
    ]
    lines_in = b"".join(b"user-%d:click-%d\n" % (i % 5, i) for i in range(20))
    code, _, err = run_cli(
        capsys,
        monkeypatch,
        [
            "produce",
            *b,
            *topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            "--compression-type",
            "lz4",
        ],
        lines_in,
    )
    assert (code, err) == (0, "")
    code, out, err = run_cli(
        capsys,
        monkeypatch,
        [
            "consume",
            *b,
            *topic,
            "--from-beginning",
            "--max-messages",
            "20",
            "--property",
            "print.key=true",
            "print.partition=true",
            "print.offset=true",
        ],
    )
    assert code == 0 and err.strip() == "Processed a total of 20 messages"
    printed = sorted(tuple(line.split("\t")) for line in out.splitlines())
    expected = sorted(
        (f"Partition:{partition_for_key(b'user-%d' % (i % 5), 2)}", f"user-{i % 5}", f"click-{i}")
        for i in range(20)
    )
    assert sorted((p, k, v) for p, _, k, v in printed) == expected
    partition = printed[0][0].split(":")[1]
    code, out, _ = run_cli(
        capsys,
        monkeypatch,
        [
            "consume",
            *b,
            *topic,
            "--partition",
            partition,
            "--offset",
            "1",
            "--timeout-ms",
            "1500",
            "--property",
            "print.offset=true",
        ],
    )
    offsets = [line.split("\t")[0] for line in out.splitlines()]
    assert code == 0 and offsets[0] == "Offset:1" and "Offset:0" not in offsets
    code, _, err = run_cli(
        capsys, monkeypatch, ["produce", *b, *topic, "--property", "parse.key=true"], b"no tab\n"
    )
    assert code == 1 and "No key separator found on line number 1" in err
    code, out, _ = run_cli(
        capsys, monkeypatch, ["topics", *b, "--alter", *topic, "--partitions", "3"]
    )
    assert code == 0
    code, out, _ = run_cli(capsys, monkeypatch, ["topics", *b, "--delete", *topic])
    assert (code, out) == (0, "Deleted topic oc-cli.\n")
    code, _, err = run_cli(capsys, monkeypatch, ["topics", *b, "--delete", *topic])
    assert code == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in err
    assert run_cli(capsys, monkeypatch, ["topics", *b, "--delete", *topic, "--if-exists"])[0] == 0


@pytest.mark.spec("CLIENT-19")
def test_console_tools_as_commands(bootstrap):
    """The real command line: a pipe into `produce`, then `consume` in another process."""
    command = [sys.executable, "-c", "import sys; from kafka_ref.cli import main; sys.exit(main())"]
    b = ["--bootstrap-server", bootstrap, "--topic", "oc-pipe"]
    produce = subprocess.run(
        [*command, "produce", *b, "--acks", "1"],
        input=b"one\ntwo\nthree\n",
        capture_output=True,
        timeout=60,
    )
    assert produce.returncode == 0, produce.stderr
    consume = subprocess.run(
        [*command, "consume", *b, "--from-beginning", "--max-messages", "3"],
        capture_output=True,
        timeout=60,
    )
    assert consume.returncode == 0, consume.stderr
    assert sorted(consume.stdout.splitlines()) == [b"one", b"three", b"two"]
    assert consume.stderr.decode().strip().endswith("Processed a total of 3 messages")


@pytest.mark.spec("CLIENT-7", "CLIENT-10")
def test_producer_and_consumer_carry_on_across_a_broker_restart(kafka_ref_broker, bootstrap):
    """SIGTERM the broker with a Fetch in flight and records queued; both clients recover."""
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic("oc-restart", 2, 1)])
    tps = [TopicPartition("oc-restart", p) for p in range(2)]
    with Producer(bootstrap) as producer, Consumer(bootstrap, auto_offset_reset="earliest") as c:
        before = [producer.send("oc-restart", b"a%d" % i, key=b"%d" % i) for i in range(300)]
        producer.flush(30)
        c.assign(tps)
        seen = {r.value for r in consume(c, 300)}
        assert len(seen) == 300 and c.fetcher.nodes_with_pending_fetch == {0}  # a Fetch waits
        kafka_ref_broker.stop()
        during = [producer.send("oc-restart", b"b%d" % i, key=b"%d" % i) for i in range(300)]
        kafka_ref_broker.start()
        producer.flush(60)
        seen |= {r.value for r in consume(c, 300, timeout=60)}
    assert all(f.exception() is None for f in before + during)
    assert len(seen) == 600


@pytest.mark.spec("CLIENT-19")
def test_console_consumer_in_a_group_continues_where_it_stopped(group_broker, capsys, monkeypatch):
    b = ["--bootstrap-server", group_broker.bootstrap]
    topic = ["--topic", "oc-cli-group"]
    assert run_cli(capsys, monkeypatch, ["topics", *b, "--create", *topic])[0] == 0
    lines_in = b"".join(b"line-%d\n" % i for i in range(10))
    assert run_cli(capsys, monkeypatch, ["produce", *b, *topic], lines_in)[0] == 0
    group = ["--group", "oc-cli-readers"]
    code, out, err = run_cli(
        capsys,
        monkeypatch,
        ["consume", *b, *topic, *group, "--from-beginning", "--max-messages", "4"],
    )
    assert code == 0 and out.split() == [f"line-{i}" for i in range(4)]
    code, out, err = run_cli(
        capsys, monkeypatch, ["consume", *b, *topic, *group, "--timeout-ms", "1500"]
    )
    assert code == 0 and out.split() == [f"line-{i}" for i in range(4, 10)]
    assert err.strip() == "Processed a total of 6 messages"
    code, _, err = run_cli(capsys, monkeypatch, ["consume", *b, *topic, *group, "--partition", "0"])
    assert code == 2 and "cannot be specified together" in err
