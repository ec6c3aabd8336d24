"""ACLs in ZooKeeper mode (SEC-19): Kafka's znodes and JSON, and a change made through one
broker applies on another, which learns it from the `/kafka-acl-changes` notification."""

from __future__ import annotations

import json

import pytest

from kafka_ref.client.admin import NewTopic
from kafka_ref.conformance.cluster import wait_for
from kafka_ref.errors import ErrorCode
from kafka_ref.security.acls import AclBindingFilter, AclOperation, PatternType, ResourceType
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.unit.security.authz_fixtures import acl, acl_broker_props, admin_of, user_wire

CHROOT = "/kafka-ref-acls-test"


@pytest.mark.spec("SEC-19")
def test_an_acl_created_on_one_broker_applies_on_another(cluster, tmp_path):
    def start(broker_id: int) -> BrokerThread:
        props = acl_broker_props(
            tmp_path / f"data-{broker_id}",
            **{
                "zookeeper.connect": cluster.zookeeper.connect + CHROOT,
                "broker.id": broker_id,
                "zookeeper.session.timeout.ms": 3000,
            },
        )
        return BrokerThread(KafkaConfig.from_props(props))  # started by `with`

    with start(11) as one, start(12) as two:
        with admin_of(one) as admin:
            admin.create_topics([NewTopic("shared", 1, 1)])
            alice = user_wire(two)
            refused = alice.metadata(["shared"]).topics[0].error_code
            assert refused == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            admin.create_acls(
                [
                    acl(ResourceType.TOPIC, "shared", AclOperation.READ),
                    acl(
                        ResourceType.TOPIC, "sha", AclOperation.WRITE, pattern=PatternType.PREFIXED
                    ),
                ]
            )
        wait_for(
            lambda: alice.metadata(["shared"]).topics[0].error_code == 0,
            what="the ACL on the other broker",
        )
        alice.close()
        zk = cluster.zk.zk
        literal = json.loads(zk.get(f"{CHROOT}/kafka-acl/Topic/shared")[0])
        assert literal == {
            "version": 1,
            "acls": [
                {
                    "principal": "User:alice",
                    "permissionType": "Allow",
                    "operation": "Read",
                    "host": "*",
                }
            ],
        }
        assert zk.exists(f"{CHROOT}/kafka-acl-extended/prefixed/Topic/sha")
        assert zk.get_children(f"{CHROOT}/kafka-acl-changes")
        wait_for(
            lambda: two.call(lambda: len(two.broker.apis.authorizer.bindings()) == 2),
            what="both ACLs on the other broker",
        )
        with admin_of(two) as admin:  # deleted through the other broker: gone on both
            assert len(admin.delete_acls([AclBindingFilter()])) == 2
        wait_for(
            lambda: one.call(lambda: not one.broker.apis.authorizer.table),
            what="the deletion on the first broker",
        )
        assert not zk.exists(f"{CHROOT}/kafka-acl/Topic/shared")
