"""The coordinators' connections to other brokers (server/inter_broker_channel.py): a broker
that cannot be reached is a retriable failure, and the next request goes to the address the
metadata names then, so markers follow a leader that moved or came back (TXN-22)."""

from __future__ import annotations

import asyncio

import pytest

from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.protocol.messages import ApiKey, ApiVersionsRequest
from kafka_ref.security.inter_broker import PLAINTEXT
from kafka_ref.server.inter_broker_channel import BrokerUnavailableError, InterBrokerChannel
from kafka_ref.tools.server_process import free_port

pytestmark = pytest.mark.timeout(30)


class Brokers:
    """Metadata that names broker 1 wherever a test says it is."""

    def __init__(self) -> None:
        self.live: list[BrokerEndpoint] = []

    def brokers(self) -> list[BrokerEndpoint]:
        return self.live


@pytest.mark.spec("TXN-22")
def test_an_unreachable_broker_fails_the_request_and_the_next_one_finds_it_again(make_broker):
    first, second = make_broker(), make_broker()
    metadata = Brokers()
    channel = InterBrokerChannel(metadata, "test", PLAINTEXT, timeout_s=5)
    body = ApiVersionsRequest(client_software_name="t", client_software_version="1")

    async def ask() -> object:
        return await channel.request(1, ApiKey.API_VERSIONS, 3, body)

    async def run() -> None:
        with pytest.raises(BrokerUnavailableError, match="not registered"):
            await ask()
        metadata.live = [BrokerEndpoint(1, "127.0.0.1", free_port())]  # nobody listens there
        with pytest.raises(BrokerUnavailableError):
            await ask()
        metadata.live = [BrokerEndpoint(1, "127.0.0.1", first.port)]
        assert (await ask()).error_code == 0
        await asyncio.get_running_loop().run_in_executor(None, first.stop)  # broker 1 dies
        metadata.live = [BrokerEndpoint(1, "127.0.0.1", second.port)]  # and is back elsewhere
        with pytest.raises(BrokerUnavailableError):
            await ask()  # on the connection to the dead one: dropped
        assert (await ask()).error_code == 0, "not reconnected to where the metadata says"
        channel.close()

    asyncio.run(run())
