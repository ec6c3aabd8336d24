"""A broker with ACLs on, for the authorization tests: a PLAINTEXT listener where the admin
(`User:ANONYMOUS`, a super user as the inter-broker principal must be) sets ACLs and
topics up, and a SASL_PLAINTEXT listener with the PLAIN users alice and bob."""

from __future__ import annotations

from kafka_ref.client.admin import Admin
from kafka_ref.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.unit.security.conftest import SecureWire

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items())
    + ";"
)


def acl_broker_props(data_dir, **more) -> dict[str, str]:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "log.dirs": str(data_dir),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
        "group.initial.rebalance.delay.ms": "0",
        **more,
    }
    return {k: str(v) for k, v in props.items()}


def start_acl_broker(data_dir, **more) -> BrokerThread:
    return BrokerThread(KafkaConfig.from_props(acl_broker_props(data_dir, **more))).start()


def ports(broker: BrokerThread) -> dict[str, int]:
    return broker.broker.socket_server.ports


def admin_of(broker: BrokerThread) -> Admin:
    return Admin(f"127.0.0.1:{ports(broker)['PLAINTEXT']}")


def user_wire(broker: BrokerThread, user: str = "alice") -> SecureWire:
    wire = SecureWire(ports(broker)["SASL_PLAINTEXT"])
    assert wire.plain(user, PASSWORDS[user]).error_code == 0
    return wire


def acl(
    rtype: ResourceType,
    name: str,
    operation: AclOperation,
    *,
    who: str = "User:alice",
    pattern: PatternType = PatternType.LITERAL,
    deny: bool = False,
) -> AclBinding:
    permission = AclPermissionType.DENY if deny else AclPermissionType.ALLOW
    return AclBinding(
        ResourcePattern(rtype, name, pattern), AccessControlEntry(who, "*", operation, permission)
    )
