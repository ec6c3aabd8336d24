"""ApiVersions and Metadata: what the broker speaks, and what the cluster looks like.

**ApiVersions** (key 18) is the first request on every connection: the client learns, per
API key, the lowest and highest version the broker accepts, and picks the highest version
both sides speak. The answer lists exactly the APIs the broker implements (the protocol
registry, `supported_api_versions`), nothing more, because clients infer features from it:
kafka-python guesses the broker's Kafka version from which versions are present, and an
advertised-but-missing API would make it send requests nobody can answer (BROKER-6). A
request at a version the broker does not know still gets an answer (KIP-511): a v0 body
with UNSUPPORTED_VERSION and the supported ranges, so the client can retry lower
(Kafka: `KafkaApis.handleApiVersionsRequest`, PROTO-14). v3 requests carry the client's
software name and version, which must look like names (`[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*
[a-zA-Z0-9])?`) or the answer is INVALID_REQUEST (BROKER-7). From v5 it may name the cluster
and the broker the client meant to reach (KIP-1242): another cluster or broker answers
REBOOTSTRAP_REQUIRED, and the client starts again from its bootstrap servers (BROKER-61).

**Metadata** (key 3) tells a client the brokers (id, host, port: the *advertised*
address of the listener the client came in on, SEC-2; a broker without that listener is
left out), the cluster id, the controller id, and per topic its partitions with leader,
replicas and ISR. Which topics (BROKER-10): v0 sends an empty list for "all topics"; from
v1 a null list means all and an empty list means none. A requested topic that does not
exist is created when `auto.create.topics.enable` is on and the request allows it (always
below v4; the `allow_auto_topic_creation` flag from v4), and this answer reports it as not
there yet; the client asks again and finds it (BROKER-11). How it says so depends on who
creates topics, as in Kafka: with embedded metadata (KRaft's combined mode) the creation is
the controller's business and the answer is UNKNOWN_TOPIC_OR_PARTITION, as a KRaft broker
answers after forwarding CreateTopics to its controller quorum
(`AutoTopicCreationManager.sendCreateTopicRequest`); in ZooKeeper mode it is
LEADER_NOT_AVAILABLE, as a ZooKeeper-era broker answered after writing the topic itself
(`createTopicsInZk`). Otherwise it is UNKNOWN_TOPIC_OR_PARTITION;
an illegal name is INVALID_TOPIC_EXCEPTION. On one broker the controller, every leader and
every replica is this broker (BROKER-12). In a ZooKeeper cluster the answer comes from the
broker's picture of ZooKeeper (cluster/zk_metadata.py): every live broker, the controller,
and per partition the leader, leader epoch, replicas and ISR the controller wrote; replicas
on brokers that are down are `offline_replicas`, and a partition without a leader (not yet
elected, or offline) is LEADER_NOT_AVAILABLE with leader -1, so clients wait and ask again
(CTRL-11). The brokers listed are every live broker and always the one that answers, and
every leader reported is among them (CTRL-14). From v7 each partition carries its leader
epoch (0 forever on one broker), which never goes backwards on a broker (CTRL-12); clients
use it to drop stale metadata and to validate their positions after a leader change (KIP-320).
From v8 a client may ask for the operations the ACLs allow it on each topic and on the
cluster (BROKER-62); from v10 each topic carries its id, and from v12 topics may be asked for
by id: an unknown id is UNKNOWN_TOPIC_ID and is never created (KIP-516, BROKER-63).
**DescribeCluster** (key 60, KIP-700) is Metadata's cluster half alone: the cluster id, the
controller and the same brokers, for admin clients (BROKER-50).
`__consumer_offsets` and `__transaction_state` are *internal* topics (`is_internal`, Kafka:
`Topic.isInternal`); asking for `__consumer_offsets` creates it with the group
coordinator's settings, whatever `auto.create.topics.enable` says, as Kafka does (BROKER-45).

Rules: BROKER-6, BROKER-7, BROKER-10..BROKER-12, BROKER-45, BROKER-50, BROKER-61..BROKER-63,
CTRL-11, CTRL-12, CTRL-14, SEC-2, TXN-91.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import BrokerEndpoint, InvalidTopicError, validate_topic_name
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.frames import api_versions_body, unsupported_api_versions_response
from kafka_ref.protocol.messages import (
    ApiVersionsResponse,
    DescribeClusterResponse,
    MetadataResponse,
)
from kafka_ref.protocol.types import ZERO_UUID
from kafka_ref.security.acls import AclOperation
from kafka_ref.server.group_adapter import OFFSETS_TOPIC, ensure_offsets_topic
from kafka_ref.server.handlers.authz import Op, Res, authorized, authorized_operations
from kafka_ref.server.handlers.features import add_features
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import Response

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

_PARTITION = MetadataResponse.MetadataResponsePartition  # looked up once, built per partition
# Kafka: Topic.INTERNAL_TOPICS
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state", "__share_group_state"})

MIN_VERSION_WITH_TOPIC_ID_LOOKUP = 12
MIN_VERSION_WITH_EXPECTED_NODE = 5  # ApiVersions (KIP-1242)
NO_NODE_ID = -1
AUTHORIZED_OPERATIONS_NOT_ASKED = -2147483648  # the schema's default: the field's "null"
# Topics whose authorized operations a Metadata answer leaves out: those it does not describe.
_UNDESCRIBED = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID)

# Kafka's ApiVersionsRequest.isValid: a software name/version looks like this.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle_api_versions(apis: ApiContext, request: Request) -> Any:
    if request.body is None:  # a version we do not know (KIP-511): v0 body, error 35
        return Response.of_bytes(unsupported_api_versions_response(request.correlation_id))
    body, version = request.body, request.api_version
    if version >= 3:
        for value in (body.client_software_name, body.client_software_version):
            if not _SOFTWARE.fullmatch(value or ""):
                return _api_versions_error(ErrorCode.INVALID_REQUEST)
    if version >= MIN_VERSION_WITH_EXPECTED_NODE:
        error = _misrouted(apis, body.cluster_id, body.node_id)
        if error != ErrorCode.NO_ERROR:
            return _api_versions_error(error)
    return add_features(apis, version, api_versions_body())  # TXN-91


def _misrouted(apis: ApiContext, cluster_id: str | None, node_id: int) -> ErrorCode:
    """KIP-1242 (ApiVersions v5): the client names the cluster and the broker it meant to
    reach, both or neither; a connection that reached another one is told so, and the
    client goes back to its bootstrap servers (BROKER-61; Kafka:
    `KafkaApis.handleApiVersionsRequest`)."""
    if (cluster_id is None) != (node_id == NO_NODE_ID):
        return ErrorCode.INVALID_REQUEST  # a cluster without a broker, or the other way
    if cluster_id is not None and (
        cluster_id != apis.controller.cluster_id or node_id != apis.broker_id
    ):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return ErrorCode.NO_ERROR


def _api_versions_error(error: ErrorCode) -> Any:
    """A refused ApiVersions request: the error alone, no API listed (Kafka:
    `ApiVersionsRequest.getErrorResponse`)."""
    return ApiVersionsResponse(error_code=error, api_keys=[], throttle_time_ms=0)


def _requested_topics(request: Request) -> list[str | None] | None:
    """The topic names asked for, in order without repeats; None means all topics."""
    topics = request.body.topics
    if topics is None or (request.api_version == 0 and not topics):
        return None
    return list(dict.fromkeys(t.name for t in topics))


def handle_metadata(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    requested = body.topics or []
    # Topics by id from v12 (KIP-516); before, a topic id or a missing name is refused.
    by_id = [t.topic_id for t in requested if t.topic_id != ZERO_UUID]
    unnamed = any(t.name is None for t in requested)
    if version < MIN_VERSION_WITH_TOPIC_ID_LOOKUP and (by_id or unnamed):
        topics = [
            _error_topic(t.name or "", ErrorCode.INVALID_REQUEST, t.topic_id) for t in requested
        ]
    elif by_id:  # names, if any, are ignored (Kafka: `useTopicId`)
        topics = [_by_id(apis, request, topic_id) for topic_id in dict.fromkeys(by_id)]
    else:
        topics = _by_name(apis, request)
    cluster_operations = AUTHORIZED_OPERATIONS_NOT_ASKED
    if version >= 8:  # authorized operations, when asked (BROKER-62)
        if body.include_topic_authorized_operations:
            for topic in topics:
                if topic.error_code not in _UNDESCRIBED:
                    topic.topic_authorized_operations = authorized_operations(
                        apis, request, Res.TOPIC, topic.name
                    )
        if version <= 10 and body.include_cluster_authorized_operations:
            cluster_operations = (
                authorized_operations(apis, request, Res.CLUSTER)
                if authorized(apis, request, Op.DESCRIBE, Res.CLUSTER)
                else 0
            )
    controller = apis.controller
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponse.MetadataResponseBroker(node_id=b.node_id, host=h, port=p, rack=b.rack)
            for b, h, p in listener_view(live_brokers(controller), request)
        ],
        cluster_id=controller.cluster_id,
        controller_id=controller.controller_id,
        topics=topics,
        cluster_authorized_operations=cluster_operations,
        error_code=ErrorCode.NO_ERROR,  # v13+: Kafka's brokers never set it (BROKER-63)
    )


def _by_name(apis: ApiContext, request: Request) -> list[Any]:
    """The topics asked for by name (every topic for null, or v0's empty list)."""
    controller = apis.controller
    names = _requested_topics(request)
    live = {b.node_id for b in live_brokers(controller)}
    if names is None:  # topics the principal may not describe are left out (SEC-17)
        visible = [m.name for m in controller.topics()]
        return [_describe(apis, n, live) for n in visible if _may(apis, request, Op.DESCRIBE, n)]
    allow_auto_create = apis.config["auto.create.topics.enable"] and (
        request.api_version < 4 or request.body.allow_auto_topic_creation
    )
    topics = []
    for name in names:
        if name is None:  # v12+: neither a name nor an id
            topics.append(_error_topic("", ErrorCode.INVALID_REQUEST))
        elif not _may(apis, request, Op.DESCRIBE, name):
            topics.append(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        elif controller.topic(name) is not None:
            topics.append(_describe(apis, name, live))
        else:  # creating it needs CREATE on the cluster or on the topic
            may_create = authorized(apis, request, Op.CREATE, Res.CLUSTER) or _may(
                apis, request, Op.CREATE, name
            )
            topics.append(_missing(apis, name, allow_auto_create and may_create))
    return topics


def _by_id(apis: ApiContext, request: Request, topic_id: uuid.UUID) -> Any:
    """A topic asked for by id (v12+): UNKNOWN_TOPIC_ID for an id this broker does not
    know, which is never created; an id is not secret, so a topic the principal may not
    describe is refused by id, without its name (BROKER-63)."""
    meta = apis.controller.topic_by_id(topic_id)
    if meta is None:
        return _error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id)
    if not _may(apis, request, Op.DESCRIBE, meta.name):
        return _error_topic(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic_id)
    live = {b.node_id for b in live_brokers(apis.controller)}
    return _describe(apis, meta.name, live)


def handle_describe_cluster(apis: ApiContext, request: Request) -> Any:
    """DescribeCluster (KIP-700): what Metadata says of the cluster, without topics (BROKER-50).
    Only brokers can be described (EndpointType 1): a broker asked for a KRaft quorum's
    controllers (2) answers MISMATCHED_ENDPOINT_TYPE, any other type
    UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker does. No kafka-ref broker is ever fenced,
    so v2's `include_fenced_brokers` adds none and every `is_fenced` is false. Asked for
    them, the operations the principal may do on the cluster (SEC-26)."""
    controller, body = apis.controller, request.body
    if body.endpoint_type != 1:  # always 1 before v1
        mismatched = body.endpoint_type == 2
        return DescribeClusterResponse(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE
            if mismatched
            else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted "
            "an endpoint of type CONTROLLER"
            if mismatched
            else f"Unsupported endpoint type {body.endpoint_type}",
            controller_id=-1,
            brokers=[],
        )
    response = DescribeClusterResponse(
        error_code=ErrorCode.NO_ERROR,
        cluster_id=controller.cluster_id,
        controller_id=controller.controller_id,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(
                broker_id=b.node_id, host=h, port=p, rack=b.rack, is_fenced=False
            )
            for b, h, p in listener_view(live_brokers(controller), request)
        ],
    )  # cluster_authorized_operations: "not asked for" (-2147483648) unless asked
    if body.include_cluster_authorized_operations:
        response.cluster_authorized_operations = authorized_operations(apis, request, Res.CLUSTER)
    return response


def live_brokers(controller: Any) -> list[BrokerEndpoint]:
    """The brokers a Metadata response lists: every live broker, and always the one that
    answers (CTRL-14). A broker whose ZooKeeper session has just expired is missing from
    its own picture until it registers again; a response without it, or without any broker,
    makes librdkafka forget the brokers it knew and start again from its bootstrap list."""
    brokers = controller.brokers()
    me = controller.endpoint
    if all(b.node_id != me.node_id for b in brokers):
        brokers = sorted([*brokers, me], key=lambda b: b.node_id)
    return brokers


def listener_view(
    brokers: list[BrokerEndpoint], request: Request
) -> list[tuple[BrokerEndpoint, str, int]]:
    """(broker, host, port) as the listener the request came in on advertises each broker
    (Kafka: `MetadataCache.getAliveBrokerNodes(listenerName)`, SEC-2)."""
    view = []
    for broker in brokers:
        address = broker.address(request.listener_name)
        if address is not None:
            view.append((broker, *address))
    return view


def _describe(apis: ApiContext, name: str, live: set[int]) -> Any:
    """One topic of the response. Its partitions are the one part of a Metadata answer that
    grows with the cluster (30,000 numbers for 10,000 partitions), so the loop does no more
    than each partition needs: its state, and one response entry that takes the state's
    tuples as they are (no copies; no replica offline, the common case, is one check)."""
    meta = apis.controller.topic(name)
    assert meta is not None
    state_of = apis.controller.partition_state
    partitions = []
    for index in range(meta.partitions):
        state = state_of(name, index)
        if state is None or state.leader not in live:  # not elected yet, or offline
            partitions.append(_leaderless(apis, name, index, state, live))
            continue
        replicas = state.replicas  # tuples: the encoder takes them as they are
        offline = () if live.issuperset(replicas) else tuple(r for r in replicas if r not in live)
        partitions.append(
            _PARTITION(
                error_code=ErrorCode.NO_ERROR,
                partition_index=index,
                leader_id=state.leader,
                leader_epoch=state.leader_epoch,
                replica_nodes=replicas,
                isr_nodes=state.isr,
                offline_replicas=offline,
            )
        )
    return MetadataResponse.MetadataResponseTopic(
        error_code=ErrorCode.NO_ERROR,
        name=name,
        topic_id=meta.topic_id,
        is_internal=meta.internal or name in INTERNAL_TOPICS,
        partitions=partitions,
    )


def _leaderless(apis: ApiContext, name: str, index: int, state: Any, live: set[int]) -> Any:
    """LEADER_NOT_AVAILABLE with leader -1: no leader elected yet, or it is offline."""
    replicas = state.replicas if state else _replicas(apis, name, index)
    return _PARTITION(
        error_code=ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=index,
        leader_id=-1,
        leader_epoch=state.leader_epoch if state else -1,
        replica_nodes=list(replicas),
        isr_nodes=list(state.isr) if state else [],
        offline_replicas=[r for r in replicas if r not in live],
    )


def _replicas(apis: ApiContext, name: str, index: int) -> tuple[int, ...]:
    replicas = getattr(apis.controller, "replicas", None)  # ZooKeeper mode: the assignment
    return replicas(name, index) if replicas else ()


def _being_created(apis: ApiContext) -> ErrorCode:
    """The answer for a topic this request has just had created (BROKER-11): KRaft's, or
    ZooKeeper mode's (the broker runs a ZooKeeper-era controller)."""
    if apis.kafka_controller is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.LEADER_NOT_AVAILABLE


def _missing(apis: ApiContext, name: str, allow_auto_create: bool) -> Any:
    try:
        validate_topic_name(name)
        if name == OFFSETS_TOPIC:  # Kafka: createInternalTopic, not the auto-create settings
            error = ensure_offsets_topic(apis.controller, apis.config)
            if error == ErrorCode.NO_ERROR:
                error = _being_created(apis)  # created now: the client asks again
        elif not allow_auto_create:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            apis.controller.create_topic(name)  # num.partitions, default.replication.factor
            error = _being_created(apis)  # the client asks again
    except InvalidTopicError:
        error = ErrorCode.INVALID_TOPIC
    except KafkaError as err:  # e.g. default.replication.factor above the broker count
        error = err.code
    return _error_topic(name, error)


def _error_topic(name: str | None, error: ErrorCode, topic_id: uuid.UUID = ZERO_UUID) -> Any:
    return MetadataResponse.MetadataResponseTopic(
        error_code=error,
        name=name,
        topic_id=topic_id,
        is_internal=name in INTERNAL_TOPICS,
        partitions=[],
    )


def _may(apis: ApiContext, request: Request, operation: AclOperation, topic: str) -> bool:
    return authorized(apis, request, operation, Res.TOPIC, topic)
