"""The administration a KRaft broker forwards: what the broker settles itself (config
checks), what the active controller decides and for whom (the Envelope's principal), and
how the broker's ACLs, SCRAM users and quotas follow its published image.

The active controller here is a `QuorumController` that commits at once: the records a
request decides are replayed before its answer, as the quorum does once committed."""

from __future__ import annotations

import asyncio
import os
import types
import uuid

import pytest

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode
from kafka_ref.log.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.quorum_controller import QuorumController
from kafka_ref.metadata.image import EMPTY, load
from kafka_ref.metadata.serde import ApiMessageAndVersion
from kafka_ref.protocol.frames import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kafka_ref.protocol.messages import (
    AlterConfigsRequest,
    ApiKey,
    CreateAclsRequest,
    ElectLeadersRequest,
    EnvelopeRequest,
    EnvelopeResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka_ref.quota.entity import QuotaEntity
from kafka_ref.quota.manager import QuotaManagers
from kafka_ref.security.acls import AclOperation, ResourceType
from kafka_ref.security.authorizer import Authorizer
from kafka_ref.security.principal import serialize_principal
from kafka_ref.security.scram import MECHANISM_TYPES, make_credential
from kafka_ref.server.broker_lifecycle import registration_body
from kafka_ref.server.controller_admin_apis import ControllerAdminApis
from kafka_ref.server.controller_server import ControllerApis
from kafka_ref.server.dynamic_config import DynamicBrokerConfig
from kafka_ref.server.forwarding_manager import ForwardingManager
from kafka_ref.server.handlers import alter_configs
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.kraft_publishers import (
    ImageAclStore,
    ImageCredentialStore,
    ImagePublisher,
)
from kafka_ref.server.node_to_controller import ControllerUnavailableError
from kafka_ref.server.request_channel import Request
from tests.unit.server.test_kraft_requests import Channel, Connection, client_request

TOPIC, BROKER = 2, 4
CLUSTER, ALTER, ALLOW, LITERAL = 4, 7, 3, 3  # CreateAcls' codes


class Active:
    """An ActiveController whose quorum commits what it appends at once."""

    def __init__(self) -> None:
        self.controller = QuorumController("cluster")
        self.is_active = True

    def submit(self, decide) -> asyncio.Future:
        result = decide(self.controller, 0)
        self.controller.replay(result.records)
        answer = asyncio.get_running_loop().create_future()
        answer.set_result(result.response)
        return answer


def answered(handle, request):
    """The answer of a controller handler (a body, or a future of one)."""

    async def run():
        body = handle(request)
        return await body if isinstance(body, asyncio.Future) else body

    return asyncio.run(run())


def acl(principal: str, operation: int = ALTER) -> object:
    return CreateAclsRequest.AclCreation(
        resource_type=CLUSTER,
        resource_name="kafka-cluster",
        resource_pattern_type=LITERAL,
        principal=principal,
        host="*",
        operation=operation,
        permission_type=ALLOW,
    )


def alter_configs_request(resources: list[tuple[int, str, dict[str, str]]]) -> object:
    return AlterConfigsRequest(
        resources=[
            AlterConfigsRequest.AlterConfigsResource(
                resource_type=kind,
                resource_name=name,
                configs=[
                    AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in configs.items()
                ],
            )
            for kind, name, configs in resources
        ],
        validate_only=False,
    )


@pytest.mark.spec("KCTRL-19")
def test_the_controller_answers_each_item_in_order_and_writes_the_records():
    active = Active()
    # the client's principal (User:alice) may do anything
    image = ImageAclStore(lambda: active.controller.image)
    apis = ControllerAdminApis(active, Authorizer(image, super_users="User:alice"))
    creations = [acl("User:a"), acl("User:b", operation=99), acl("User:c")]
    body = CreateAclsRequest(creations=creations)
    answer = answered(apis.create_acls, client_request(ApiKey.CREATE_ACLS, 3, body))
    assert [x.error_code for x in answer.results] == [0, ErrorCode.INVALID_REQUEST, 0]
    assert sorted(a.principal for a in active.controller.image.acls.values()) == [
        "User:a",
        "User:c",
    ]
    # AlterConfigs names the whole set: a key it leaves out is deleted
    first = alter_configs_request([(BROKER, "", {"a.b": "1", "c.d": "2"})])
    answered(apis.alter_configs, client_request(ApiKey.ALTER_CONFIGS, 2, first))
    second = alter_configs_request([(BROKER, "", {"a.b": "3"})])
    answer = answered(apis.alter_configs, client_request(ApiKey.ALTER_CONFIGS, 2, second))
    assert [(x.resource_name, x.error_code) for x in answer.responses] == [("", 0)]
    assert active.controller.image.configs[(BROKER, "")] == {"a.b": "3"}


def envelope_of(api_key: int, version: int, body, principal: str) -> object:
    """The Envelope a broker sends for a client's request."""
    frame = encode_request(api_key, version, 5, "admin", body)[4:]
    return EnvelopeRequest(
        request_data=frame,
        request_principal=serialize_principal(principal),
        client_host_address=bytes([10, 0, 0, 9]),
    )


@pytest.mark.spec("KCTRL-20")
def test_the_controller_authorizes_forwarded_administration_as_the_envelopes_principal():
    active = Active()
    authorizer = Authorizer(
        ImageAclStore(lambda: active.controller.image), super_users="User:admin"
    )
    apis = ControllerApis(None, "cluster", "CONTROLLER", active, authorizer)  # type: ignore[arg-type]

    def create_acls(principal: str) -> list[int]:
        creations = CreateAclsRequest(creations=[acl("User:alice")])
        body = envelope_of(ApiKey.CREATE_ACLS, 3, creations, principal)
        frame = encode_request(ApiKey.ENVELOPE, 0, 9, "broker-1", body)[4:]
        header, decoded = decode_request(frame, "controller")
        broker = Connection()
        broker.principal = "User:admin"  # the broker's own principal is a super user's
        envelope = answered(apis.envelope, Request(broker, header, decoded, len(frame)))
        _, inner = decode_response(bytes(envelope.response_data), ApiKey.CREATE_ACLS, 3)
        return [x.error_code for x in inner.results]

    assert create_acls("User:alice") == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    assert not active.controller.image.acls  # nothing written
    assert create_acls("User:admin") == [0]  # the ACL lets alice alter the cluster
    assert create_acls("User:alice") == [0]
    assert authorizer.authorize(
        "User:alice", "10.0.0.9", AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster"
    )


class Apis:
    """What `alter_configs.forward` uses of a KRaft broker's KafkaApis."""

    def __init__(self) -> None:
        self.broker_id = 1
        self.config = KafkaConfig.from_props({"broker.id": 1, "log.dirs": "/tmp/unused"})
        self.dynamic_config = DynamicBrokerConfig(self.config)
        self.controller = types.SimpleNamespace(broker_configs=lambda entity: {})
        self.channel = Channel()
        self.forwarding = ForwardingManager(self.channel)
        self.answers: list[object] = []

    def send(self, request, result) -> None:
        self.answers.append(result)


@pytest.mark.spec("KBROKER-18")
def test_the_broker_answers_the_config_resources_it_refuses_and_forwards_the_rest():
    request_type = IncrementalAlterConfigsRequest

    def resource(kind: int, name: str, key: str, value: str) -> object:
        config = request_type.AlterableConfig(name=key, config_operation=0, value=value)
        return request_type.AlterConfigsResource(
            resource_type=kind, resource_name=name, configs=[config]
        )

    body = request_type(
        resources=[
            resource(TOPIC, "t", "retention.ms", "1000"),
            resource(BROKER, "2", "log.cleaner.backoff.ms", "5"),  # another broker's
            resource(BROKER, "", "broker.id", "7"),  # not a dynamic config
            resource(BROKER, "1", "log.cleaner.backoff.ms", "5"),
        ],
        validate_only=False,
    )
    apis = Apis()
    request = client_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    alter_configs.forward(apis, request)  # type: ignore[arg-type]
    [(_, _, envelope, on_answer)] = apis.channel.sent
    _, forwarded = decode_request(bytes(envelope.request_data))
    assert [(x.resource_type, x.resource_name) for x in forwarded.resources] == [
        (TOPIC, "t"),
        (BROKER, "1"),
    ]
    response_type = IncrementalAlterConfigsResponse
    inner = response_type(
        responses=[
            response_type.AlterConfigsResourceResponse(
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                resource_type=TOPIC,
                resource_name="t",
            ),
            response_type.AlterConfigsResourceResponse(
                error_code=0, resource_type=BROKER, resource_name="1"
            ),
        ]
    )
    frame = encode_response(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, 77, inner)
    on_answer(EnvelopeResponse(response_data=frame[4:], error_code=0))
    [answer] = apis.answers
    assert [(x.resource_name, x.error_code) for x in answer.responses] == [
        ("t", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("2", ErrorCode.INVALID_REQUEST),
        ("", ErrorCode.INVALID_REQUEST),
        ("1", 0),
    ]
    assert answer.responses[1].error_message == "Unexpected broker id, expected 1, but received 2"


@pytest.mark.spec("KBROKER-19")
def test_acls_quotas_and_scram_users_count_once_the_image_is_published():
    published = types.SimpleNamespace(image=EMPTY)
    authorizer = Authorizer(ImageAclStore(lambda: published.image))
    quotas = QuotaManagers()
    publisher = ImagePublisher(lambda: published.image, authorizer, quotas)
    credentials = ImageCredentialStore(lambda: published.image)
    alice = make_credential("SCRAM-SHA-256", "secret", 4096)
    records = [
        r.AccessControlEntryRecord(
            id=uuid.uuid4(),
            resource_type=2,
            resource_name="t",
            pattern_type=3,
            principal="User:alice",
            host="*",
            operation=3,
            permission_type=3,
        ),
        r.ClientQuotaRecord(
            entity=[r.ClientQuotaRecord.EntityData(entity_type="user", entity_name="alice")],
            key="producer_byte_rate",
            value=1024.0,
            remove=False,
        ),
        r.UserScramCredentialRecord(
            name="alice",
            mechanism=MECHANISM_TYPES["SCRAM-SHA-256"],
            salt=alice.salt,
            stored_key=alice.stored_key,
            server_key=alice.server_key,
            iterations=alice.iterations,
        ),
    ]

    def allowed() -> bool:
        return authorizer.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC, "t")

    published.image = load([ApiMessageAndVersion.of(x) for x in records])
    # folded into the image that will be published: the ACL waits for the publication
    assert not authorizer.bindings() and quotas.produce.quota("alice", "c") is None
    publisher.publish()
    assert allowed()
    assert quotas.produce.quota("alice", "c") == 1024.0
    assert quotas.configs == {QuotaEntity("alice", None): {"producer_byte_rate": 1024.0}}
    assert credentials.lookup("alice", "SCRAM-SHA-256") == alice
    assert credentials.describe() == {"alice": {"SCRAM-SHA-256": 4096}}


@pytest.mark.spec("KBROKER-20")
def test_a_clean_stop_keeps_the_broker_epoch_for_the_next_registration(tmp_path):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    for d in dirs:
        os.makedirs(d)
    first = LogManager(dirs, LogConfig(), ManualClock())
    assert first.previous_broker_epoch == -1  # never stopped cleanly
    first.close(broker_epoch=57)
    marker = os.path.join(dirs[0], CLEAN_SHUTDOWN_FILE)
    with open(marker, encoding="utf-8") as f:
        assert f.read() == '{"version":0,"brokerEpoch":57}'  # Kafka's marker
    second = LogManager(dirs, LogConfig(), ManualClock())
    assert second.previous_broker_epoch == 57
    body = registration_body(1, "cluster", uuid.uuid4(), [], None, previous_broker_epoch=57)
    assert body.previous_broker_epoch == 57
    # a crash leaves no marker: the next start names no epoch, the controller fences the
    # replicas the broker may have lost (KCTRL-4); so do markers that disagree
    third = LogManager(dirs, LogConfig(), ManualClock())
    assert third.previous_broker_epoch == -1
    third.close(broker_epoch=60)
    with open(marker, "w", encoding="utf-8") as f:
        f.write('{"version":0,"brokerEpoch":59}')
    assert LogManager(dirs, LogConfig(), ManualClock()).previous_broker_epoch == -1


@pytest.mark.spec("KBROKER-18")
def test_a_forwarded_election_without_a_controller_answers_each_partition():
    elect = ElectLeadersRequest
    body = elect(
        election_type=0,
        topic_partitions=[elect.TopicPartitions(topic="t", partitions=[0, 1])],
        timeout_ms=5000,
    )
    channel, answers = Channel(), []
    request = client_request(ApiKey.ELECT_LEADERS, 2, body)
    ForwardingManager(channel).forward(request, lambda r, result: answers.append(result))
    channel.answer(ControllerUnavailableError("nobody"))
    [answer] = answers
    assert answer.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert [
        (r.topic, p.partition_id, p.error_code, p.error_message)
        for r in answer.replica_election_results
        for p in r.partition_result
    ] == [
        ("t", 0, ErrorCode.REQUEST_TIMED_OUT, "The request timed out."),
        ("t", 1, ErrorCode.REQUEST_TIMED_OUT, "The request timed out."),
    ]
