"""The follower's connection to its leader (server/follower_connection.py): responses read
into one reused buffer, records handed out as views of it, a misbehaving peer refused.

Against a real in-process broker (the `broker` fixture) and, for the failures, a few lines
of asyncio server that answer the way a broken leader would.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import ApiKey, FetchResponse
from kafka_ref.security.inter_broker import PLAINTEXT
from kafka_ref.server.follower_connection import INITIAL_BUFFER, FetcherConnection
from tests.unit.server.conftest import batch, fetch_body

pytestmark = pytest.mark.timeout(60)


async def _fetch_twice(port: int, first: int, second: int) -> tuple[bytes, bytes, bool]:
    connection = await FetcherConnection.open("127.0.0.1", port, PLAINTEXT, "t")
    try:
        response = await connection.request(ApiKey.FETCH, 10, fetch_body([("f", 0, first)]), "t")
        records = response.responses[0].partitions[0].records
        is_view = isinstance(records, memoryview)
        big = bytes(records)  # copied here only to compare after the next request
        response = await connection.request(ApiKey.FETCH, 10, fetch_body([("f", 0, second)]), "t")
        return big, bytes(response.responses[0].partitions[0].records), is_view
    finally:
        connection.close()


@pytest.mark.spec("REPL-7", "PROTO-9")
def test_responses_larger_than_the_buffer_arrive_whole_as_views(broker, wire):
    wire.create_topic("f")
    for _ in range(3):  # about 500 KB each: the buffer grows past INITIAL_BUFFER
        assert wire.produce("f", 0, batch(50, value_size=10_000)).error_code == 0
    assert wire.produce("f", 0, batch(2)).error_code == 0  # offset 150: a small batch
    log = broker.broker.replica_manager.get_partition("f", 0).log
    expected_all = broker.call(lambda: log.read(0, 8 << 20).read_bytes())
    expected_tail = broker.call(lambda: log.read(150, 8 << 20).read_bytes())
    assert len(expected_all) > 4 * INITIAL_BUFFER
    big, small, is_view = asyncio.run(_fetch_twice(broker.port, 0, 150))
    assert is_view  # the records are not copied out of the buffer
    assert big == expected_all[: len(big)] and len(big) > 2 * INITIAL_BUFFER
    assert small == expected_tail  # the reused buffer holds the second response only


async def _against(answer, request_count: int = 1) -> Exception | None:
    """Run a fake leader that calls `answer(writer, correlation_id)` for each request."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                request = await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                return
            await answer(writer, struct.unpack_from(">i", request, 4)[0])

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = await FetcherConnection.open("127.0.0.1", port, PLAINTEXT, "t")
    try:
        for _ in range(request_count):
            await asyncio.wait_for(
                connection.request(ApiKey.FETCH, 10, fetch_body([("f", 0, 0)]), "t"), 5
            )
        return None
    except Exception as err:  # the outcome under test
        return err
    finally:
        connection.close()
        server.close()


def _empty_response(correlation_id: int) -> bytes:
    body = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[])
    return frames.encode_response(ApiKey.FETCH, 10, correlation_id, body)


@pytest.mark.spec("REPL-7")
def test_a_response_in_many_small_pieces_is_assembled():
    async def in_pieces(writer: asyncio.StreamWriter, correlation_id: int) -> None:
        for byte in _empty_response(correlation_id):
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0)

    assert asyncio.run(_against(in_pieces, request_count=3)) is None


@pytest.mark.spec("REPL-7")
def test_a_leader_that_sends_more_than_the_response_is_refused():
    async def twice(writer: asyncio.StreamWriter, correlation_id: int) -> None:
        writer.write(_empty_response(correlation_id) * 2)

    assert isinstance(asyncio.run(_against(twice, request_count=2)), ConnectionError)


@pytest.mark.spec("REPL-7")
def test_a_leader_that_closes_mid_response_fails_the_request():
    async def half(writer: asyncio.StreamWriter, correlation_id: int) -> None:
        frame = _empty_response(correlation_id)
        writer.write(frame[: len(frame) // 2])
        await writer.drain()
        writer.close()

    assert isinstance(asyncio.run(_against(half)), EOFError | ConnectionError)
