"""A broker's requests to itself (server/loopback.py, TXN-24): the markers and the
verifications of a one-broker transaction take no socket, are answered by the broker's own
handlers as a socket's would be, and a producer's pipelined batches still append in order."""

from __future__ import annotations

import asyncio

import pytest

from kafka_ref.conformance.wire import produce_body
from kafka_ref.protocol.messages import ApiKey, ApiVersionsRequest, DescribeTransactionsRequest
from kafka_ref.server.inter_broker_channel import BrokerUnavailableError
from tests.unit.server.conftest import wait_until
from tests.unit.server.test_txn import (
    TXN,
    add_partitions,
    end,
    read_committed,
    started,
    txn_batch,
)

pytestmark = pytest.mark.timeout(60)


@pytest.mark.spec("TXN-24")
def test_a_one_broker_transaction_opens_no_connection_to_itself(broker, wire):
    pid, epoch = started(wire, "l")
    assert add_partitions(wire, pid, epoch, "l", 0) == {0}  # the first write is verified:
    body = produce_body("l", 0, txn_batch(pid, epoch, 0, b"a"), transactional_id=TXN)
    assert wire.request(ApiKey.PRODUCE, 8, body).responses[0].partition_responses[0].error_code == 0
    assert end(wire, pid, epoch, commit=True) == 0
    assert wait_until(lambda: read_committed(wire, "l").last_stable_offset == 2), "no marker"
    connections = broker.call(lambda: len(broker.broker.socket_server.connections))
    assert connections == 1, "only the test's own: markers and verification took no socket"


@pytest.mark.spec("TXN-24")
def test_pipelined_batches_verified_here_append_in_order(broker, wire):
    pid, epoch = started(wire, "o")
    assert add_partitions(wire, pid, epoch, "o", 0) == {0}
    for seq in range(4):  # four requests in flight, each verified before it appends
        body = produce_body("o", 0, txn_batch(pid, epoch, seq, b"%d" % seq), transactional_id=TXN)
        wire.send(ApiKey.PRODUCE, 8, body)
    answers = [wire.receive().responses[0].partition_responses[0] for _ in range(4)]
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 0), (0, 1), (0, 2), (0, 3)]


@pytest.mark.spec("TXN-24", "TXN-12")
def test_on_one_broker_the_transaction_is_complete_when_end_txn_is_answered(wire):
    """The markers and CompleteCommit are written before the EndTxn answer leaves, so the
    producer's next AddPartitionsToTxn never meets CONCURRENT_TRANSACTIONS."""
    pid, epoch = started(wire, "c")
    for seq in range(20):
        assert add_partitions(wire, pid, epoch, "c", 0) == {0}, f"transaction {seq}"
        body = produce_body("c", 0, txn_batch(pid, epoch, seq, b"v"), transactional_id=TXN)
        assert (
            wire.request(ApiKey.PRODUCE, 8, body).responses[0].partition_responses[0].error_code
            == 0
        )
        assert end(wire, pid, epoch, commit=seq % 2 == 0) == 0
        (state,) = wire.request(
            ApiKey.DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(transactional_ids=[TXN])
        ).transaction_states
        assert state.transaction_state == ("CompleteCommit", "CompleteAbort")[seq % 2]


@pytest.mark.spec("TXN-24")
def test_a_request_to_itself_is_answered_as_over_a_socket(broker, wire):
    channel = broker.broker.txns.channel
    node = broker.broker.apis.loopback.node_id

    def ask(api_key: int, version: int, body) -> object:
        async def sent() -> object:
            answer = asyncio.get_running_loop().create_future()
            channel.send(node, api_key, version, body, answer.set_result)
            return await answer

        return asyncio.run_coroutine_threadsafe(sent(), broker.loop).result(30)

    body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    assert ask(ApiKey.API_VERSIONS, 3, body) == wire.request(ApiKey.API_VERSIONS, 3, body)
    # A request the broker answers by closing its connection (an acks=0 produce to a
    # partition that does not exist, BROKER-15) fails as a dropped connection would.
    lost = produce_body("no-such-topic", 0, txn_batch(1, 0, 0, b"x"), acks=0)
    failed = ask(ApiKey.PRODUCE, 8, lost)
    assert isinstance(failed, BrokerUnavailableError) and "closed" in str(failed)
