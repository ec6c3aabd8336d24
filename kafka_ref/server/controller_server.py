"""A KRaft controller node: the controller listener and the quorum behind it (Kafka:
`ControllerServer`, `ControllerApis`).

In KRaft a node has roles (`process.roles`): `broker`, `controller`, or both. A controller
serves its own listener (`controller.listener.names`, CONTROLLER in Kafka's examples),
where only controllers and brokers speak, never clients: the quorum's requests between
the voters (Vote, BeginQuorumEpoch, EndQuorumEpoch, and Fetch of `__cluster_metadata`),
and DescribeQuorum and DescribeCluster for the admin tools that reach the controllers
directly (`kafka-metadata-quorum.sh --bootstrap-controller`, KIP-919).

This module is that listener's request handling; the quorum itself is the node's
`RaftManager` (raft_manager.py). The connections, framing and request queue are the
broker's own (socket_server.py, network.py): a listener is a listener.

**ApiVersions** on this listener lists the controller's APIs only, as Kafka's
`ControllerApis` does, so a tool learns what it may ask here (RAFT-15).

**DescribeQuorum** (KIP-595, KIP-836, KIP-853) is answered by the leader: its epoch, high
watermark, and for each voter its log end offset, when it last fetched and when it last
caught up with the leader; a node that is not the leader answers NOT_LEADER_OR_FOLLOWER
and the tool asks the active controller, which DescribeCluster names (RAFT-15). The
observers that fetched within the last five minutes (brokers following the metadata log)
are listed apart, with the directory id their fetches carry (RAFT-20).

The **active controller's** requests (the brokers' registrations, heartbeats, ISR changes
and producer id blocks; topic administration) are quorum_controller_apis.py's, answered
once their records are committed. A broker forwards its clients' administration in an
**Envelope** (KIP-590): the controller reads the client's request out of it, answers it as
if the client had asked, and wraps the answer (KCTRL-18). The principal travels in Kafka's
`DefaultPrincipalData` encoding; one that cannot be read is
PRINCIPAL_DESERIALIZATION_FAILURE. The inner request is answered for that principal and
the client's address: the administration of controller_admin_apis.py is authorized with
them (KCTRL-20); the topics' requests are not authorized yet.

Rules: RAFT-15, RAFT-20, KCTRL-18, KCTRL-20.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import uuid
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.errors import ProtocolError
from kafka_ref.protocol.frames import decode_request, encode_response
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    ApiVersionsResponse,
    DescribeClusterResponse,
    DescribeQuorumResponse,
    EnvelopeResponse,
)
from kafka_ref.raft import wire
from kafka_ref.raft.leader_state import LeaderState, ReplicaState
from kafka_ref.security.authorizer import Authorizer
from kafka_ref.security.listeners import ListenerSecurity
from kafka_ref.security.principal import deserialize_principal
from kafka_ref.server import quorum_controller_apis as qc
from kafka_ref.server.active_controller import ActiveController
from kafka_ref.server.controller_admin_apis import ControllerAdminApis
from kafka_ref.server.forwarding_manager import FORWARDED
from kafka_ref.server.raft_manager import RaftManager
from kafka_ref.server.request_channel import Request, RequestChannel, RequestHandlerPool
from kafka_ref.server.response import Response
from kafka_ref.server.socket_server import SocketServer

logger = logging.getLogger("kafka_ref.server.controller_server")

CONTROLLER_ENDPOINT_TYPE = 2  # DescribeCluster's EndpointType for controllers (KIP-919)
QUORUM_APIS = (
    ApiKey.VOTE,
    ApiKey.BEGIN_QUORUM_EPOCH,
    ApiKey.END_QUORUM_EPOCH,
    ApiKey.FETCH,
    ApiKey.FETCH_SNAPSHOT,  # KIP-630 (RAFT-23)
)
# the active controller's requests (quorum_controller_apis.py)
CONTROLLER_APIS = {
    ApiKey.BROKER_REGISTRATION: qc.broker_registration,
    ApiKey.BROKER_HEARTBEAT: qc.broker_heartbeat,
    ApiKey.UNREGISTER_BROKER: qc.unregister_broker,
    ApiKey.ALTER_PARTITION: qc.alter_partition,
    ApiKey.ALLOCATE_PRODUCER_IDS: qc.allocate_producer_ids,
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: qc.assign_replicas_to_dirs,
    ApiKey.CREATE_TOPICS: qc.create_topics,
    ApiKey.DELETE_TOPICS: qc.delete_topics,
    ApiKey.CREATE_PARTITIONS: qc.create_partitions,
}


class ForwardedClient:
    """The client an Envelope speaks for: its principal and address, for the authorizer
    (a request's `principal` and `host` read them from its connection)."""

    def __init__(self, principal: str, address: bytes) -> None:
        self.principal = principal
        self.name = f"{ipaddress.ip_address(address)}:0"


class ControllerApis:
    """The controller listener's handlers (Kafka: `ControllerApis`)."""

    def __init__(
        self,
        raft: RaftManager,
        cluster_id: str,
        listener_name: str,
        active: ActiveController | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.raft = raft
        self.cluster_id = cluster_id
        self.listener_name = listener_name
        self.active = active
        self.handlers: dict[int, Callable[[Request], Any]] = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.DESCRIBE_QUORUM: self.describe_quorum,
            ApiKey.DESCRIBE_CLUSTER: self.describe_cluster,
        }
        for key in QUORUM_APIS:
            self.handlers[key] = self.quorum_request
        if active is not None:
            for key, handler in CONTROLLER_APIS.items():
                self.handlers[key] = functools.partial(handler, active)
            self.handlers.update(ControllerAdminApis(active, authorizer).handlers())
            self.handlers[ApiKey.ENVELOPE] = self.envelope

    def handle(self, request: Request) -> None:
        handler = self.handlers.get(request.api_key)
        if handler is None:  # a client's request sent to the controller listener
            request.close_connection(
                f"{ApiKey(request.api_key).name} is not served on the controller listener"
            )
            return
        try:
            body = handler(request)
        except wire.InvalidRaftRequestError as err:
            request.close_connection(f"invalid quorum request: {err}")
            return
        except Exception as err:
            logger.exception("error handling %r", request)
            request.close_connection(f"error handling request: {err}")
            return
        _when_ready(body, lambda ready: self._respond(request, ready))

    def _respond(self, request: Request, body: Any) -> None:
        if isinstance(body, BaseException):
            logger.error("error handling %r", request, exc_info=body)
            request.close_connection(f"error handling request: {body}")
            return
        frame = encode_response(request.api_key, request.api_version, request.correlation_id, body)
        request.complete(Response.of_bytes(frame))

    def envelope(self, request: Request) -> Any:
        """A client's request forwarded by a broker (KIP-590, KCTRL-18)."""
        body = request.body
        try:  # version prefixed, as Kafka's DefaultKafkaPrincipalBuilder.serialize writes it
            principal = deserialize_principal(bytes(body.request_principal or b""))
        except ProtocolError:
            return EnvelopeResponse(error_code=ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE)
        try:
            header, inner_body = decode_request(body.request_data, "controller")
        except ProtocolError:
            return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)
        if header.request_api_key not in FORWARDED:  # what a broker forwards (KCTRL-19)
            return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)
        try:
            client = ForwardedClient(principal, bytes(body.client_host_address))
        except ValueError:  # neither 4 nor 16 bytes
            return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)
        inner = Request(client, header, inner_body, len(body.request_data))
        answer = self.handlers[header.request_api_key](inner)
        logger.debug("%s forwarded for %s", inner, principal)
        envelope: asyncio.Future = asyncio.get_running_loop().create_future()

        def wrap(ready: Any) -> None:
            if isinstance(ready, BaseException):
                envelope.set_exception(ready)
                return
            frame = encode_response(inner.api_key, inner.api_version, inner.correlation_id, ready)
            envelope.set_result(
                EnvelopeResponse(response_data=frame[4:], error_code=ErrorCode.NO_ERROR)
            )

        _when_ready(answer, wrap)
        return envelope

    # ------------------------------------------------------------------ handlers
    def quorum_request(self, request: Request) -> Any:
        return self.raft.handle_request(request.api_key, request.api_version, request.body)

    def api_versions(self, request: Request) -> Any:
        return ApiVersionsResponse(
            error_code=ErrorCode.NO_ERROR,
            api_keys=[
                ApiVersionsResponse.ApiVersion(
                    api_key=key,
                    min_version=APIS[key].min_version,
                    max_version=APIS[key].max_version,
                )
                for key in sorted(self.handlers)
            ],
            throttle_time_ms=0,
        )

    def describe_cluster(self, request: Request) -> Any:
        """The controllers, and which one is active (KIP-919)."""
        body = request.body
        if request.api_version < 1 or body.endpoint_type != CONTROLLER_ENDPOINT_TYPE:
            return DescribeClusterResponse(
                error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                error_message="The request was sent to a controller listener",
                endpoint_type=CONTROLLER_ENDPOINT_TYPE,
                cluster_id=self.cluster_id,
            )
        client = self.raft.client
        return DescribeClusterResponse(
            error_code=ErrorCode.NO_ERROR,
            endpoint_type=CONTROLLER_ENDPOINT_TYPE,
            cluster_id=self.cluster_id,
            controller_id=client.quorum.leader_id if client is not None else -1,
            brokers=[
                DescribeClusterResponse.DescribeClusterBroker(broker_id=node, host=host, port=port)
                for node, (host, port) in sorted(self.raft.voters.items())
            ],
        )

    def describe_quorum(self, request: Request) -> Any:
        """The leader's view of the voters and the observers (KIP-595's DescribeQuorum)."""
        client = self.raft.client
        state = client.state if client is not None else None
        if not isinstance(state, LeaderState):
            return _describe_quorum_error(ErrorCode.NOT_LEADER_OR_FOLLOWER, client)
        now = self.raft.clock.milliseconds()
        voters = [
            _replica_state(voter, replica, now if voter == state.local_id else None)
            for voter, replica in sorted(state.replicas.items())
        ]
        observers = [
            _replica_state(observer, replica)
            for observer, replica in sorted(state.observer_states(now).items())
        ]
        partition = DescribeQuorumResponse.PartitionData(
            partition_index=wire.METADATA_PARTITION,
            error_code=ErrorCode.NO_ERROR,
            leader_id=state.local_id,
            leader_epoch=state.epoch,
            high_watermark=client.high_watermark,
            current_voters=voters,
            observers=observers,
        )
        return DescribeQuorumResponse(
            error_code=ErrorCode.NO_ERROR,
            topics=[
                DescribeQuorumResponse.TopicData(
                    topic_name=wire.METADATA_TOPIC, partitions=[partition]
                )
            ],
            nodes=[
                DescribeQuorumResponse.Node(
                    node_id=node,
                    listeners=[
                        DescribeQuorumResponse.Listener(
                            name=self.listener_name, host=host, port=port
                        )
                    ],
                )
                for node, (host, port) in sorted(self.raft.voters.items())
            ],
        )


def _replica_state(replica_id: int, replica: ReplicaState, leader_now: int | None = None) -> Any:
    """One voter or observer in DescribeQuorum; the leader itself (`leader_now` given) has
    fetched and caught up just now."""
    return DescribeQuorumResponse.ReplicaState(
        replica_id=replica_id,
        replica_directory_id=replica.directory_id or uuid.UUID(int=0),
        log_end_offset=-1 if replica.end_offset is None else replica.end_offset,
        last_fetch_timestamp=replica.last_fetch_ms if leader_now is None else leader_now,
        last_caught_up_timestamp=replica.last_caught_up_ms if leader_now is None else leader_now,
    )


def _when_ready(body: Any, then: Callable[[Any], None]) -> None:
    """Call `then` with `body`, or, for a future, with its result (or exception) once set."""
    if not isinstance(body, asyncio.Future):
        then(body)
        return

    def done(future: asyncio.Future) -> None:
        then(future.exception() if future.exception() is not None else future.result())

    body.add_done_callback(done)


def _describe_quorum_error(error: ErrorCode, client: Any) -> Any:
    partition = DescribeQuorumResponse.PartitionData(
        partition_index=wire.METADATA_PARTITION,
        error_code=error,
        leader_id=client.quorum.leader_id if client is not None else -1,
        leader_epoch=client.epoch if client is not None else -1,
    )
    return DescribeQuorumResponse(
        error_code=ErrorCode.NO_ERROR,
        topics=[
            DescribeQuorumResponse.TopicData(topic_name=wire.METADATA_TOPIC, partitions=[partition])
        ],
    )


class ControllerServer:
    """The controller listener's socket server and handlers, over a `RaftManager`."""

    def __init__(
        self,
        raft: RaftManager,
        listener: ListenerSecurity,
        cluster_id: str,
        active: ActiveController | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.raft = raft
        self.listener = listener
        self.active = active
        self.apis = ControllerApis(raft, cluster_id, listener.name, active, authorizer)
        self.channel = RequestChannel(500)
        self.handlers = RequestHandlerPool(self.channel, self.apis.handle)
        self.socket_server = SocketServer(self.channel, [listener], api_listener="controller")

    async def bind(self) -> int:
        return (await self.socket_server.bind())[self.listener.name]

    async def start(self) -> None:
        """Start the quorum, then accept: a peer's request finds the client ready."""
        self.handlers.resize(1)
        self.raft.start()
        await self.socket_server.enable_request_processing()

    async def stop(self) -> None:
        await self.raft.shutdown()
        await self.socket_server.stop()
        await self.handlers.shutdown()
        await asyncio.sleep(0)
