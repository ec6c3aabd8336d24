"""The broker's configuration keys: one table of every key it knows.

Kafka describes each config key once, as a definition: its name, its type, its default,
its valid range and one line of documentation (Kafka's `ConfigDef`, filled in by
`KafkaConfig` and the `*Configs` classes beside it). Everything else reads the table:
parsing a properties file checks each key against it (kafka_config.py), DescribeConfigs
lists it with the defaults, IncrementalAlterConfigs validates a new value by it. A key
that is not in the table does not exist.

The table holds, by Kafka's names and with Kafka's defaults:

* broker keys (`broker.id` / `node.id`, `listeners`, `advertised.listeners`, `log.dirs` /
  `log.dir`, `num.partitions`, `default.replication.factor`, `auto.create.topics.enable`,
  `delete.topic.enable`, `socket.request.max.bytes`, `num.io.threads`, ...);
* every topic config's broker default (`log.segment.bytes`, `log.retention.ms`,
  `message.max.bytes`, ...: `config.broker_name`), plus Kafka's coarser time aliases
  `log.retention.hours|minutes` and `log.roll.hours` (the finer unit wins, as in Kafka);
* the group coordinator's keys (`group.min.session.timeout.ms`, `group.max.session.timeout.ms`,
  `group.initial.rebalance.delay.ms`, `group.max.size`, `offsets.topic.num.partitions`,
  `offsets.topic.replication.factor` (capped at the live brokers when the topic is created),
  `offsets.topic.segment.bytes`, `offsets.commit.timeout.ms`, `offsets.retention.minutes`,
  `offsets.retention.check.interval.ms`, `offset.metadata.max.bytes`), with Kafka's defaults;
* the transaction coordinator's keys (`transaction.state.log.num.partitions`,
  `transaction.state.log.replication.factor` and `transaction.state.log.min.isr`, both
  capped when the topic is created, `transaction.max.timeout.ms`,
  `transaction.partition.verification.enable` for KIP-890's check, and kafka-ref's own
  `transaction.version`, the feature's finalized level outside KRaft, ...);
* the share coordinator's keys (`share.coordinator.state.topic.num.partitions`,
  `...replication.factor` and `...min.isr`, both capped when the topic is created,
  `...segment.bytes`, `share.coordinator.snapshot.update.records.per.snapshot`,
  `share.coordinator.write.timeout.ms`), with Kafka's defaults (KIP-932);
* the bounds of the group configs (`group.consumer.min.session.timeout.ms`,
  `group.share.max.record.lock.duration.ms`, ...: group/group_configs.py), with Kafka's
  defaults;
* ZooKeeper mode (cluster/zk_metadata.py): `zookeeper.connect` (`host:port[/chroot]`; empty,
  the default, means the single-broker embedded mode), `zookeeper.session.timeout.ms`
  (how long a dead broker stays registered), `broker.rack` (for rack-aware placement, and
  for consumers' reads from a follower in their rack: `replica.selector.class`, KIP-392);
* listeners and security (security/): `listeners`, `advertised.listeners`,
  `listener.security.protocol.map`, `inter.broker.listener.name`, the `ssl.*` keys (PEM
  keystores), `sasl.enabled.mechanisms`, `sasl.jaas.config`, `connections.max.reauth.ms`,
  each also per listener as `listener.name.<listener>.<key>` (SEC-1), how brokers log in
  to each other (`sasl.mechanism.inter.broker.protocol`,
  `ssl.endpoint.identification.algorithm`, SEC-21), and authorization's
  `authorizer.class.name`, `super.users`, `allow.everyone.if.no.acl.found` (SEC-16). Password keys
  (`ssl.key.password`, `sasl.jaas.config`, ...) are never shown: DescribeConfigs answers
  them as sensitive, with no value;
* the socket server's bounds (server/socket_server_configs.py): `queued.max.request.bytes`,
  `sasl.server.max.receive.size`, `max.connections` and `max.connection.creation.rate` (also
  per listener), `max.connections.per.ip` and its overrides, `connections.max.idle.ms`;
* `metrics.listener` (kafka-ref's own): `http://HOST:PORT` where the broker serves its
  metrics for Prometheus, under the names the JMX exporter gives Kafka's MBeans
  (kafka_ref/metrics/); empty, the default, serves none;
* KRaft's keys (`process.roles`, `controller.quorum.voters`, `controller.listener.names`,
  `metadata.log.dir`, `controller.quorum.*.ms`) are read by a KRaft node
  (server/controller_node.py); a broker with embedded metadata or on ZooKeeper accepts them
  and reports them unused, and skips the `CONTROLLER` listener. A KRaft broker
  (server/kraft_mode.py) heartbeats every `broker.heartbeat.interval.ms`, waits
  `initial.broker.registration.timeout.ms` to be registered and unfenced, and twice
  `broker.session.timeout.ms` for its controlled shutdown.

A topic config's broker default is the topic's own definition under the broker's name
(`LOG_DEFAULTS`), so a range checked for a topic is checked for its default too.

Rules: BROKER-40, BROKER-41, SEC-1.
"""

from __future__ import annotations

import dataclasses

from kafka_ref.config import TOPIC_CONFIGS, ConfigDef, broker_name
from kafka_ref.group.group_configs import GROUP_BOUND_DEFS
from kafka_ref.group.rebalance import GroupConfig
from kafka_ref.replication.replica_selector import REPLICA_SELECTOR_CLASSES
from kafka_ref.security.authorizer import AUTHORIZER_NAMES
from kafka_ref.server.socket_server_configs import SOCKET_SERVER_DEFS
from kafka_ref.share.share_partition_configs import SHARE_PARTITION_DEFS
from kafka_ref.txn import transaction_version

GROUP = GroupConfig()  # the group coordinator's defaults, declared with it

# Broker-level keys (Kafka: KafkaConfig / ServerConfigs / SocketServerConfigs ...).
_BROKER_DEFS = [
    ConfigDef("broker.id", "int", 0, "This broker's id (node.id in KRaft).", 0),
    ConfigDef("node.id", "int", -1, "KRaft name of broker.id; wins when set.", -1),
    ConfigDef("broker.rack", "string", None, "This broker's rack (rack-aware placement)."),
    ConfigDef("zookeeper.connect", "string", "", "host:port[/chroot]; empty: embedded mode."),
    ConfigDef("zookeeper.session.timeout.ms", "int", 18000, "ZooKeeper session timeout.", 1000),
    ConfigDef(
        "initial.broker.registration.timeout.ms",
        "int",
        60000,
        "KRaft: how long a starting broker waits to be registered and unfenced.",
        1,
    ),
    ConfigDef("listeners", "list", ("PLAINTEXT://127.0.0.1:9092",), "Where to listen."),
    ConfigDef("advertised.listeners", "list", (), "Where clients reach us (default listeners)."),
    ConfigDef(
        "listener.security.protocol.map",
        "list",
        ("PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"),
        "Listener name -> security protocol.",
    ),
    ConfigDef("inter.broker.listener.name", "string", None, "The brokers' own listener."),
    ConfigDef("security.inter.broker.protocol", "string", "PLAINTEXT", "Its default, by protocol."),
    ConfigDef("log.dirs", "list", (), "The data directories (overrides log.dir)."),
    ConfigDef("log.dir", "string", "/tmp/kafka-logs", "The data directory if log.dirs is unset."),
    ConfigDef("cordoned.log.dirs", "list", (), "Log dirs that take no new partition, or *."),
    ConfigDef("num.partitions", "int", 1, "Partitions of an auto-created topic.", 1),
    ConfigDef(
        "broker.session.timeout.ms",
        "int",
        9000,
        "KRaft: a broker whose heartbeats stop this long is fenced.",
        1,
    ),
    ConfigDef(
        "broker.heartbeat.interval.ms",
        "int",
        2000,
        "KRaft: how often a broker heartbeats to the active controller.",
        1,
    ),
    ConfigDef("default.replication.factor", "int", 1, "Replicas of an auto-created topic.", 1),
    ConfigDef("auto.create.topics.enable", "boolean", True, "Create topics on Metadata."),
    ConfigDef("delete.topic.enable", "boolean", True, "Allow DeleteTopics."),
    ConfigDef(
        "max.request.partition.size.limit",
        "int",
        2000,
        "Most partitions one DescribeTopicPartitions answer describes.",
        1,
    ),
    ConfigDef("socket.request.max.bytes", "int", 104857600, "Largest request frame.", 1),
    ConfigDef("num.io.threads", "int", 8, "Request handler workers.", 1),
    ConfigDef("queued.max.requests", "int", 500, "Requests queued for the handlers.", 1),
    ConfigDef("metrics.listener", "string", "", "http://HOST:PORT serving Prometheus metrics."),
    # Client quotas (Kafka's QuotaConfigs, KIP-13): the windows a client's rate is measured over.
    ConfigDef("quota.window.num", "int", 11, "Samples a quota's rate keeps.", 2),
    ConfigDef("quota.window.size.seconds", "int", 1, "Length of one quota sample.", 1),
    ConfigDef("log.retention.check.interval.ms", "long", 300000, "Retention check period.", 1),
    ConfigDef("log.cleaner.enable", "boolean", True, "Run the log cleaner (compaction)."),
    ConfigDef("log.cleaner.backoff.ms", "long", 15000, "Cleaner check period.", 0),
    ConfigDef("log.flush.scheduler.interval.ms", "long", 1000, "Flush check period.", 1),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", "int", 60000, "Checkpoint period.", 0),
    ConfigDef("log.retention.hours", "int", 168, "retention.ms in hours (ms wins).", -1),
    ConfigDef("log.retention.minutes", "int", None, "retention.ms in minutes (ms wins)."),
    ConfigDef("log.roll.hours", "int", 168, "segment.ms in hours (ms wins).", 1),
    ConfigDef("log.roll.jitter.hours", "int", 0, "segment.jitter.ms in hours.", 0),
    ConfigDef(
        "producer.id.expiration.ms", "int", 86400000, "Idle time before a PID is forgotten.", 1
    ),
    ConfigDef(
        "producer.id.expiration.check.interval.ms", "int", 600000, "PID expiration period.", 1
    ),
    # Replication (ZooKeeper mode; Kafka's ReplicationConfigs). replica.truncation is
    # kafka-ref's own: the pre-0.11 high-watermark rule is kept to show what it loses.
    ConfigDef("replica.lag.time.max.ms", "long", 30000, "Lag before leaving the ISR.", 1),
    ConfigDef("replica.fetch.wait.max.ms", "int", 500, "A follower fetch's max wait.", 0),
    ConfigDef("replica.fetch.min.bytes", "int", 1, "A follower fetch's min bytes.", 1),
    ConfigDef("replica.fetch.max.bytes", "int", 1048576, "Follower bytes per partition.", 0),
    ConfigDef("replica.fetch.response.max.bytes", "int", 10485760, "Follower bytes per fetch.", 0),
    ConfigDef("replica.fetch.backoff.ms", "int", 1000, "Follower wait after an error.", 0),
    ConfigDef("replica.socket.timeout.ms", "int", 30000, "Follower request timeout.", 1),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", "long", 5000, "HW checkpoints.", 1),
    ConfigDef("replica.truncation", "string", "leader-epoch", "leader-epoch or high-watermark."),
    # Reads from followers (KIP-392): the leader's choice of a consumer's replica (REPL-14).
    ConfigDef(
        "replica.selector.class",
        "string",
        None,
        "Sends consumers to a replica in their rack; unset: the leader serves them.",
        choices=REPLICA_SELECTOR_CLASSES,
    ),
    # The controller's automatic preferred leader elections (Kafka: ReplicationConfigs).
    ConfigDef("auto.leader.rebalance.enable", "boolean", True, "Rebalance leaders by itself."),
    ConfigDef("leader.imbalance.check.interval.seconds", "long", 300, "Imbalance check period.", 1),
    ConfigDef(
        "leader.imbalance.per.broker.percentage", "int", 10, "Imbalance that triggers it.", 0
    ),
    # The group coordinator (Kafka: GroupCoordinatorConfig) and its __consumer_offsets topic;
    # the coordinator's own config declares the defaults it reads (GROUP).
    ConfigDef(
        "group.min.session.timeout.ms",
        "int",
        GROUP.group_min_session_timeout_ms,
        "Smallest session timeout.",
        0,
    ),
    ConfigDef(
        "group.max.session.timeout.ms",
        "int",
        GROUP.group_max_session_timeout_ms,
        "Largest session timeout.",
        0,
    ),
    ConfigDef(
        "group.initial.rebalance.delay.ms",
        "int",
        GROUP.group_initial_rebalance_delay_ms,
        "Wait for more joins to an empty group.",
        0,
    ),
    ConfigDef("group.max.size", "int", GROUP.group_max_size, "Most members of one group.", 1),
    # the consumer group protocol (KIP-848, kafka_ref/group/consumer_group_coordinator.py)
    ConfigDef(
        "group.consumer.heartbeat.interval.ms",
        "int",
        GROUP.group_consumer_heartbeat_interval_ms,
        "Heartbeat interval of consumer-protocol members.",
        1,
    ),
    ConfigDef(
        "group.consumer.session.timeout.ms",
        "int",
        GROUP.group_consumer_session_timeout_ms,
        "Session timeout of consumer-protocol members.",
        1,
    ),
    ConfigDef(
        "group.consumer.assignors",
        "list",
        GROUP.group_consumer_assignors,
        "Server-side assignors, the first the default (uniform, range).",
    ),
    ConfigDef(
        "group.consumer.max.size",
        "int",
        GROUP.group_consumer_max_size,
        "Most members of one consumer group.",
        1,
    ),
    # share groups (KIP-932, kafka_ref/share/share_group_coordinator.py)
    ConfigDef(
        "group.share.heartbeat.interval.ms",
        "int",
        GROUP.group_share_heartbeat_interval_ms,
        "Heartbeat interval of share group members.",
        1,
    ),
    ConfigDef(
        "group.share.session.timeout.ms",
        "int",
        GROUP.group_share_session_timeout_ms,
        "Session timeout of share group members.",
        1,
    ),
    ConfigDef(
        "group.share.max.size",
        "int",
        GROUP.group_share_max_size,
        "Most members of one share group.",
        1,
    ),
    ConfigDef(
        "offsets.topic.num.partitions",
        "int",
        GROUP.offsets_topic_num_partitions,
        "Partitions of __consumer_offsets.",
        1,
    ),
    ConfigDef("offsets.topic.replication.factor", "int", 3, "Replicas of __consumer_offsets.", 1),
    ConfigDef(
        "offsets.topic.segment.bytes", "int", 104857600, "segment.bytes of __consumer_offsets.", 1
    ),
    ConfigDef("offsets.commit.timeout.ms", "int", 5000, "A coordinator write's ISR wait.", 1),
    ConfigDef(
        "offsets.retention.minutes",
        "int",
        GROUP.offsets_retention_minutes,
        "Keep offsets of empty groups.",
        1,
    ),
    ConfigDef(
        "offsets.retention.check.interval.ms",
        "long",
        GROUP.offsets_retention_check_interval_ms,
        "Offset expiration period.",
        1,
    ),
    ConfigDef(
        "offset.metadata.max.bytes",
        "int",
        GROUP.offset_metadata_max_bytes,
        "Longest commit metadata.",
        0,
    ),
    # The transaction coordinator (Kafka: TransactionLogConfig, TransactionStateManagerConfig).
    ConfigDef(
        "transaction.state.log.num.partitions", "int", 50, "Partitions of __transaction_state.", 1
    ),
    ConfigDef(
        "transaction.state.log.replication.factor", "int", 3, "Replicas of __transaction_state.", 1
    ),
    ConfigDef(
        "transaction.state.log.segment.bytes", "int", 104857600, "__transaction_state segments.", 1
    ),
    ConfigDef(
        "transaction.state.log.min.isr", "int", 2, "min.insync.replicas of __transaction_state.", 1
    ),
    ConfigDef("transaction.max.timeout.ms", "int", 900000, "Longest transaction timeout.", 1),
    ConfigDef(
        "transaction.partition.verification.enable",
        "boolean",
        True,
        "Ask the coordinator before a transaction's first write to a partition (KIP-890).",
    ),
    # kafka-ref's own: the finalized `transaction.version` of a broker without KRaft features
    # (embedded and ZooKeeper modes); a KRaft cluster's comes from its FeatureLevelRecord.
    ConfigDef(
        "transaction.version",
        "int",
        transaction_version.LATEST_PRODUCTION,
        "Finalized transaction.version without KRaft: 2 = transactions v2 (KIP-890).",
        transaction_version.SUPPORTED[0],
        validator=transaction_version.unsupported,
    ),
    ConfigDef(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "int",
        10000,
        "How often timed-out transactions are aborted.",
        1,
    ),
    ConfigDef(
        "transactional.id.expiration.ms",
        "int",
        604800000,
        "Idle time before the coordinator forgets a transactional id.",
        1,
    ),
    ConfigDef(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "int",
        3600000,
        "How often expired transactional ids are removed.",
        1,
    ),
    # The share coordinator (Kafka: ShareCoordinatorConfig) and its __share_group_state topic.
    ConfigDef(
        "share.coordinator.state.topic.num.partitions",
        "int",
        50,
        "Partitions of __share_group_state.",
        1,
    ),
    ConfigDef(
        "share.coordinator.state.topic.replication.factor",
        "int",
        3,
        "Replicas of __share_group_state.",
        1,
    ),
    ConfigDef(
        "share.coordinator.state.topic.min.isr",
        "int",
        2,
        "min.insync.replicas of __share_group_state.",
        1,
    ),
    ConfigDef(
        "share.coordinator.state.topic.segment.bytes",
        "int",
        104857600,
        "segment.bytes of __share_group_state.",
        1,
    ),
    ConfigDef(
        "share.coordinator.snapshot.update.records.per.snapshot",
        "int",
        500,
        "ShareUpdate records of a share-partition between two ShareSnapshots.",
        0,
    ),
    ConfigDef(
        "share.coordinator.write.timeout.ms",
        "int",
        5000,
        "A share coordinator write's ISR wait.",
        1,
    ),
    # Security (Kafka: SslConfigs, SaslConfigs, BrokerSecurityConfigs; security/).
    ConfigDef("ssl.keystore.type", "string", "PEM", "Only PEM (KIP-651).", choices=("PEM",)),
    ConfigDef("ssl.keystore.location", "string", None, "PEM file: private key + chain."),
    ConfigDef("ssl.keystore.key", "string", None, "Inline PEM private key."),
    ConfigDef("ssl.keystore.certificate.chain", "string", None, "Inline PEM certificates."),
    ConfigDef("ssl.keystore.password", "string", None, "Unused with PEM files."),
    ConfigDef("ssl.key.password", "string", None, "Password of an encrypted private key."),
    ConfigDef("ssl.truststore.type", "string", "PEM", "Only PEM (KIP-651).", choices=("PEM",)),
    ConfigDef("ssl.truststore.location", "string", None, "PEM file of CA certificates."),
    ConfigDef("ssl.truststore.certificates", "string", None, "Inline PEM CA certificates."),
    ConfigDef(
        "ssl.client.auth", "string", "none", "mTLS.", choices=("required", "requested", "none")
    ),
    ConfigDef(
        "ssl.endpoint.identification.algorithm",
        "string",
        "https",
        "Check the server's host name (https) or not (empty).",
        choices=("https", ""),
    ),
    ConfigDef("sasl.enabled.mechanisms", "list", ("GSSAPI",), "SASL mechanisms offered."),
    ConfigDef(
        "sasl.mechanism.inter.broker.protocol",
        "string",
        "GSSAPI",
        "Brokers authenticate to each other with it.",
    ),
    ConfigDef("sasl.jaas.config", "string", None, "JAAS login module and options."),
    ConfigDef("connections.max.reauth.ms", "long", 0, "SASL session lifetime (KIP-368).", 0),
    # Authorization (Kafka: AclAuthorizer's keys; security/authorizer.py).
    ConfigDef(
        "authorizer.class.name", "string", "", "ACLs on; empty: off.", choices=AUTHORIZER_NAMES
    ),
    ConfigDef("super.users", "string", "", "Principals allowed everything, ';'-separated."),
    ConfigDef("allow.everyone.if.no.acl.found", "boolean", False, "Resources without ACLs: open."),
    *SOCKET_SERVER_DEFS,
    *SHARE_PARTITION_DEFS,
    *GROUP_BOUND_DEFS,
]
BROKER_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _BROKER_DEFS}
# Never shown (Kafka: type PASSWORD): DescribeConfigs answers them as sensitive, with no value.
PASSWORD_KEYS = frozenset(
    {"ssl.keystore.key", "ssl.keystore.password", "ssl.key.password", "sasl.jaas.config"}
)
# topic config's broker name -> topic config name (log.segment.bytes -> segment.bytes)
LOG_DEFAULTS: dict[str, str] = {
    default: name for name in TOPIC_CONFIGS if (default := broker_name(name)) is not None
}
for _name, _topic in LOG_DEFAULTS.items():
    _d = TOPIC_CONFIGS[_topic]
    BROKER_CONFIGS.setdefault(_name, dataclasses.replace(_d, name=_name))

# Keys of Kafka's stock server.properties that a single embedded broker does not use.
IGNORED_KEYS = frozenset(
    {
        "process.roles",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "controller.listener.names",
        "controller.quorum.election.timeout.ms",
        "controller.quorum.fetch.timeout.ms",
        "controller.quorum.election.backoff.max.ms",
        "controller.quorum.request.timeout.ms",
        # a KRaft node's metadata snapshots and log retention (RAFT-21, RAFT-22)
        "metadata.log.max.record.bytes.between.snapshots",
        "metadata.log.max.snapshot.interval.ms",
        "metadata.max.retention.bytes",
        "metadata.max.retention.ms",
        "num.network.threads",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "num.recovery.threads.per.data.dir",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "zookeeper.connection.timeout.ms",
        "metadata.log.dir",
        "log.cleaner.threads",
        "num.replica.fetchers",
    }
)
