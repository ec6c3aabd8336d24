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
[a-zA-Z0-9])?`) or the answer is INVALID_REQUEST (BROKER-7).

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
**DescribeCluster** (key 60, KIP-700) is Metadata's cluster half alone: the cluster id, the
controller and the same brokers, for admin clients (BROKER-50).
`__consumer_offsets` and `__transaction_state` are *internal* topics (`is_internal`, Kafka:
`Topic.isInternal`); asking for `__consumer_offsets` creates it with the group
coordinator's settings, whatever `auto.create.topics.enable` says, as Kafka does (BROKER-45).

Rules: BROKER-6, BROKER-7, BROKER-10..BROKER-12, BROKER-45, BROKER-50, CTRL-11, CTRL-12,
CTRL-14, SEC-2.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kafka_ref.cluster.metadata import BrokerEndpoint, InvalidTopicError, validate_topic_name
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.frames import api_versions_body, unsupported_api_versions_response
from kafka_ref.protocol.messages import DescribeClusterResponse, MetadataResponse
from kafka_ref.security.acls import AclOperation
from kafka_ref.server.group_adapter import OFFSETS_TOPIC, ensure_offsets_topic
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import Response

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

_PARTITION = MetadataResponse.MetadataResponsePartition  # looked up once, built per partition
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state"})  # Kafka: Topic.INTERNAL_TOPICS

# Kafka's ApiVersionsRequest.isValid: a software name/version looks like this.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle_api_versions(apis: ApiContext, request: Request) -> Any:
    if request.body is None:  # a version we do not know (KIP-511): v0 body, error 35
        return Response.of_bytes(unsupported_api_versions_response(request.correlation_id))
    if request.api_version >= 3:
        body = request.body
        for value in (body.client_software_name, body.client_software_version):
            if not _SOFTWARE.fullmatch(value or ""):
                return api_versions_body(ErrorCode.INVALID_REQUEST)
    return api_versions_body()


def _requested_topics(request: Request) -> list[str] | None:
    """The topic names asked for, in order without repeats; None means all topics."""
    topics = request.body.topics
    if topics is None or (request.api_version == 0 and not topics):
        return None
    return list(dict.fromkeys(t.name for t in topics))


def handle_metadata(apis: ApiContext, request: Request) -> Any:
    controller = apis.controller
    names = _requested_topics(request)
    allow_auto_create = apis.config["auto.create.topics.enable"] and (
        request.api_version < 4 or request.body.allow_auto_topic_creation
    )
    brokers = live_brokers(controller)
    live = {b.node_id for b in brokers}
    topics = []
    if names is None:  # topics the principal may not describe are left out (SEC-17)
        visible = [m.name for m in controller.topics()]
        topics = [_describe(apis, n, live) for n in visible if _may(apis, request, Op.DESCRIBE, n)]
    else:
        for name in names:
            if not _may(apis, request, Op.DESCRIBE, name):
                topics.append(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif controller.topic(name) is not None:
                topics.append(_describe(apis, name, live))
            else:  # creating it needs CREATE on the cluster or on the topic
                may_create = authorized(apis, request, Op.CREATE, Res.CLUSTER) or _may(
                    apis, request, Op.CREATE, name
                )
                topics.append(_missing(apis, name, allow_auto_create and may_create))
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponse.MetadataResponseBroker(node_id=b.node_id, host=h, port=p, rack=b.rack)
            for b, h, p in listener_view(brokers, request)
        ],
        cluster_id=controller.cluster_id,
        controller_id=controller.controller_id,
        topics=topics,
    )


def handle_describe_cluster(apis: ApiContext, request: Request) -> Any:
    """DescribeCluster (KIP-700): what Metadata says of the cluster, without topics (BROKER-50).
    Only brokers can be described (EndpointType 1); controllers (2, a KRaft quorum's) are
    UNSUPPORTED_ENDPOINT_TYPE."""
    controller = apis.controller
    if request.api_version >= 1 and request.body.endpoint_type != 1:
        return DescribeClusterResponse(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message="kafka-ref describes brokers only (endpoint type 1)",
            endpoint_type=request.body.endpoint_type, cluster_id=controller.cluster_id,
            controller_id=-1, brokers=[],
        )  # fmt: skip
    return DescribeClusterResponse(
        error_code=ErrorCode.NO_ERROR,
        cluster_id=controller.cluster_id,
        controller_id=controller.controller_id,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(
                broker_id=b.node_id, host=h, port=p, rack=b.rack
            )
            for b, h, p in listener_view(live_brokers(controller), request)
        ],
    )


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


def _error_topic(name: str, error: ErrorCode) -> Any:
    return MetadataResponse.MetadataResponseTopic(
        error_code=error, name=name, is_internal=name in INTERNAL_TOPICS, partitions=[]
    )


def _may(apis: ApiContext, request: Request, operation: AclOperation, topic: str) -> bool:
    return authorized(apis, request, operation, Res.TOPIC, topic)
