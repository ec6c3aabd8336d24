"""ShareFetch's authorization: READ on the share group, then READ on each topic (KIP-932)."""

from __future__ import annotations

import asyncio

import pytest

from kafka_ref.client.admin import NewTopic
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, ShareFetchRequest
from kafka_ref.security.acls import AclBindingFilter
from kafka_ref.security.acls import AclOperation as Op
from kafka_ref.security.acls import ResourceType as Res
from kafka_ref.share.persister import SharePartitionKey
from tests.unit.security.authz_fixtures import acl, admin_of, ports, start_acl_broker, user_wire

pytestmark = pytest.mark.timeout(60)
GROUP, TOPIC = "sq-group", "sq"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = start_acl_broker(tmp_path_factory.mktemp("acl") / "data")
    with admin_of(broker) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    yield broker
    broker.stop()


def share_fetch(wire, topic_id, epoch: int):
    body = ShareFetchRequest(
        group_id=GROUP,
        member_id="alice-member",
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_records=10,
        batch_size=10,
        topics=[
            ShareFetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[ShareFetchRequest.FetchPartition(partition_index=0)],
            )
        ],
    )
    return wire.request(ApiKey.SHARE_FETCH, 2, body)


@pytest.mark.spec("SHARE-23")
def test_share_fetch_needs_read_on_the_group_then_on_the_topic(broker):
    with Wire("127.0.0.1", ports(broker)["PLAINTEXT"]) as superuser:
        topic_id = superuser.metadata([TOPIC], version=12, auto=False).topics[0].topic_id
    # the share-partition's state starts as the share group coordinator starts it
    key = SharePartitionKey(GROUP, topic_id, 0)
    initialize = broker.broker.share_persister.initialize(key, 0, -1)
    assert asyncio.run_coroutine_threadsafe(initialize, broker.loop).result(30) == 0
    alice = user_wire(broker)
    with admin_of(broker) as admin:
        try:
            assert share_fetch(alice, topic_id, 0).error_code == (
                ErrorCode.GROUP_AUTHORIZATION_FAILED
            )
            admin.create_acls([acl(Res.GROUP, GROUP, Op.READ)])
            answer = share_fetch(alice, topic_id, 0)
            assert answer.error_code == ErrorCode.NO_ERROR
            assert answer.responses[0].partitions[0].error_code == (
                ErrorCode.TOPIC_AUTHORIZATION_FAILED
            )
            admin.create_acls([acl(Res.TOPIC, TOPIC, Op.READ)])
            answer = share_fetch(alice, topic_id, 1)
            assert answer.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR
        finally:
            admin.delete_acls([AclBindingFilter()])
            alice.close()
