"""Apache Kafka's Java admin client sets ACLs and SCRAM users on kafka-ref, and they hold.

The broker has ACLs on and two listeners: PLAINTEXT, where the admin client connects as
`User:ANONYMOUS` (a super user), and SASL_PLAINTEXT with SCRAM-SHA-256, where Java
producers log in as the users the admin client creates. Kafka's own kafka-acls tool runs
against the same broker (test_tools.py has the tools that need no ACLs).
"""

from __future__ import annotations

import sys
import uuid

import pytest

from kafka_ref.tools.server_process import ServerProcess, free_port
from tests.java_clients.conftest import run_tool
from tests.java_clients.harness import JavaError

pytestmark = pytest.mark.timeout(120)

PASSWORD = "alice-secret"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A broker with ACLs on: (process, PLAINTEXT bootstrap, SASL_PLAINTEXT bootstrap)."""
    base = tmp_path_factory.mktemp("java-acls")
    plain, sasl = free_port(), free_port()
    configs = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
        "log.dirs": str(base / "data"),
    }
    cmd = [sys.executable, "-m", "kafka_ref.cli", "broker"]
    for key, value in configs.items():
        cmd += ["--config", f"{key}={value}"]
    broker = ServerProcess("kafka-ref broker", cmd, plain, str(base / "broker.log"))
    broker.start()
    yield broker, f"127.0.0.1:{plain}", f"127.0.0.1:{sasl}"
    broker.stop()


def as_user(user: str, password: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";',
        "max.block.ms": "10000",
        "delivery.timeout.ms": "10000",
        "request.timeout.ms": "5000",
    }


def produce_as(
    java, sasl: str, topic: str, user: str, password: str, idempotent: bool = True
) -> list[str]:
    """The errors of a one-record send as `user` (none: it was acknowledged)."""
    props = {**as_user(user, password), "enable.idempotence": str(idempotent).lower()}
    if not idempotent:
        props["acks"] = "1"
    try:
        sent = java.call("produce", bootstrap=sasl, topic=topic, count=1, props=props)
    except JavaError as error:  # refused before the record could be sent
        return [f"{error.error.rsplit('.', 1)[-1]}: {error.message}"]
    return sent["errors"]


def acl(resource_type: str, name: str, principal: str, operation: str, **more: str) -> dict:
    return {
        "resource_type": resource_type,
        "name": name,
        "principal": principal,
        "operation": operation,
        **more,
    }


@pytest.mark.spec("JAVA-8")
def test_acls_are_created_described_deleted_and_enforced(java, secured):
    _, admin, sasl = secured
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    user = f"u{uuid.uuid4().hex[:6]}"
    assert java.call("create-topics", bootstrap=admin, topics=[{"name": topic}]) == {topic: "ok"}
    upsert = [[user, "SCRAM-SHA-256", 4096, PASSWORD]]
    assert java.call("alter-scram", bootstrap=admin, upserts=upsert) == {user: "ok"}

    principal = f"User:{user}"
    bindings = [
        acl("TOPIC", topic, principal, "DESCRIBE"),
        acl("TOPIC", f"logs-{user}-", "User:bob", "WRITE", pattern="PREFIXED"),
        acl("GROUP", "readers", principal, "READ"),
    ]
    assert java.call("create-acls", bootstrap=admin, bindings=bindings) == 3
    # DESCRIBE only: the write is refused; an idempotent producer is refused its producer
    # id already, for want of WRITE on any topic (KIP-679) or IDEMPOTENT_WRITE.
    plain = produce_as(java, sasl, topic, user, PASSWORD, idempotent=False)
    assert plain[0].startswith("TopicAuthorizationException")
    idempotent = produce_as(java, sasl, topic, user, PASSWORD)
    assert idempotent[0].startswith("ClusterAuthorizationException")

    mine = java.call("describe-acls", bootstrap=admin, filter={"principal": principal})
    assert sorted((b["resource_type"], b["operation"]) for b in mine) == [
        ("GROUP", "READ"),
        ("TOPIC", "DESCRIBE"),
    ]
    matching = java.call(
        "describe-acls",
        bootstrap=admin,
        filter={"resource_type": "TOPIC", "name": f"logs-{user}-app", "pattern": "MATCH"},
    )
    assert [(b["name"], b["pattern"], b["principal"]) for b in matching] == [
        (f"logs-{user}-", "PREFIXED", "User:bob")
    ]

    write = acl("TOPIC", topic, principal, "WRITE")
    assert java.call("create-acls", bootstrap=admin, bindings=[write]) == 1
    assert produce_as(java, sasl, topic, user, PASSWORD) == []  # allowed now

    deleted = java.call("delete-acls", bootstrap=admin, filters=[{"principal": principal}])
    assert len(deleted[0]) == 3
    left = java.call("describe-acls", bootstrap=admin, filter={"name": f"logs-{user}-"})
    assert [b["principal"] for b in left] == ["User:bob"]
    assert java.call("describe-acls", bootstrap=admin, filter={"principal": principal}) == []


@pytest.mark.spec("JAVA-9")
def test_scram_credentials_authenticate_at_once_and_stop_when_deleted(java, secured):
    _, admin, sasl = secured
    topic, user = f"open-{uuid.uuid4().hex[:6]}", f"u{uuid.uuid4().hex[:6]}"
    assert java.call("create-topics", bootstrap=admin, topics=[{"name": topic}]) == {topic: "ok"}
    write = acl("TOPIC", topic, f"User:{user}", "WRITE")
    assert java.call("create-acls", bootstrap=admin, bindings=[write]) == 1

    upsert = [[user, "SCRAM-SHA-256", 8192, PASSWORD]]
    assert java.call("alter-scram", bootstrap=admin, upserts=upsert) == {user: "ok"}
    described = java.call("describe-scram", bootstrap=admin, users=[user])
    assert described == {user: [["SCRAM-SHA-256", 8192]]}
    assert produce_as(java, sasl, topic, user, PASSWORD) == []
    wrong = produce_as(java, sasl, topic, user, "not-it")
    assert wrong and wrong[0].startswith("SaslAuthenticationException")

    deletion = [[user, "SCRAM-SHA-256"]]
    assert java.call("alter-scram", bootstrap=admin, deletions=deletion) == {user: "ok"}
    unknown = java.call("describe-scram", bootstrap=admin, users=[user])[user]
    assert unknown.startswith("ResourceNotFoundException")
    gone = produce_as(java, sasl, topic, user, PASSWORD)
    assert gone and gone[0].startswith("SaslAuthenticationException")


@pytest.mark.spec("JAVA-20")
def test_kafka_acls_adds_lists_and_removes_acls(java, secured):
    _, admin, _ = secured
    user = f"User:tool-{uuid.uuid4().hex[:6]}"
    prefix = f"events-{uuid.uuid4().hex[:6]}-"
    bootstrap = ["--bootstrap-server", admin]
    added = run_tool(
        "kafka-acls",
        *bootstrap,
        "--add",
        "--allow-principal",
        user,
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        prefix,
        "--resource-pattern-type",
        "prefixed",
    )
    assert added.returncode == 0, added.stderr
    assert (
        f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={prefix}, "
        "patternType=PREFIXED)`:" in added.stdout
    )
    bindings = java.call("describe-acls", bootstrap=admin, filter={"principal": user})
    assert sorted((b["name"], b["pattern"], b["operation"]) for b in bindings) == [
        (prefix, "PREFIXED", "DESCRIBE"),
        (prefix, "PREFIXED", "READ"),
    ]

    listed = run_tool("kafka-acls", *bootstrap, "--list", "--principal", user)
    assert listed.returncode == 0, listed.stderr
    assert f"(principal={user}, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout
    assert f"(principal={user}, host=*, operation=DESCRIBE, permissionType=ALLOW)" in listed.stdout

    removed = run_tool(
        "kafka-acls",
        *bootstrap,
        "--remove",
        "--force",
        "--allow-principal",
        user,
        "--operation",
        "Read",
        "--topic",
        prefix,
        "--resource-pattern-type",
        "prefixed",
    )
    assert removed.returncode == 0, removed.stderr
    bindings = java.call("describe-acls", bootstrap=admin, filter={"principal": user})
    assert [b["operation"] for b in bindings] == ["DESCRIBE"]
