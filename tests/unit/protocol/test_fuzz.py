"""Hostile bytes: whatever arrives, the only exception out of a decoder is ProtocolDecodeError.

Three attacks: random bytes; valid frames of every API and version, mutated (bit flips,
truncations, inserted and deleted bytes, lengths overwritten with -1, 2^31-1 or 2^15-1);
and forged maximal lengths at known places, where we also check that the decoder fails
without allocating anything like the size it was told (PROTO-2).
"""

import contextlib
import random
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.protocol import frames
from kafka_ref.protocol.errors import ProtocolDecodeError
from kafka_ref.protocol.messages import APIS, ApiKey, ProduceRequest

PAIRS = [(key, version) for key, api in sorted(APIS.items()) for version in api.versions]
FORGED = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x7f\xff", b"\xff\xff"]


def request_payload(schema_values, key, version, value_source):
    body = value_source(APIS[key].request, version)
    return frames.encode_request(key, version, 1234, "fuzz", body)[4:]


def response_payload(schema_values, key, version, value_source):
    body = value_source(APIS[key].response, version)
    return frames.encode_response(key, version, 1234, body)[4:]


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    kind = rng.randrange(6)
    pos = rng.randrange(len(buf) + 1)
    if kind == 0 and buf:
        buf[pos % len(buf)] ^= 1 << rng.randrange(8)  # flip a bit
    elif kind == 1:
        del buf[pos:]  # truncate
    elif kind == 2:
        buf[pos:pos] = rng.randbytes(rng.randint(1, 4))  # insert garbage
    elif kind == 3:
        del buf[pos : pos + rng.randint(1, 4)]  # lose a few bytes
    elif kind == 4:
        forged = rng.choice(FORGED)
        buf[pos : pos + len(forged)] = forged  # forge a length where one might be
    else:
        buf[pos % max(len(buf), 1) : pos + 1] = bytes([rng.choice([0, 0x7F, 0x80, 0xFF])])
    return bytes(buf)


def decode_everything(payload: bytes, key: int, version: int) -> None:
    """Decode as a request (on a listener that serves the API, PROTO-21) and as a response:
    either it parses or it is refused, typed."""
    listener = APIS[key].listeners[0]
    for decode in (
        lambda p: frames.decode_request(p, listener),
        lambda p: frames.decode_response(p, key, version),
    ):
        with contextlib.suppress(ProtocolDecodeError):
            decode(payload)


@pytest.mark.spec("PROTO-2")
@settings(max_examples=max(50, settings().max_examples * 5))
@given(payload=st.binary(max_size=200), key_version=st.sampled_from(PAIRS))
def test_random_bytes_only_ever_raise_the_typed_error(payload, key_version):
    key, version = key_version
    decode_everything(payload, key, version)
    # Also with a valid api key and version in front, so the body decoders get the garbage.
    decode_everything(struct.pack(">hhi", key, version, 1) + b"\xff\xff" + payload, key, version)


@pytest.mark.spec("PROTO-2")
@settings(max_examples=max(30, settings().max_examples * 3))
@given(data=st.data(), key_version=st.sampled_from(PAIRS), seed=st.integers(0, 2**32))
def test_mutated_valid_frames_only_ever_raise_the_typed_error(
    schema_values, data, key_version, seed
):
    key, version = key_version
    source = lambda message, v: data.draw(schema_values.strategy(message, v))  # noqa: E731
    rng = random.Random(seed)
    for payload in (
        request_payload(schema_values, key, version, source),
        response_payload(schema_values, key, version, source),
    ):
        for _ in range(5):
            payload = mutate(payload, rng)
            decode_everything(payload, key, version)


@pytest.mark.spec("PROTO-2")
def test_twenty_thousand_seeded_mutations(schema_values):
    rng = random.Random(20240611)
    source = lambda message, v: schema_values.random(message, v, rng)  # noqa: E731
    corpus = [
        (key, version, build is response_payload, build(schema_values, key, version, source))
        for key, version in PAIRS
        for build in (request_payload, response_payload)
        for _ in range(3)
    ]
    outcomes = {"decoded": 0, "refused": 0}
    for _ in range(20_000):
        key, version, is_response, payload = rng.choice(corpus)
        mutated = mutate(payload, rng)
        try:
            if is_response:
                frames.decode_response(mutated, key, version)
            else:
                frames.decode_request(mutated, APIS[key].listeners[0])
            outcomes["decoded"] += 1
        except ProtocolDecodeError:
            outcomes["refused"] += 1
    # Both outcomes occur: the mutations are neither all harmless nor all fatal.
    assert outcomes["decoded"] > 1000 and outcomes["refused"] > 5000, outcomes


def _forged_produce() -> bytes:
    value = ProduceRequest(
        acks=1,
        timeout_ms=1,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"r")],
            )
        ],
    )
    payload = bytearray(frames.encode_request(ApiKey.PRODUCE, 7, 1, "c", value)[4:])
    payload[-5:-1] = b"\x7f\xff\xff\xff"  # the records length: 2 GiB announced, 1 byte there
    return bytes(payload)


FORGED_FRAMES = {
    "records length 2^31-1": _forged_produce(),
    "fetch topics count 2^31-1": bytes.fromhex("0001000a00000001ffffffffffff0000000000000000")
    + bytes.fromhex("000000000000000000ffffffff7fffffff"),
    "metadata topics count 2^31-1": bytes.fromhex("000300050000000100007fffffff00"),
    "client_id length 2^15-1": bytes.fromhex("00030001000000017fff6162"),
    "compact string length 2^32-2": bytes.fromhex("0012000300000001000000ffffffff0f"),
    "tag buffer count 2^32-1": bytes.fromhex("00120003000000010000ffffffff0f"),
}


@pytest.mark.spec("PROTO-2")
@pytest.mark.parametrize("payload", FORGED_FRAMES.values(), ids=FORGED_FRAMES.keys())
def test_forged_lengths_fail_without_allocating(payload):
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolDecodeError):
            frames.decode_request(payload)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, f"decoding a forged length allocated {peak} bytes"
