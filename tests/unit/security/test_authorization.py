"""Authorization over the wire: each API refuses with Kafka's error code where no ACL
allows, and works where one does; ACL management; ACLs surviving a restart."""

from __future__ import annotations

import pytest

from kafka_ref.cli import main as cli
from kafka_ref.client.admin import NewTopic
from kafka_ref.conformance.wire import batch
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import (
    AddPartitionsToTxnRequest,
    ApiKey,
    CreateAclsRequest,
    DeleteGroupsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from kafka_ref.security.acls import AclBindingFilter, AclOperation, PatternType, ResourceType
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.unit.security.authz_fixtures import acl, admin_of, start_acl_broker, user_wire

Op, Res = AclOperation, ResourceType
TOPICS = ["w-yes", "w-no", "r-yes", "r-no", "m-seen", "m-hidden", "c-topic"]


def commit_body(group: str) -> OffsetCommitRequest:
    """OffsetCommit v2 of offset 0 of c-topic's partition 0."""
    partition = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0)
    topic = OffsetCommitRequest.OffsetCommitRequestTopic(name="c-topic", partitions=[partition])
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        retention_time_ms=-1,
        topics=[topic],
    )


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = start_acl_broker(tmp_path_factory.mktemp("acl") / "data")
    with admin_of(broker) as admin:
        admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS])
    yield broker
    broker.stop()


@pytest.fixture
def admin(broker):
    with admin_of(broker) as admin:
        yield admin
        admin.delete_acls([AclBindingFilter()])


@pytest.fixture
def alice(broker):
    wire = user_wire(broker)
    yield wire
    wire.close()


@pytest.mark.spec("SEC-17", "TXN-88")
def test_produce_needs_write_on_the_topic_and_the_transactional_id(admin, alice):
    admin.create_acls([acl(Res.TOPIC, "w-yes", Op.WRITE)])
    assert alice.produce("w-yes", 0, batch([b"v"])).error_code == 0
    assert (
        alice.produce("w-no", 0, batch([b"v"])).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    )
    transactional = batch(
        [b"t"], producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    refused = alice.produce("w-yes", 0, transactional, transactional_id="tx-a")
    assert refused.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # The id is looked at only for transactional batches, as Kafka does (TXN-88).
    assert alice.produce("w-yes", 0, batch([b"v"]), transactional_id="tx-a").error_code == 0


@pytest.mark.spec("SEC-17")
def test_fetch_needs_read_and_list_offsets_describe(admin, alice):
    admin.create_acls(
        [
            acl(Res.TOPIC, "r-", Op.READ, pattern=PatternType.PREFIXED),
            acl(Res.TOPIC, "r-no", Op.READ, deny=True),
        ]
    )
    answer = alice.fetch_many([("r-yes", 0, 0), ("r-no", 0, 0)])
    codes = {t.topic: t.partitions[0].error_code for t in answer.responses}
    assert codes == {"r-yes": 0, "r-no": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert alice.list_offset("r-yes", 0, -1).error_code == 0  # READ implies DESCRIBE
    assert alice.list_offset("m-seen", 0, -1).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.spec("SEC-17")
def test_metadata_hides_undescribable_topics_and_refuses_auto_creation(admin, alice):
    admin.create_acls(
        [
            acl(Res.TOPIC, "m-seen", Op.DESCRIBE),
            acl(Res.TOPIC, "m-new", Op.DESCRIBE, pattern=PatternType.PREFIXED),
        ]
    )
    assert [t.name for t in alice.metadata(None).topics] == ["m-seen"]
    named = alice.metadata(["m-hidden"]).topics[0]
    assert named.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and not named.partitions
    auto = alice.metadata(["m-new-1"], auto=True).topics[0]
    assert auto.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # no CREATE: not created
    assert "m-new-1" not in admin.list_topics()
    admin.create_acls([acl(Res.CLUSTER, "kafka-cluster", Op.CREATE)])
    # created now, not yet there (BROKER-11), or already described
    assert alice.metadata(["m-new-1"], auto=True).topics[0].error_code in (0, 3)
    assert "m-new-1" in admin.list_topics()


@pytest.mark.spec("SEC-17")
def test_group_apis_need_the_group_and_its_topics(admin, alice):
    find = FindCoordinatorRequest(key="g-a", key_type=0)
    refused = alice.request(ApiKey.FIND_COORDINATOR, 1, find).error_code
    assert refused == ErrorCode.GROUP_AUTHORIZATION_FAILED
    admin.create_acls([acl(Res.GROUP, "g-a", Op.DESCRIBE)])
    assert alice.request(ApiKey.FIND_COORDINATOR, 1, find).error_code == 0
    beat = HeartbeatRequest(group_id="g-a", generation_id=1, member_id="m")
    assert (
        alice.request(ApiKey.HEARTBEAT, 1, beat).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    )
    admin.create_acls([acl(Res.GROUP, "g-a", Op.READ)])
    commit = commit_body("g-a")
    code = alice.request(ApiKey.OFFSET_COMMIT, 2, commit).topics[0].partitions[0].error_code
    assert code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    admin.create_acls([acl(Res.TOPIC, "c-topic", Op.READ)])
    assert alice.request(ApiKey.OFFSET_COMMIT, 2, commit).topics[0].partitions[0].error_code == 0


@pytest.mark.spec("SEC-17")
def test_producer_ids_need_the_transactional_id_or_idempotent_write(admin, alice):
    def init(transactional_id):
        body = InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=60000
        )
        return alice.request(ApiKey.INIT_PRODUCER_ID, 1, body).error_code

    assert init("tx-b") == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert init(None) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    admin.create_acls([acl(Res.TOPIC, "w-", Op.WRITE, pattern=PatternType.PREFIXED)])
    assert init(None) == 0  # WRITE on some topic is enough (KIP-679)


@pytest.mark.spec("SEC-17")
def test_transaction_apis_check_the_id_then_each_topic(admin, alice):
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    add = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx-c",
        v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[
            topic(name="w-yes", partitions=[0]),
            topic(name="w-no", partitions=[0]),
        ],
    )

    def codes():
        answer = alice.request(ApiKey.ADD_PARTITIONS_TO_TXN, 2, add).results_by_topic_v3_and_below
        return {t.name: t.results_by_partition[0].partition_error_code for t in answer}

    refused = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert codes() == {"w-yes": refused, "w-no": refused}
    admin.create_acls(
        [acl(Res.TRANSACTIONAL_ID, "tx-c", Op.WRITE), acl(Res.TOPIC, "w-yes", Op.WRITE)]
    )
    assert codes() == {
        "w-yes": ErrorCode.OPERATION_NOT_ATTEMPTED,
        "w-no": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }
    marker = WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=1,
        producer_epoch=0,
        transaction_result=True,
        coordinator_epoch=0,
        topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="w-yes", partition_indexes=[0])],
    )
    answer = alice.request(ApiKey.WRITE_TXN_MARKERS, 1, WriteTxnMarkersRequest(markers=[marker]))
    code = answer.markers[0].topics[0].partitions[0].error_code
    assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED  # brokers only


@pytest.mark.spec("SEC-17")
def test_group_administration_sees_only_permitted_groups(admin, alice, broker):
    with admin_of(broker) as super_user:  # two groups with committed offsets
        for group in ("seen-group", "unseen-group"):
            commit = commit_body(group)
            super_user.client.send_and_wait(None, ApiKey.OFFSET_COMMIT, commit, 10000)
    admin.create_acls([acl(Res.GROUP, "seen-", Op.DESCRIBE, pattern=PatternType.PREFIXED)])
    listed = alice.request(ApiKey.LIST_GROUPS, 1, ListGroupsRequest()).groups
    assert [g.group_id for g in listed] == ["seen-group"]
    described = alice.request(
        ApiKey.DESCRIBE_GROUPS, 1, DescribeGroupsRequest(groups=["seen-group", "unseen-group"])
    ).groups
    assert [g.error_code for g in described] == [0, ErrorCode.GROUP_AUTHORIZATION_FAILED]
    delete = DeleteGroupsRequest(groups_names=["seen-group"])
    answer = alice.request(ApiKey.DELETE_GROUPS, 1, delete).results[0]
    assert answer.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED  # DESCRIBE, not DELETE


@pytest.mark.spec("SEC-17", "BROKER-52")
def test_admin_apis_and_follower_fetch(admin, alice):
    assert alice.create_topic("new-topic") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    resource = DescribeConfigsRequest.DescribeConfigsResource
    body = DescribeConfigsRequest(resources=[resource(resource_type=4, resource_name="1")])
    answer = alice.request(ApiKey.DESCRIBE_CONFIGS, 1, body).results[0]
    assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    dirs = alice.request(ApiKey.DESCRIBE_LOG_DIRS, 4, DescribeLogDirsRequest(topics=None))
    assert (dirs.error_code, dirs.results) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    fetch = FetchRequest.FetchTopic(
        topic="r-yes",
        partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)
        ],
    )
    follower = FetchRequest(replica_id=1, max_wait_ms=0, min_bytes=1, topics=[fetch])
    admin.create_acls([acl(Res.TOPIC, "r-yes", Op.READ)])  # a consumer's right is not enough
    code = alice.request(ApiKey.FETCH, 10, follower).responses[0].partitions[0].error_code
    assert code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.spec("SEC-18")
def test_acl_management_needs_alter_on_the_cluster(admin, alice):
    creation = CreateAclsRequest.AclCreation(
        resource_type=2,
        resource_name="t",
        resource_pattern_type=3,
        principal="User:alice",
        host="*",
        operation=3,
        permission_type=3,
    )
    body = CreateAclsRequest(creations=[creation])
    code = alice.request(ApiKey.CREATE_ACLS, 1, body).results[0].error_code
    assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(KafkaError, match="pattern type"):
        admin.create_acls([acl(Res.TOPIC, "t", Op.READ, pattern=PatternType.MATCH)])
    admin.create_acls([acl(Res.CLUSTER, "kafka-cluster", Op.ALTER)])
    assert alice.request(ApiKey.CREATE_ACLS, 1, body).results[0].error_code == 0
    assert len(admin.describe_acls(AclBindingFilter(name="t", pattern_type=PatternType.MATCH))) == 1
    assert len(admin.delete_acls([AclBindingFilter(resource_type=Res.TOPIC)])) == 1


@pytest.mark.spec("SEC-18")
def test_kafka_ref_acls_adds_lists_and_removes(admin, broker, capsys):
    server = f"127.0.0.1:{broker.broker.socket_server.ports['PLAINTEXT']}"
    assert (
        cli(
            [
                "acls",
                "--bootstrap-server",
                server,
                "--add",
                "--allow-principal",
                "User:bob",
                "--operation",
                "Read",
                "--operation",
                "Describe",
                "--topic",
                "logs",
                "--resource-pattern-type",
                "prefixed",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert cli(["acls", "--bootstrap-server", server, "--list"]) == 0
    out = capsys.readouterr().out
    assert "resourceType=TOPIC, name=logs, patternType=PREFIXED" in out
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in out
    assert (
        cli(
            [
                "acls",
                "--bootstrap-server",
                server,
                "--remove",
                "--topic",
                "logs",
                "--resource-pattern-type",
                "prefixed",
            ]
        )
        == 0
    )
    assert admin.describe_acls(AclBindingFilter()) == []
    assert cli(["acls", "--bootstrap-server", server, "--add", "--topic", "x"]) == 2


@pytest.mark.spec("SEC-19")
def test_acls_survive_a_restart(tmp_path):
    broker = start_acl_broker(tmp_path / "data")
    try:
        with admin_of(broker) as admin:
            admin.create_acls([acl(Res.GROUP, "billing", Op.READ, pattern=PatternType.PREFIXED)])
    finally:
        broker.stop()
    broker = start_acl_broker(tmp_path / "data")
    try:
        with admin_of(broker) as admin:
            (kept,) = admin.describe_acls(AclBindingFilter())
        assert kept == acl(Res.GROUP, "billing", Op.READ, pattern=PatternType.PREFIXED)
        wire = user_wire(broker)
        find = FindCoordinatorRequest(key="billing-eu", key_type=0)
        assert wire.request(ApiKey.FIND_COORDINATOR, 1, find).error_code == 0
    finally:
        broker.stop()


@pytest.mark.spec("SEC-16")
def test_without_an_authorizer_acl_apis_are_security_disabled(tmp_path):
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}
    broker = BrokerThread(KafkaConfig.from_props(props)).start()
    try:
        with admin_of(broker) as admin, pytest.raises(KafkaError) as refused:
            admin.describe_acls(AclBindingFilter())
        assert refused.value.code == ErrorCode.SECURITY_DISABLED
    finally:
        broker.stop()
