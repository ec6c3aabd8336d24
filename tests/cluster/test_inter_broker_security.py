"""Brokers authenticate to each other (SEC-20, SEC-21): a 3-broker ZooKeeper cluster whose
only listener, the inter-broker one too, is SASL_SSL with SCRAM-SHA-256, ACLs on,
`allow.everyone.if.no.acl.found=false` and `super.users` the brokers' user alone (not
ANONYMOUS). The brokers' SCRAM user is put in ZooKeeper before they start
(`kafka-ref users --zookeeper`, as `kafka-configs.sh --zookeeper`); replication,
acks=all and a leader's crash then work over authenticated connections only, and
confluent-kafka clients are admitted by their own ACLs or refused."""

from __future__ import annotations

import json
import signal

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kafka_ref.cli import main
from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.conformance.cluster import wait_for
from kafka_ref.security.credentials import ZkCredentialStore
from kafka_ref.security.scram import make_credential
from kafka_ref.tools.cluster import BrokerProcess, ZooKeeperServer, zookeeper_installed
from kafka_ref.tools.server_process import free_port
from tests.certs import BROKER_KEY_PASSWORD, make_pki

pytestmark = pytest.mark.timeout(300)
CHROOT = "/kafka-ref-inter-broker-sasl"
PASSWORDS = {"broker": "broker-secret", "writer": "writer-secret", "alice": "alice-secret"}
TOPIC = "replicated"


def broker_configs(pki, listen_port: int) -> dict[str, object]:
    return {
        "listeners": f"SASL_SSL://127.0.0.1:{listen_port}",
        "security.inter.broker.protocol": "SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="broker" password="{PASSWORDS["broker"]}";'
        ),
        "ssl.keystore.location": pki.broker_keystore,
        "ssl.key.password": BROKER_KEY_PASSWORD,
        "ssl.truststore.location": pki.ca,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": "User:broker",
        "zookeeper.session.timeout.ms": 3000,
        "offsets.topic.num.partitions": 3,
        "transaction.state.log.num.partitions": 3,
        "group.initial.rebalance.delay.ms": 0,
    }


class SecureCluster:
    def __init__(self, base, pki) -> None:
        self.pki = pki
        self.zookeeper = ZooKeeperServer(str(base / "zookeeper")).start()
        connect = self.zookeeper.connect + CHROOT
        for user, password in PASSWORDS.items():  # before the brokers: they log in as broker
            add = f"SCRAM-SHA-256=[password={password}]"
            args = ["users", "--zookeeper", connect, "--alter", "--entity-name", user]
            assert main([*args, "--add-config", add]) == 0
        self.brokers = {}
        for i in (1, 2, 3):
            listen = free_port()
            self.brokers[i] = BrokerProcess(
                i,
                str(base / f"broker-{i}"),
                connect,
                port=listen,
                configs=broker_configs(pki, listen),
            )

    def client(self, user: str, password: str | None = None, **more) -> dict:
        alive = ",".join(b.bootstrap for b in self.brokers.values() if b.alive)
        return {
            "bootstrap.servers": more.pop("bootstrap.servers", alive),
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": password or PASSWORDS[user],
            "ssl.ca.location": self.pki.ca,
            **more,
        }

    def close(self) -> None:
        for broker in self.brokers.values():
            broker.stop()
        self.zookeeper.stop()


@pytest.fixture(scope="module")
def secure_cluster(tmp_path_factory):
    if not zookeeper_installed():
        pytest.fail("ZooKeeper is missing: `make test` installs it (apt-get install zookeeper)")
    base = tmp_path_factory.mktemp("secure-cluster")
    cluster = SecureCluster(base, make_pki(str(tmp_path_factory.mktemp("pki"))))
    try:
        for broker in cluster.brokers.values():
            broker.start()
        yield cluster
    finally:
        cluster.close()


def partition_state(admin: AdminClient) -> tuple[int, list[int]]:
    """(leader, ISR) of the topic's one partition, as the brokers answer Metadata; (-1, [])
    while the answering broker does not know the new topic's partitions yet."""
    partition = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.get(0)
    return (-1, []) if partition is None else (partition.leader, sorted(partition.isrs))


@pytest.mark.spec("SEC-21")
def test_replication_runs_over_authenticated_connections_only(secure_cluster):
    admin = AdminClient(secure_cluster.client("broker"))
    created = admin.create_topics(
        [NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})], request_timeout=30
    )
    created[TOPIC].result(60)
    # the followers join the ISR only by fetching: from the leader, over SASL_SSL, as broker
    wait_for(lambda: partition_state(admin)[1] == [1, 2, 3], 60, "a full ISR")
    bindings = [
        AclBinding(
            ResourceType.TOPIC,
            TOPIC,
            ResourcePatternType.LITERAL,
            "User:writer",
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.GROUP,
            "readers",
            ResourcePatternType.LITERAL,
            "User:writer",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
    ]
    for future in admin.create_acls(bindings, request_timeout=30).values():
        future.result(30)
    producer = Producer(secure_cluster.client("writer", acks="all", **{"enable.idempotence": True}))
    failed = []
    for i in range(100):
        producer.produce(
            TOPIC, value=f"m{i}".encode(), on_delivery=lambda e, _m: e and failed.append(e)
        )
    assert producer.flush(60) == 0 and not failed
    leader, _ = partition_state(admin)
    secure_cluster.brokers[leader].stop(signal.SIGKILL)  # a crash: the others take over
    wait_for(lambda: partition_state(admin)[0] not in (leader, -1), 60, "a new leader")
    consumer = Consumer(
        secure_cluster.client("writer", **{"group.id": "readers", "auto.offset.reset": "earliest"})
    )
    consumer.subscribe([TOPIC])
    values: list[bytes] = []
    try:
        wait_for(lambda: _poll_into(consumer, values) >= 100, 90, "every acknowledged record")
    finally:
        consumer.close()
    assert values == [f"m{i}".encode() for i in range(100)]
    secure_cluster.brokers[leader].start()  # back in the ISR through the same login
    wait_for(lambda: partition_state(admin)[1] == [1, 2, 3], 90, "the ISR again")


def _poll_into(consumer: Consumer, values: list[bytes]) -> int:
    message = consumer.poll(1.0)
    if message is not None and message.error() is None:
        values.append(message.value())
    return len(values)


@pytest.mark.spec("SEC-20")
def test_clients_are_admitted_by_their_own_credentials_and_acls(secure_cluster):
    admin = AdminClient(secure_cluster.client("broker"))
    admin.create_topics([NewTopic("guarded", 1, 3)], request_timeout=30)["guarded"].result(60)
    wait_for(lambda: "guarded" in admin.list_topics(timeout=10).topics, 60, "the topic")
    alice = AdminClient(secure_cluster.client("alice"))
    metadata = alice.list_topics(timeout=10)  # authenticated, but no ACL: the topic is hidden
    assert "guarded" not in metadata.topics
    producer = Producer(secure_cluster.client("alice", **{"message.timeout.ms": 10000}))
    errors: list[KafkaError] = []
    producer.produce("guarded", b"x", on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert errors and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    seen: list[KafkaError] = []  # librdkafka reports the refused login through error_cb
    impostor = AdminClient(
        secure_cluster.client("broker", "not-the-password", error_cb=seen.append)
    )
    with pytest.raises(KafkaException):
        impostor.list_topics(timeout=5)

    def refused() -> bool:
        impostor.poll(0.2)  # serves error_cb
        return any(e.code() == KafkaError._AUTHENTICATION for e in seen)

    wait_for(refused, 30, "the refused login")
    assert "invalid credentials" in str(seen)


def logs_in(cluster: SecureCluster, user: str, password: str, broker: BrokerProcess) -> bool:
    """Whether `user` authenticates to this one broker (Metadata needs no ACL to answer)."""
    client = AdminClient(cluster.client(user, password, **{"bootstrap.servers": broker.bootstrap}))
    try:
        client.list_topics(timeout=5)
        return True
    except KafkaException:
        return False


@pytest.mark.spec("SEC-20")
def test_a_credential_altered_through_one_broker_works_on_every_broker(secure_cluster):
    zk = KafkaZkClient(secure_cluster.zookeeper.connect + CHROOT)
    zk.start()
    try:  # a key another feature owns (a client quota) in the user's znode already
        quota = json.dumps({"version": 1, "config": {"producer_byte_rate": "1024"}})
        zk.zk.create("/config/users/nina", quota.encode(), makepath=True)
        one = secure_cluster.brokers[1]
        admin = AdminClient(secure_cluster.client("broker", **{"bootstrap.servers": one.bootstrap}))
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
        upsert = UserScramCredentialUpsertion("nina", info, b"nina-secret")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)
        stored = json.loads(zk.zk.get("/config/users/nina")[0])
        assert stored["version"] == 1 and stored["config"]["producer_byte_rate"] == "1024"
        credential = stored["config"]["SCRAM-SHA-256"]
        assert credential.startswith("salt=") and credential.endswith(",iterations=8192")
        assert "nina-secret" not in json.dumps(stored)
        notices = [
            json.loads(zk.zk.get(f"/config/changes/{child}")[0])
            for child in zk.zk.get_children("/config/changes")
        ]
        assert {"version": 2, "entity_path": "users/nina"} in notices
        for broker in secure_cluster.brokers.values():  # each learns it from the notice
            wait_for(
                lambda b=broker: logs_in(secure_cluster, "nina", "nina-secret", b),
                30,
                f"nina's login on broker {broker.broker_id}",
            )
            assert not logs_in(secure_cluster, "nina", "wrong", broker)
        described = admin.describe_user_scram_credentials(["nina"])["nina"].result(30)
        assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
            (ScramMechanism.SCRAM_SHA_256, 8192)
        ]
    finally:
        zk.close()


@pytest.mark.spec("SEC-20")
def test_a_credential_change_keeps_a_key_written_meanwhile(secure_cluster):
    """Read-modify-write with the version read: a quota written between the read and the
    write (another broker, another tool) makes the change read again; neither is lost."""
    zk = KafkaZkClient(secure_cluster.zookeeper.connect + CHROOT)
    zk.start()
    try:
        store = ZkCredentialStore(zk.zk)
        store.start()
        calls = []

        def change(config: dict[str, str]) -> dict[str, str]:
            if not calls:  # someone else writes between this read and the write
                other = {"version": 1, "config": {**config, "consumer_byte_rate": "2048"}}
                zk.zk.set("/config/users/omar", json.dumps(other).encode())
            calls.append(dict(config))
            return {**config, "SCRAM-SHA-256": make_credential("SCRAM-SHA-256", "x").to_string()}

        zk.zk.create("/config/users/omar", b'{"version":1,"config":{}}', makepath=True)
        store.update_config("omar", change)
        stored = json.loads(zk.zk.get("/config/users/omar")[0])["config"]
        assert stored["consumer_byte_rate"] == "2048" and "SCRAM-SHA-256" in stored
        assert calls == [{}, {"consumer_byte_rate": "2048"}]  # read again after the conflict
    finally:
        zk.close()
