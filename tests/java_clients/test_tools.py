"""Apache Kafka's own command-line tools, unmodified, against one kafka-ref broker.

Each tool runs as its `bin/*.sh` script would (kafka_ref.apache.tools.tool_command): the
same main class of the pinned Kafka, the same arguments. Its output is read as a user
reads it, and what it changed is checked with the Java admin client (the harness), which is
cheaper than another tool's JVM. A tool starts a JVM of its own (about a second on an idle
machine), so each test runs a few. kafka-reassign-partitions and kafka-leader-election need
a cluster (test_cluster_admin.py), kafka-acls a broker with ACLs on (test_security_admin.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
import zipfile

import pytest
from confluent_kafka import Producer

from kafka_ref.apache.classpath import classpath
from kafka_ref.apache.tools import PERF_JVM_OPTS, TOOLS, tool_command
from kafka_ref.protocol.api_keys import ApiKey
from kafka_ref.protocol.messages import APIS
from tests.java_clients.conftest import run_tool
from tests.java_clients.test_producer import create_topic, topic_name

pytestmark = pytest.mark.timeout(180)


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.spec("JAVA-15")
def test_every_tool_is_a_main_class_of_the_pinned_kafka_and_runs_from_kafka_ref(broker):
    classes = set()
    for jar in classpath().split(os.pathsep):
        if jar.endswith(".jar"):
            with zipfile.ZipFile(jar) as opened:
                classes.update(n for n in opened.namelist() if n.endswith(".class"))
    for name, main in TOOLS.items():
        assert main.replace(".", "/") + ".class" in classes, f"{name}: no class {main}"

    cli = [sys.executable, "-m", "kafka_ref.cli", "reference-kafka"]
    listed = subprocess.run(
        [*cli, "--tool", "kafka-broker-api-versions", "--", "--bootstrap-server", broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # kafka-broker-api-versions prints the broker and each API with the versions it serves.
    assert listed.returncode == 0, listed.stderr
    assert f"{broker.bootstrap} (id: 0 rack: null" in listed.stdout
    for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.END_TXN):
        api = APIS[key]
        assert f"({key}): {api.min_version} to {api.max_version} [usable: " in listed.stdout
    unknown = subprocess.run([*cli, "--tool", "kafka-nope"], capture_output=True, text=True)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1


@pytest.mark.spec("JAVA-16")
def test_kafka_topics_creates_describes_alters_and_deletes(java, broker):
    topic, bootstrap = topic_name("tool-topics"), ["--bootstrap-server", broker.bootstrap]
    created = ok(
        run_tool(
            "kafka-topics",
            *bootstrap,
            "--create",
            "--topic",
            topic,
            "--partitions",
            "3",
            "--config",
            "retention.ms=60000",
        )
    )
    assert created.strip() == f"Created topic {topic}."
    ok(run_tool("kafka-topics", *bootstrap, "--alter", "--topic", topic, "--partitions", "4"))
    described = ok(run_tool("kafka-topics", *bootstrap, "--describe", "--topic", topic))
    head, *partitions = described.strip().splitlines()
    assert head.startswith(f"Topic: {topic}\t") and "\tPartitionCount: 4\t" in head
    assert "\tReplicationFactor: 1\t" in head and head.endswith("Configs: retention.ms=60000")
    assert [line.split("\t")[2] for line in partitions] == [f"Partition: {p}" for p in range(4)]
    assert all("\tLeader: 0\tReplicas: 0\tIsr: 0" in line for line in partitions)

    again = run_tool("kafka-topics", *bootstrap, "--create", "--topic", topic)
    assert again.returncode == 1 and f"Topic '{topic}' already exists." in again.stdout
    ok(run_tool("kafka-topics", *bootstrap, "--delete", "--topic", topic))
    assert topic not in java.call("list-topics", bootstrap=broker.bootstrap)


@pytest.mark.spec("JAVA-17")
def test_the_console_producer_and_consumer_carry_keys_and_values(java, broker):
    topic, bootstrap = topic_name("console"), ["--bootstrap-server", broker.bootstrap]
    create_topic(java, broker, topic, 1)
    lines = [f"key{i}:value {i}" for i in range(5)]
    ok(
        run_tool(
            "kafka-console-producer",
            *bootstrap,
            "--topic",
            topic,
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
            stdin="\n".join(lines) + "\n",
        )
    )
    consumed = run_tool(
        "kafka-console-consumer",
        *bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        "5",
        "--group",
        f"console-{uuid.uuid4().hex[:6]}",
        "--formatter-property",
        "print.key=true",
        "--formatter-property",
        "print.offset=true",
        "--formatter-property",
        "key.separator=|",
    )
    assert ok(consumed).splitlines() == [f"Offset:{i}|key{i}|value {i}" for i in range(5)]
    assert "Processed a total of 5 messages" in consumed.stderr
    read = java.call("read", bootstrap=broker.bootstrap, topic=topic)["records"]["0"]
    assert [(key, value) for _, key, value, _ in read] == [tuple(line.split(":")) for line in lines]


@pytest.mark.spec("JAVA-18")
def test_kafka_consumer_groups_lists_describes_resets_and_deletes(java, broker):
    topic, group = topic_name("tool-groups"), f"tool-g-{uuid.uuid4().hex[:6]}"
    bootstrap = ["--bootstrap-server", broker.bootstrap]
    create_topic(java, broker, topic, 1)
    # ten records; the group commits offset 7 and has no member left
    java.call("seek", bootstrap=broker.bootstrap, topic=topic, group=group, records=10, base=0)

    assert group in ok(run_tool("kafka-consumer-groups", *bootstrap, "--list")).split()
    described = run_tool("kafka-consumer-groups", *bootstrap, "--describe", "--group", group)
    header, row = [line.split() for line in ok(described).strip().splitlines()]
    assert header[:6] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    assert row[:6] == [group, topic, "0", "7", "10", "3"]
    assert f"Consumer group '{group}' has no active members." in described.stderr

    reset = ok(
        run_tool(
            "kafka-consumer-groups",
            *bootstrap,
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            topic,
            "--to-offset",
            "2",
            "--execute",
        )
    )
    assert reset.split()[-4:] == [group, topic, "0", "2"]
    offsets = java.call("list-group-offsets", bootstrap=broker.bootstrap, group=group)
    assert offsets[f"{topic}-0"][0] == 2
    dropped = ok(
        run_tool(
            "kafka-consumer-groups",
            *bootstrap,
            "--delete-offsets",
            "--group",
            group,
            "--topic",
            topic,
        )
    )
    assert f"Request succeeded for deleting offsets from group {group}." in dropped
    assert dropped.split()[-3:] == [topic, "0", "Successful"]
    assert java.call("list-group-offsets", bootstrap=broker.bootstrap, group=group) == {}
    deleted = ok(run_tool("kafka-consumer-groups", *bootstrap, "--delete", "--group", group))
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted
    assert group not in java.call("list-groups", bootstrap=broker.bootstrap)


@pytest.mark.spec("JAVA-19")
def test_kafka_configs_alters_topics_users_clients_and_brokers(java, broker):
    topic, user = topic_name("tool-configs"), f"user-{uuid.uuid4().hex[:6]}"
    bootstrap = ["--bootstrap-server", broker.bootstrap]
    create_topic(java, broker, topic, 1)
    topic_args = ["--entity-type", "topics", "--entity-name", topic]
    done = ok(
        run_tool(
            "kafka-configs",
            *bootstrap,
            "--alter",
            *topic_args,
            "--add-config",
            "retention.ms=1000,cleanup.policy=[delete,compact]",
        )
    )
    assert done.strip() == f"Completed updating config for topic {topic}."
    described = ok(run_tool("kafka-configs", *bootstrap, "--describe", *topic_args))
    assert f"Dynamic configs for topic {topic} are:" in described
    assert (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000"
        in (described)
    )
    assert "  cleanup.policy=delete,compact sensitive=false" in described

    user_args = ["--entity-type", "users", "--entity-name", user]
    ok(
        run_tool(
            "kafka-configs",
            *bootstrap,
            "--alter",
            *user_args,
            "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=secret]",
        )
    )
    ok(
        run_tool(
            "kafka-configs",
            *bootstrap,
            "--alter",
            *user_args,
            "--add-config",
            "producer_byte_rate=1024",
        )
    )
    described = ok(run_tool("kafka-configs", *bootstrap, "--describe", *user_args))
    assert f"Quota configs for user-principal '{user}' are producer_byte_rate=1024.0" in described
    assert (
        f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192"
    ) in described
    scram = java.call("describe-scram", bootstrap=broker.bootstrap, users=[user])
    assert scram == {user: [["SCRAM-SHA-256", 8192]]}

    done = ok(
        run_tool(
            "kafka-configs",
            *bootstrap,
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-default",
            "--add-config",
            "log.cleaner.backoff.ms=20000",
        )
    )
    assert done.strip() == "Completed updating default config for brokers in the cluster."
    cluster = java.call("describe-configs", bootstrap=broker.bootstrap, resources=["broker:"])
    assert cluster["broker:"]["log.cleaner.backoff.ms"]["value"] == "20000"


@pytest.mark.spec("JAVA-21")
def test_kafka_transactions_lists_describes_and_aborts_a_hanging_transaction(java, broker):
    topic, txn_id = topic_name("hanging"), f"hanging-{uuid.uuid4().hex[:6]}"
    bootstrap = ["--bootstrap-server", broker.bootstrap]
    create_topic(java, broker, topic, 1)
    # A transaction left open by a producer that went away: its timeout is long, so it holds
    # the partition's last stable offset at its first record.
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 600_000,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"left open", partition=0)
    assert producer.flush(10) == 0

    def end_offset(isolation: str) -> int:
        read = java.call("read", bootstrap=broker.bootstrap, topic=topic, isolation=isolation)
        return read["end_offsets"][f"{topic}-0"]

    assert (end_offset("read_committed"), end_offset("read_uncommitted")) == (0, 1)

    listed = ok(run_tool("kafka-transactions", *bootstrap, "list"))
    assert any(
        line.split()[:1] == [txn_id] and line.split()[3] == "Ongoing"
        for line in listed.splitlines()
    )
    described = ok(
        run_tool("kafka-transactions", *bootstrap, "describe", "--transactional-id", txn_id)
    )
    txn = dict(zip(*(line.split() for line in described.strip().splitlines()), strict=True))
    assert (txn["TransactionState"], txn["TopicPartitions"]) == ("Ongoing", f"{topic}-0")
    producers = ok(
        run_tool(
            "kafka-transactions",
            *bootstrap,
            "describe-producers",
            "--topic",
            topic,
            "--partition",
            "0",
        )
    )
    state = dict(zip(*(line.split() for line in producers.strip().splitlines()), strict=True))
    assert state["ProducerId"] == txn["ProducerId"]
    assert state["CurrentTransactionStartOffset"] == "0"

    ok(
        run_tool(
            "kafka-transactions",
            *bootstrap,
            "abort",
            "--topic",
            topic,
            "--partition",
            "0",
            "--start-offset",
            "0",
        )
    )
    # The abort marker closes the transaction on the partition: the LSO moves past it.
    assert end_offset("read_committed") == end_offset("read_uncommitted") == 2
    read = java.call("read", bootstrap=broker.bootstrap, topic=topic, isolation="read_committed")
    assert read["records"]["0"] == []


@pytest.mark.spec("JAVA-24")
def test_kafka_log_dirs_describes_the_replicas_and_their_sizes(java, broker):
    topic = topic_name("tool-logdirs")
    create_topic(java, broker, topic, 2)
    java.call("produce", bootstrap=broker.bootstrap, topic=topic, count=200)
    done = ok(
        run_tool(
            "kafka-log-dirs",
            "--bootstrap-server",
            broker.bootstrap,
            "--describe",
            "--topic-list",
            topic,
        )
    )
    lines = done.strip().splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 0",
    ]
    described = json.loads(lines[2])
    ((log_dir,),) = [b["logDirs"] for b in described["brokers"]]
    assert log_dir["error"] is None and log_dir["logDir"] == broker.data_dir
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    for p in (0, 1):
        directory = os.path.join(broker.data_dir, f"{topic}-{p}")
        on_disk = sum(
            os.path.getsize(os.path.join(directory, n))
            for n in os.listdir(directory)
            if n.endswith(".log")
        )
        assert sizes[f"{topic}-{p}"] == on_disk > 0


@pytest.mark.spec("JAVA-25")
def test_the_perf_tests_write_and_read_every_record(java, broker):
    topic, records = topic_name("perf"), 20_000
    create_topic(java, broker, topic, 2)
    produced = subprocess.run(
        tool_command(
            "kafka-producer-perf-test",
            "--bootstrap-server",
            broker.bootstrap,
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--command-property",
            "acks=all",
            "--transactional-id",
            f"perf-{topic}",
            "--transaction-duration-ms",
            "500",
            jvm_opts=PERF_JVM_OPTS,
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    summary = ok(produced).strip().splitlines()[-1]
    assert summary.startswith(f"{records} records sent, ")
    read = java.call("read", bootstrap=broker.bootstrap, topic=topic, isolation="read_committed")
    assert sum(len(r) for r in read["records"].values()) == records

    consumed = subprocess.run(
        tool_command(
            "kafka-consumer-perf-test",
            "--bootstrap-server",
            broker.bootstrap,
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--timeout",
            "60000",
            jvm_opts=PERF_JVM_OPTS,
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    header, row = ok(consumed).strip().splitlines()[-2:]
    columns = dict(zip(header.split(", "), row.split(", "), strict=True))
    assert int(columns["data.consumed.in.nMsg"]) == records
    assert float(columns["data.consumed.in.MB"]) == pytest.approx(records * 100 / 2**20, rel=1e-3)


@pytest.mark.spec("JAVA-26")
def test_kafka_dump_log_reads_kafka_refs_segments_indexes_and_internal_topics(java, broker):
    topic, group = topic_name("dump"), f"dump-{uuid.uuid4().hex[:6]}"
    txn_id = f"dump-tx-{uuid.uuid4().hex[:6]}"
    create_topic(java, broker, topic, 2)
    java.call("produce", bootstrap=broker.bootstrap, topic=topic, count=2000, keys=2)
    java.call(
        "transactions",
        bootstrap=broker.bootstrap,
        topic=topic,
        group=group,
        transactional_id=txn_id,
        records=10,
    )
    directory = os.path.join(broker.data_dir, f"{topic}-0")
    segment = os.path.join(directory, "00000000000000000000")
    files = ",".join(segment + suffix for suffix in (".log", ".index", ".timeindex", ".txnindex"))
    dumped = ok(run_tool("kafka-dump-log", "--files", files)).splitlines()

    batches = [
        dict(re.findall(r"(\w+): (\S+)", line)) for line in dumped if line.startswith("baseOffset:")
    ]
    assert all(b["isvalid"] == "true" and b["magic"] == "2" for b in batches)
    read = java.call("read", bootstrap=broker.bootstrap, topic=topic)["records"]["0"]
    data = [b for b in batches if b["isControl"] == "false"]
    assert sum(int(b["count"]) for b in data) == len(read)  # every record, aborted ones too
    assert sum(b["isControl"] == "true" for b in batches) == 4  # c1, a (abort), c2, c3
    positions = {b["position"] for b in batches}
    index = [
        dict(re.findall(r"(\w+): (\S+)", line)) for line in dumped if line.startswith("offset:")
    ]
    assert index and all(entry["position"] in positions for entry in index)
    assert not [line for line in dumped if "mismatch" in line.lower()]
    (aborted,) = [line for line in dumped if line.startswith("version: 0 producerId:")]
    first_aborted = next(o for o, _, value, _ in read if value.startswith("a-"))
    assert f"firstOffset: {first_aborted} " in aborted

    # The transaction coordinator's records in __transaction_state, as Kafka decodes them.
    state_logs = [
        os.path.join(broker.data_dir, name, "00000000000000000000.log")
        for name in os.listdir(broker.data_dir)
        if name.startswith("__transaction_state-")
    ]
    decoded = ok(
        run_tool(
            "kafka-dump-log",
            "--transaction-log-decoder",
            "--files",
            ",".join(p for p in state_logs if os.path.getsize(p)),
        )
    )
    mine = [line for line in decoded.splitlines() if f'"transactionalId":"{txn_id}"' in line]
    states = [re.search(r'"transactionStatus":"(\w+)"', line).group(1) for line in mine]
    assert states[-1] == "CompleteCommit" and "PrepareAbort" in states and "Ongoing" in states
