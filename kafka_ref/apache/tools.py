"""Apache Kafka's own command-line tools, unmodified, against any broker: kafka-ref or Kafka.

Each script in Kafka's `bin/` is one line: `exec kafka-run-class.sh MAIN_CLASS "$@"`, and
kafka-run-class.sh starts the JVM on the jars of `libs/` with the tools' logging
(`config/tools-log4j2.yaml`: warnings on standard error). kafka-ref has no `libs/`: the jars
are the pinned Kafka's, resolved by Maven (classpath.py). `tool_command(name, *args)` is the
script: the same main class, the same arguments, the same logging. Kafka 4.0 moved most tools
from the Scala `kafka.admin`/`kafka.tools` packages to `org.apache.kafka.tools`; TOOLS names
each script's class as Kafka 4.4's scripts do.

    kafka-ref reference-kafka --tool kafka-topics -- --bootstrap-server 127.0.0.1:9092 --list

A tool is a short-lived JVM, so it starts the way a quick start wants: the client compiler
only (`-XX:TieredStopAtLevel=1`), the serial collector and the JDK's shared class archive
(`-Xshare:auto`). On two busy cores that halves the start-up (about 1 s instead of 2 s);
throughput tools such as kafka-producer-perf-test get `jvm_opts=PERF_JVM_OPTS`.
"""

from __future__ import annotations

from kafka_ref.apache.classpath import jvm_command

TOOLS = {
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
}

# kafka-run-class.sh gives the tools a 256 MB heap (KAFKA_HEAP_OPTS); the rest is for a
# quick start, not for throughput.
TOOL_JVM_OPTS = [
    "-Xmx256m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
]
# The perf tests measure throughput: the optimizing compiler back (a slower start).
PERF_JVM_OPTS = ["-Xmx512m", "-XX:+UseSerialGC", "-Xshare:auto", "-Djava.awt.headless=true"]


def tool_command(name: str, *args: str, jvm_opts: list[str] | None = None) -> list[str]:
    """The command line of Kafka's `bin/NAME.sh ARGS` (NAME with or without `.sh`)."""
    name = name.removesuffix(".sh")
    if name not in TOOLS:
        raise KeyError(f"no Kafka tool {name!r}; known: {', '.join(sorted(TOOLS))}")
    return jvm_command(TOOLS[name], *args, jvm_opts=jvm_opts or TOOL_JVM_OPTS)
