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
and the tool asks the active controller, which DescribeCluster names (RAFT-15).

Rules: RAFT-15.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.frames import encode_response
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    ApiVersionsResponse,
    DescribeClusterResponse,
    DescribeQuorumResponse,
)
from kafka_ref.raft import wire
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.security.listeners import ListenerSecurity
from kafka_ref.server.raft_manager import RaftManager
from kafka_ref.server.request_channel import Request, RequestChannel, RequestHandlerPool
from kafka_ref.server.response import Response
from kafka_ref.server.socket_server import SocketServer

logger = logging.getLogger("kafka_ref.server.controller_server")

CONTROLLER_ENDPOINT_TYPE = 2  # DescribeCluster's EndpointType for controllers (KIP-919)
QUORUM_APIS = (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH)


class ControllerApis:
    """The controller listener's handlers (Kafka: `ControllerApis`)."""

    def __init__(self, raft: RaftManager, cluster_id: str, listener_name: str) -> None:
        self.raft = raft
        self.cluster_id = cluster_id
        self.listener_name = listener_name
        self.handlers: dict[int, Callable[[Request], Any]] = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.DESCRIBE_QUORUM: self.describe_quorum,
            ApiKey.DESCRIBE_CLUSTER: self.describe_cluster,
        }
        for key in QUORUM_APIS:
            self.handlers[key] = self.quorum_request

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
        frame = encode_response(request.api_key, request.api_version, request.correlation_id, body)
        request.complete(Response.of_bytes(frame))

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
        """The leader's view of the voters (KIP-595's DescribeQuorum)."""
        client = self.raft.client
        state = client.state if client is not None else None
        if not isinstance(state, LeaderState):
            return _describe_quorum_error(ErrorCode.NOT_LEADER_OR_FOLLOWER, client)
        now = self.raft.clock.milliseconds()
        voters = [
            DescribeQuorumResponse.ReplicaState(
                replica_id=voter,
                log_end_offset=-1 if replica.end_offset is None else replica.end_offset,
                last_fetch_timestamp=now if voter == state.local_id else replica.last_fetch_ms,
                last_caught_up_timestamp=(
                    now if voter == state.local_id else replica.last_caught_up_ms
                ),
            )
            for voter, replica in sorted(state.replicas.items())
        ]
        partition = DescribeQuorumResponse.PartitionData(
            partition_index=wire.METADATA_PARTITION,
            error_code=ErrorCode.NO_ERROR,
            leader_id=state.local_id,
            leader_epoch=state.epoch,
            high_watermark=client.high_watermark,
            current_voters=voters,
            observers=[],
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

    def __init__(self, raft: RaftManager, listener: ListenerSecurity, cluster_id: str) -> None:
        self.raft = raft
        self.listener = listener
        self.apis = ControllerApis(raft, cluster_id, listener.name)
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
