"""Frames, request and response headers, and how unknown or unsupported requests are refused."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol import frames
from kafka_ref.protocol.errors import (
    ProtocolDecodeError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kafka_ref.protocol.messages import (
    APIS,
    AlterUserScramCredentialsRequest,
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
)


@pytest.mark.spec("PROTO-12")
def test_request_header_v1_and_v2_bytes():
    v1 = frames.encode_request(ApiKey.API_VERSIONS, 2, 7, "me", ApiVersionsRequest())
    assert v1.hex() == "0000000c" + "0012" + "0002" + "00000007" + "0002" + "6d65"
    v2 = frames.encode_request(ApiKey.API_VERSIONS, 3, 7, None, ApiVersionsRequest())
    # header v2: client_id keeps its int16 length (null = ffff), then an empty tag buffer;
    # the body is two empty compact strings and its own empty tag buffer.
    assert v2.hex() == "0000000e" + "0012" + "0003" + "00000007" + "ffff" + "00" + "010100"
    header, _ = frames.decode_request(v2[4:])
    assert header.client_id is None and header.correlation_id == 7


@pytest.mark.spec("PROTO-12", "PROTO-15")
def test_header_versions_follow_the_flexible_versions_of_each_api():
    for key, api in APIS.items():
        for version in api.versions:
            flexible = api.request.is_flexible(version)
            assert frames.request_header_version(key, version) == (2 if flexible else 1)
            expected = 1 if api.response.is_flexible(version) and key != ApiKey.API_VERSIONS else 0
            assert frames.response_header_version(key, version) == expected
    assert frames.request_header_version(9999, 0) == 1  # unknown: read the common v1 prefix


@pytest.mark.spec("PROTO-3")
def test_api_versions_v3_response_uses_header_v0():
    body = frames.api_versions_body()
    frame = frames.encode_response(ApiKey.API_VERSIONS, 3, 5, body)
    # size, correlation id, then straight into the body: error_code 0, no header tag buffer.
    assert frame[4:8] == b"\x00\x00\x00\x05" and frame[8:10] == b"\x00\x00"
    assert ApiVersionsResponse.decode(3, frame[8:]) == body
    header, decoded = frames.decode_response(frame[4:], ApiKey.API_VERSIONS, 3)
    assert header.correlation_id == 5 and decoded == body


@pytest.mark.spec("PROTO-15")
def test_flexible_response_header_has_a_tag_buffer():
    # No declared response is flexible yet, so check the header schema at both versions.
    header = frames.ResponseHeader(correlation_id=3)
    assert frames.ResponseHeader.encode(0, header).hex() == "00000003"
    assert frames.ResponseHeader.encode(1, header).hex() == "0000000300"


@pytest.mark.spec("PROTO-13")
def test_unknown_api_key_is_refused_with_its_header():
    payload = bytes.fromhex("271000000000002a000178")  # key 10000, corr 42, "x"
    with pytest.raises(UnknownApiKeyError) as info:
        frames.decode_request(payload)
    assert info.value.header.correlation_id == 42 and info.value.code == ErrorCode.INVALID_REQUEST
    assert isinstance(info.value, ProtocolDecodeError)


@pytest.mark.spec("PROTO-13")
@pytest.mark.parametrize(
    "key,version,tags",
    [(ApiKey.FETCH, 3, ""), (ApiKey.FETCH, 19, "00"), (ApiKey.METADATA, -1, "")],
)
def test_unsupported_version_is_refused_with_its_header(key, version, tags):
    # Fetch v19 would be flexible: its header is v2, with a tag buffer (PROTO-12)
    payload = bytes.fromhex(f"{key:04x}{version & 0xFFFF:04x}00000009ffff{tags}")
    with pytest.raises(UnsupportedVersionError) as info:
        frames.decode_request(payload)
    assert info.value.header.correlation_id == 9
    assert info.value.code == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.spec("PROTO-14")
def test_unsupported_api_versions_gets_the_kip_511_answer():
    frame = frames.unsupported_api_versions_response(correlation_id=12)
    assert frame[4:8] == (12).to_bytes(4, "big")  # response header v0
    body = ApiVersionsResponse.decode(0, frame[8:])  # a v0 body: no throttle time, no tags
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert (ApiKey.API_VERSIONS, 0, 5) in [
        (k.api_key, k.min_version, k.max_version) for k in body.api_keys
    ]
    # Our own client, having asked with v3, falls back to reading the body as v0.
    header, fallback = frames.decode_response(frame[4:], ApiKey.API_VERSIONS, 3)
    assert header.correlation_id == 12 and fallback == body


@pytest.mark.spec("PROTO-10")
def test_trailing_bytes_after_a_request_are_refused():
    frame = frames.encode_request(ApiKey.METADATA, 1, 1, "c", MetadataRequest(topics=None))
    with pytest.raises(ProtocolDecodeError, match="1 bytes left over after Metadata request v1"):
        frames.decode_request(frame[4:] + b"\x00")


@pytest.mark.spec("PROTO-10")
def test_librdkafkas_doubled_tags_after_alter_user_scram_credentials_are_accepted():
    body = AlterUserScramCredentialsRequest(deletions=[], upsertions=[])
    payload = frames.encode_request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 1, "c", body)[4:]
    assert frames.decode_request(payload + b"\x00")[1] == body  # librdkafka's request
    for trailer in (b"\x00\x00", b"\x01"):  # anything else is still refused
        with pytest.raises(ProtocolDecodeError, match="left over"):
            frames.decode_request(payload + trailer)


@pytest.mark.spec("PROTO-2")
def test_response_decode_errors_are_corrupt_message():
    frame = frames.encode_response(ApiKey.METADATA, 1, 1, APIS[ApiKey.METADATA].response())
    with pytest.raises(ProtocolDecodeError) as info:
        frames.decode_response(frame[4:-1], ApiKey.METADATA, 1)
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    assert frames.peek_correlation_id(frame[4:]) == 1
    with pytest.raises(ProtocolDecodeError):
        frames.peek_correlation_id(b"\x00")


@pytest.mark.spec("PROTO-1")
def test_frame_sizes_are_checked_before_anything_is_read():
    assert frames.read_frame_size(b"\x00\x00\x01\x00") == 256
    for prefix in (b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x06\x40\x00\x01", b"\x00"):
        with pytest.raises(ProtocolDecodeError):
            frames.read_frame_size(prefix)
    assert frames.read_frame_size(b"\x00\x00\x10\x00", max_size=4096) == 4096
    decoder = frames.FrameDecoder(max_size=100)
    with pytest.raises(ProtocolDecodeError, match="invalid frame size 2147483647"):
        decoder.feed(b"\x7f\xff\xff\xff")


@pytest.mark.spec("PROTO-1")
@given(
    payloads=st.lists(st.binary(max_size=40), max_size=6),
    cuts=st.lists(st.integers(0, 300), max_size=8),
)
def test_frame_decoder_reassembles_any_chunking(payloads, cuts):
    stream = b"".join(frames.encode_frame(p) for p in payloads)
    decoder, out, start = frames.FrameDecoder(), [], 0
    for cut in [*sorted(c for c in cuts if c <= len(stream)), len(stream)]:
        out += decoder.feed(stream[start:cut])
        start = cut
    assert out == payloads and decoder.buffered == 0


@pytest.mark.spec("PROTO-12")
def test_encode_request_refuses_what_it_cannot_describe():
    with pytest.raises(UnknownApiKeyError):
        frames.encode_request(9999, 0, 1, "c", None)
    with pytest.raises(UnsupportedVersionError):
        frames.encode_request(ApiKey.METADATA, 14, 1, "c", MetadataRequest())
    with pytest.raises(ProtocolDecodeError, match="at least 4 bytes"):
        frames.decode_request(b"\x00\x03")


PAIRS = [(key, version) for key, api in sorted(APIS.items()) for version in api.versions]


@pytest.mark.spec("PROTO-12", "PROTO-15", "PROTO-1")
@given(data=st.data(), key_version=st.sampled_from(PAIRS), correlation_id=st.integers(0, 2**31 - 1))
def test_every_request_and_response_frame_round_trips(
    schema_values, data, key_version, correlation_id
):
    key, version = key_version
    request = data.draw(schema_values.strategy(APIS[key].request, version))
    frame = frames.encode_request(key, version, correlation_id, "client-1", request)
    assert frames.read_frame_size(frame[:4]) == len(frame) - 4
    header, body = frames.decode_request(frame[4:], APIS[key].listeners[0])  # PROTO-21
    assert (header.request_api_key, header.request_api_version) == (key, version)
    assert (header.correlation_id, header.client_id, body) == (correlation_id, "client-1", request)
    response = data.draw(schema_values.strategy(APIS[key].response, version))
    frame = frames.encode_response(key, version, correlation_id, response)
    assert frames.peek_correlation_id(frame[4:]) == correlation_id
    header, body = frames.decode_response(frame[4:], key, version)
    assert (header.correlation_id, body) == (correlation_id, response)
