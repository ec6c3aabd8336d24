"""The socket server: framing, ordering, pipelining, acks=0, and hostile input (BROKER-1..9)."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import struct
import time

import pytest

from kafka_ref.log.file_records import FileSlice
from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import ApiKey, ApiVersionsRequest, FetchResponse, MetadataRequest
from kafka_ref.server.response import FileRecordsValue, Response, encode_response
from tests.unit.server.conftest import Wire, batch, fetch_body, produce_body

pytestmark = pytest.mark.timeout(60)


def api_versions_frame(correlation: int, version: int = 3) -> bytes:
    body = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
    return frames.encode_request(ApiKey.API_VERSIONS, version, correlation, "t", body)


def read_correlation(wire: Wire) -> int:
    return struct.unpack_from(">i", wire.read_frame(), 0)[0]


@pytest.mark.spec("BROKER-1")
def test_a_frame_sent_byte_by_byte_is_answered(wire):
    data = api_versions_frame(7)
    for i in range(len(data)):
        wire.send_raw(data[i : i + 1])
    assert read_correlation(wire) == 7


@pytest.mark.spec("BROKER-1")
def test_many_frames_in_one_write_are_all_answered(wire):
    wire.send_raw(b"".join(api_versions_frame(i) for i in range(1, 51)))
    assert [read_correlation(wire) for _ in range(50)] == list(range(1, 51))


@pytest.mark.spec("BROKER-1")
def test_a_large_frame_in_pieces_is_read_whole(wire):
    wire.create_topic("big")
    records = batch(50, value_size=10_000)  # ~500 KB: read straight into its own buffer
    frame = wire.frame(ApiKey.PRODUCE, 7, produce_body("big", 0, records))
    for i in range(0, len(frame), 7001):
        wire.send_raw(frame[i : i + 7001])
    body = wire.receive()
    assert body.responses[0].partition_responses[0].error_code == 0
    fetched = wire.fetch_many([("big", 0, 0)]).responses[0].partitions[0].records
    assert bytes(fetched)[16:] == records[16:]  # the same bytes after offset and epoch


@pytest.mark.spec("BROKER-2")
def test_responses_keep_request_order_behind_a_long_poll(wire):
    wire.create_topic("slow")
    started = time.monotonic()
    wire.send(ApiKey.FETCH, 10, fetch_body([("slow", 0, 0)], max_wait_ms=400))
    wire.send(ApiKey.METADATA, 5, MetadataRequest(topics=[], allow_auto_topic_creation=False))
    wire.send_raw(api_versions_frame(999))
    wire.pending.append((999, ApiKey.API_VERSIONS, 3))
    first, fetch = wire.receive_numbered()  # asserts the correlation ids come back in order
    assert time.monotonic() - started >= 0.35  # the fetch waited; the others waited for it
    assert fetch.responses[0].partitions[0].error_code == 0
    assert wire.receive_numbered()[0] == first + 1
    assert wire.receive_numbered()[0] == 999


@pytest.mark.spec("BROKER-3")
def test_pipelined_produces_append_in_order(wire):
    wire.create_topic("order")
    frames_ = [wire.frame(ApiKey.PRODUCE, 7, produce_body("order", 0, batch(3))) for _ in range(20)]
    wire.send_raw(b"".join(frames_))
    offsets = [wire.receive().responses[0].partition_responses[0].base_offset for _ in range(20)]
    assert offsets == [3 * i for i in range(20)]


@pytest.mark.spec("BROKER-4")
def test_acks_0_gets_no_response(wire):
    wire.create_topic("fire")
    wire.produce("fire", 0, batch(2), acks=0)
    wire.produce("fire", 0, batch(2), acks=0)
    corr = wire.send(ApiKey.METADATA, 5, MetadataRequest(topics=[]))
    assert wire.receive_numbered()[0] == corr  # the next frame answers the Metadata request
    partition = wire.fetch_many([("fire", 0, 0)]).responses[0].partitions[0]
    assert partition.high_watermark == 4  # both acks=0 batches were appended


@pytest.mark.spec("BROKER-5")
def test_fetched_records_are_the_segment_bytes_sent_with_sendfile(broker, wire, monkeypatch):
    calls = []
    real = os.sendfile

    def counting(out_fd, in_fd, offset, count):
        calls.append((offset, count))
        return real(out_fd, in_fd, offset, count)

    monkeypatch.setattr(os, "sendfile", counting)  # the direct path and loop.sendfile's
    wire.create_topic("zc")
    for i in range(5):
        wire.produce("zc", 0, batch(10, ts=1000 + i))
    records = wire.fetch_many([("zc", 0, 0)]).responses[0].partitions[0].records
    log = broker.broker.replica_manager.get_partition("zc", 0).log
    assert bytes(records) == broker.call(lambda: log.read(0, 1 << 20).read_bytes())
    assert calls and calls[0] == (0, len(records))  # one slice, from the segment file


@pytest.mark.spec("BROKER-5")
def test_response_chunks_carry_file_slices_without_reading_them(tmp_path):
    path = tmp_path / "seg.log"
    path.write_bytes(b"x" * 100 + b"RECORDS!" + b"y" * 10)

    class File:  # a stand-in for FileRecords: a descriptor and the reads of a slice
        def __init__(self):
            self.f = open(path, "rb")  # noqa: SIM115

        def fileno(self):
            return self.f.fileno()

        def read(self, position, length):
            self.f.seek(position)
            return self.f.read(length)

    piece = FileSlice(File(), 100, 8)
    partition = FetchResponse.PartitionData(
        partition_index=0,
        error_code=0,
        high_watermark=1,
        last_stable_offset=1,
        log_start_offset=0,
        aborted_transactions=[],
        records=FileRecordsValue([piece]),
    )
    body = FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])],
    )
    response = encode_response(ApiKey.FETCH, 10, 42, body)
    slices = [c for c in response.chunks if isinstance(c, FileSlice)]
    assert [(c.position, c.length) for c in slices] == [(100, 8)]
    assert isinstance(response, Response)
    partition.records = b"RECORDS!"
    assert response.to_bytes() == frames.encode_response(ApiKey.FETCH, 10, 42, body)
    assert response.size == len(response.to_bytes())


@pytest.mark.spec("BROKER-5")
def test_fetch_works_without_native_sendfile(broker, wire, monkeypatch):
    import asyncio

    async def no_sendfile(*args, **kwargs):
        raise asyncio.SendfileNotAvailableError("not here")

    monkeypatch.setattr(broker.loop, "sendfile", no_sendfile)
    monkeypatch.delattr(os, "sendfile")  # the direct path too
    wire.create_topic("fallback")
    wire.produce("fallback", 0, batch(4))
    records = wire.fetch_many([("fallback", 0, 0)]).responses[0].partitions[0].records
    assert len(records) == len(batch(4))


@pytest.mark.spec("BROKER-5")
def test_what_the_socket_does_not_take_at_once_goes_through_loop_sendfile(
    broker, wire, monkeypatch
):
    calls = []
    real = broker.loop.sendfile

    async def counting(transport, file, offset, count, **kwargs):
        calls.append(count)
        return await real(transport, file, offset, count, **kwargs)

    monkeypatch.setattr(broker.loop, "sendfile", counting)
    wire.create_topic("full")
    for _ in range(16):  # 16 MB: more than loopback's socket buffers take at once
        wire.produce("full", 0, batch(100, value_size=10_000))
    log = broker.broker.replica_manager.get_partition("full", 0).log
    expected = broker.call(lambda: log.read(0, 64 << 20).read_bytes())
    corr = wire.send(ApiKey.FETCH, 10, fetch_body([("full", 0, 0)], partition_max_bytes=64 << 20))
    time.sleep(0.5)  # read nothing yet: the socket fills and the broker must wait
    frame = wire.read_frame()
    assert struct.unpack_from(">i", frame)[0] == corr
    assert frame.endswith(expected)  # every byte, in order, across both paths
    assert calls and 0 < calls[0] < len(expected)  # loop.sendfile sent the rest


@pytest.mark.spec("BROKER-8")
def test_an_oversized_frame_closes_only_that_connection(make_broker):
    broker = make_broker(props={"socket.request.max.bytes": 1000})
    bad, good = Wire(broker.port), Wire(broker.port)
    good.create_topic("still")
    bad.send_raw(struct.pack(">i", 1001) + b"\0" * 10)
    assert bad.is_closed()
    assert good.metadata(["still"]).topics[0].error_code == 0
    huge = Wire(broker.port)
    huge.send_raw(struct.pack(">i", 2**31 - 1))  # refused before any allocation
    assert huge.is_closed()
    negative = Wire(broker.port)
    negative.send_raw(struct.pack(">i", -5))
    assert negative.is_closed()
    assert Wire(broker.port).metadata([]).brokers


@pytest.mark.spec("BROKER-9")
def test_garbage_never_stops_the_server(broker):
    rng = random.Random(1234)
    for i in range(200):
        wire = Wire(broker.port, timeout=5)
        kind = i % 4
        if kind == 0:  # random bytes in a well-sized frame
            payload = rng.randbytes(rng.randrange(0, 64))
        elif kind == 1:  # a valid request with flipped bytes
            payload = bytearray(api_versions_frame(1)[4:])
            for _ in range(3):
                payload[rng.randrange(len(payload))] = rng.randrange(256)
        elif kind == 2:  # a produce request cut short
            full = wire.frame(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(2)))[4:]
            payload = full[: rng.randrange(4, len(full))]
        else:  # a valid header with a random body
            payload = struct.pack(">hhih", rng.choice([0, 1, 3, 19]), 5, 1, 1) + b"a"
            payload += rng.randbytes(rng.randrange(0, 40))
        wire.send_raw(struct.pack(">i", len(payload)) + bytes(payload))
        wire.sock.settimeout(5)
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            wire.sock.recv(1 << 16)  # an answer or a close; never a hang
        wire.close()
    assert Wire(broker.port).metadata([]).brokers  # still serving


@pytest.mark.spec("BROKER-9")
def test_unknown_api_keys_and_versions_close_the_connection(wire, broker):
    wire.send_raw(frames.encode_frame(struct.pack(">hhih", 99, 0, 1, 0)))
    assert wire.is_closed()
    other = Wire(broker.port)
    other.send_raw(frames.encode_frame(struct.pack(">hhih", ApiKey.METADATA, 42, 1, 0)))
    assert other.is_closed()
    raw = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    raw.close()  # a connection that says nothing is fine too
    assert Wire(broker.port).metadata([]).controller_id == 0


@pytest.mark.spec("BROKER-2", "BROKER-3")
def test_a_full_request_channel_slows_reading_but_keeps_order(make_broker):
    broker = make_broker(props={"queued.max.requests": 2, "num.io.threads": 1})
    wire = Wire(broker.port)
    wire.create_topic("q")
    count = 300  # more than MAX_IN_FLIGHT and the channel: reading pauses and resumes
    frames_ = []
    for i in range(count):
        if i % 3 == 0:
            frames_.append(wire.frame(ApiKey.PRODUCE, 7, produce_body("q", 0, batch(1))))
        else:
            frames_.append(wire.frame(ApiKey.METADATA, 5, MetadataRequest(topics=[])))
    wire.send_raw(b"".join(frames_))
    answers = [wire.receive_numbered() for _ in range(count)]  # asserts the order
    offsets = [
        body.responses[0].partition_responses[0].base_offset
        for _, body in answers
        if hasattr(body, "responses")
    ]
    assert offsets == list(range(count // 3))


@pytest.mark.spec("BROKER-5")
def test_response_slices_outlive_their_log(tmp_path):
    from kafka_ref.clock import ManualClock
    from kafka_ref.config import LogConfig
    from kafka_ref.log.log import Log

    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock())
    log.append(batch(3))
    value = FileRecordsValue(log.read(0, 1 << 20).slices)
    expected = log.read(0, 1 << 20).read_bytes()
    log.close()  # as DeleteTopics does while a response may still be queued
    reused = open(tmp_path / "other", "wb+")  # noqa: SIM115  (may take the old fd number)
    reused.write(b"z" * 1000)
    assert value.read_bytes() == expected
    reused.close()


def resident_bytes() -> int:
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmRSS:"))
    return int(kib) * 1024


@pytest.mark.spec("BROKER-51")
def test_announcing_a_large_frame_costs_nothing_until_its_bytes_arrive(broker):
    """30 connections each announce 100 MB (just under socket.request.max.bytes) and send
    10 bytes: with a buffer of the announced size that is 3 GB; the broker (in this process)
    must stay within a few MB, and still answer, and read a large frame whole."""
    before = resident_bytes()
    greedy = [Wire(broker.port) for _ in range(30)]
    for wire in greedy:
        wire.send_raw(struct.pack(">i", 100 * 1024 * 1024 - 1) + b"\0" * 10)
    good = Wire(broker.port)
    assert good.metadata([]).brokers  # the greedy frames have been seen: they came first
    assert resident_bytes() - before < 64 * 1024 * 1024
    good.create_topic("big")
    big = batch(3, value_size=300_000)  # a 900 KB frame: its buffer doubles four times
    assert good.produce("big", 0, big).error_code == 0
    assert [len(r.value) for r in good.read_all("big")] == [300_000] * 3
    for wire in greedy:
        wire.close()


@pytest.mark.spec("BROKER-51")
def test_a_frame_no_larger_than_one_already_sent_whole_gets_its_whole_buffer_at_once(broker):
    """A producer's next 1 MB request is read into one buffer of its size; a connection that
    has sent nothing that large still gets the small buffer that doubles."""
    from kafka_ref.server.network import FIRST_FRAME_CHUNK

    def frame_buffers() -> dict[int, int]:
        """Each connection's partly read large frame: client port -> its buffer's size."""
        connections = broker.broker.socket_server.connections
        return broker.call(
            lambda: {int(c.name.rsplit(":", 1)[1]): len(c._frame) for c in connections if c._frame}
        )

    producer, newcomer = Wire(broker.port), Wire(broker.port)
    producer.create_topic("whole")
    records = batch(3, value_size=300_000)  # a 900 KB frame, read whole
    assert producer.produce("whole", 0, records).error_code == 0
    announced = 800_000  # no larger than what the producer sent whole
    for wire in (producer, newcomer):
        wire.send_raw(struct.pack(">i", announced) + b"\0" * 100)
    ports = {wire.sock.getsockname()[1]: wire for wire in (producer, newcomer)}
    deadline = time.monotonic() + 5
    while len(frame_buffers()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    sizes = {ports[port]: size for port, size in frame_buffers().items() if port in ports}
    assert sizes == {producer: announced, newcomer: FIRST_FRAME_CHUNK}
    for wire in (producer, newcomer):
        wire.close()


@pytest.mark.spec("BROKER-51")
def test_idle_connections_hold_no_receive_buffer(broker):
    """500 connections that each made one request and went quiet: with a 64 KB receive buffer
    each that is 32 MB; with the shared buffer they cost their bookkeeping only."""
    Wire(broker.port).metadata([])
    before = resident_bytes()
    idle = [Wire(broker.port) for _ in range(500)]
    for wire in idle:
        assert wire.api_versions(0).api_keys
    assert resident_bytes() - before < 16 * 1024 * 1024
    for wire in idle:
        wire.close()
