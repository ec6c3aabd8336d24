"""A broker's requests to the active controller (server/node_to_controller.py) over real
sockets, to controllers that move, refuse and vanish."""

from __future__ import annotations

import asyncio
import struct

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.frames import decode_request, encode_response
from kafka_ref.protocol.messages import (
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    CreateTopicsResponse,
)
from kafka_ref.server.node_to_controller import (
    ControllerUnavailableError,
    NodeToControllerChannel,
    says_not_controller,
)
from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(30)


class FakeController:
    """A controller listener that answers every BrokerHeartbeat with `error`."""

    def __init__(self, node_id: int, error: ErrorCode) -> None:
        self.node_id, self.error = node_id, error
        self.received = 0
        self.server: asyncio.Server | None = None

    async def start(self, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                header, _ = decode_request(await reader.readexactly(size), "controller")
                self.received += 1
                body = BrokerHeartbeatResponse(error_code=self.error, is_fenced=False)
                writer.write(
                    encode_response(header.request_api_key, 2, header.correlation_id, body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def stop(self) -> None:
        assert self.server is not None
        self.server.close()


HEARTBEAT = BrokerHeartbeatRequest(broker_id=1, broker_epoch=5, current_metadata_offset=9)


@pytest.mark.spec("KBROKER-10")
def test_a_request_follows_the_leader_past_not_controller_and_a_dead_node():
    ports = {1: free_port(), 2: free_port(), 3: free_port()}  # 3 never listens
    old = FakeController(1, ErrorCode.NOT_CONTROLLER)  # it lost the leadership
    new = FakeController(2, ErrorCode.NO_ERROR)
    leader = [1]

    def leader_id() -> int:
        return leader[0]

    async def scenario() -> None:
        await old.start(ports[1])
        await new.start(ports[2])
        voters = {n: ("127.0.0.1", p) for n, p in ports.items()}
        channel = NodeToControllerChannel(
            leader_id, voters, "broker-1-heartbeat", timeout_s=5, retry_backoff_s=0.02
        )
        # node 1 answers NOT_CONTROLLER until the node learns that 2 leads
        asyncio.get_running_loop().call_later(0.2, leader.__setitem__, 0, 2)
        answer = await channel.request(ApiKey.BROKER_HEARTBEAT, 2, HEARTBEAT)
        assert answer.error_code == ErrorCode.NO_ERROR and new.received == 1
        assert old.received > 1  # asked again while it still looked like the leader
        # a leader that is down, then no leader known: retried until one is
        leader[0] = 3
        asyncio.get_running_loop().call_later(0.1, leader.__setitem__, 0, -1)
        asyncio.get_running_loop().call_later(0.2, leader.__setitem__, 0, 2)
        answer = await channel.request(ApiKey.BROKER_HEARTBEAT, 2, HEARTBEAT)
        assert answer.error_code == ErrorCode.NO_ERROR and new.received == 2
        # the leader's connection is lost: the next request connects again
        new.stop()
        await asyncio.sleep(0.05)
        channel._connection.close()
        new.server = None
        await new.start(ports[2])
        answer = await channel.request(ApiKey.BROKER_HEARTBEAT, 2, HEARTBEAT)
        assert new.received == 3
        # nobody leads for longer than the timeout
        leader[0] = -1
        with pytest.raises(ControllerUnavailableError):
            await channel.request(ApiKey.BROKER_HEARTBEAT, 2, HEARTBEAT, timeout_s=0.2)
        channel.close()
        old.stop()
        new.stop()

    asyncio.run(scenario())


@pytest.mark.spec("KBROKER-10")
def test_not_controller_is_found_anywhere_in_a_response():
    topic = CreateTopicsResponse.CreatableTopicResult
    ok = CreateTopicsResponse(topics=[topic(name="a", error_code=0)])
    moved = CreateTopicsResponse(
        topics=[topic(name="a", error_code=0), topic(name="b", error_code=ErrorCode.NOT_CONTROLLER)]
    )
    assert not says_not_controller(ok) and says_not_controller(moved)
    assert says_not_controller(BrokerHeartbeatResponse(error_code=ErrorCode.NOT_CONTROLLER))
