"""A broker connection against a scriptable fake broker: negotiation, order, timeouts."""

from __future__ import annotations

import socket

import pytest

from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.connection import (
    CLIENT_VERSIONS,
    BrokerConnection,
    NetworkError,
    RequestTimedOutError,
    UnsupportedVersionError,
    choose_version,
    parse_bootstrap_servers,
)
from kafka_ref.client.network_client import NetworkClient
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol import ApiKey, encode_response
from kafka_ref.protocol.messages import MetadataRequest
from tests.unit.client.conftest import api_versions, metadata_response

pytestmark = pytest.mark.timeout(30)


def connect(broker, **kwargs) -> BrokerConnection:
    return BrokerConnection("127.0.0.1", broker.port, **kwargs).connect()


def metadata_answer(header, body):
    return [
        encode_response(
            ApiKey.METADATA,
            header.request_api_version,
            header.correlation_id,
            metadata_response({"t": [1]}),
        )
    ]


@pytest.mark.spec("CLIENT-1")
def test_choose_version_is_the_highest_in_both_ranges():
    assert choose_version((0, 5), (0, 3)) == 3
    assert choose_version((4, 10), (0, 7)) == 7
    assert choose_version((3, 7), (0, 2)) is None


@pytest.mark.spec("CLIENT-1")
def test_apiversions_comes_first_and_each_api_uses_the_highest_common_version(fake_broker):
    broker = fake_broker(metadata_answer)
    broker.advertise = {
        ApiKey.API_VERSIONS: (0, 3),
        ApiKey.METADATA: (0, 2),  # older than ours
        ApiKey.FETCH: (4, 12),  # newer than ours
        ApiKey.PRODUCE: (0, 2),  # no overlap: we need v3+ for record batch v2
    }
    conn = connect(broker)
    assert broker.requests[0][0].request_api_key == ApiKey.API_VERSIONS
    assert conn.api_versions[ApiKey.METADATA] == 2
    assert conn.api_versions[ApiKey.FETCH] == CLIENT_VERSIONS[ApiKey.FETCH][1]
    with pytest.raises(UnsupportedVersionError):
        conn.version_for(ApiKey.PRODUCE)
    with pytest.raises(UnsupportedVersionError):
        conn.version_for(ApiKey.DELETE_RECORDS)  # not advertised at all
    conn.request(ApiKey.METADATA, MetadataRequest(topics=None))
    assert broker.requests[-1][0].request_api_version == 2
    conn.close()


@pytest.mark.spec("CLIENT-1")
def test_an_older_apiversions_is_retried_at_the_version_the_broker_lists(fake_broker):
    broker = fake_broker()
    original = broker.answer

    def answer(header, body):
        if header.request_api_key == ApiKey.API_VERSIONS and header.request_api_version > 2:
            ranges = {ApiKey.API_VERSIONS: (0, 2)}
            error = api_versions(ranges, error_code=ErrorCode.UNSUPPORTED_VERSION)
            return [encode_response(ApiKey.API_VERSIONS, 0, header.correlation_id, error)]
        return original(header, body)

    broker.answer = answer
    conn = connect(broker)
    versions = [h.request_api_version for h, _ in broker.requests]
    assert versions == [CLIENT_VERSIONS[ApiKey.API_VERSIONS][1], 2]  # ours first, then theirs
    assert conn.api_versions[ApiKey.METADATA] == CLIENT_VERSIONS[ApiKey.METADATA][1]
    conn.close()


@pytest.mark.spec("CLIENT-11")
def test_pipelined_requests_complete_in_order(fake_broker):
    broker = fake_broker(metadata_answer)
    conn = connect(broker)
    sent = [conn.send(ApiKey.METADATA, MetadataRequest(topics=None)) for _ in range(5)]
    assert len(conn.in_flight) == 5
    completed = []
    while len(completed) < 5:
        completed.extend(conn.receive(1.0))
    assert completed == sent
    assert [r.correlation_id for r in sent] == sorted(r.correlation_id for r in sent)
    assert all(r.response.topics[0].name == "t" for r in sent)
    conn.close()


@pytest.mark.spec("CLIENT-11")
def test_a_correlation_id_mismatch_closes_the_connection(fake_broker):
    def wrong_id(header, body):
        return [
            encode_response(
                ApiKey.METADATA,
                header.request_api_version,
                header.correlation_id + 1000,
                metadata_response({}),
            )
        ]

    conn = connect(fake_broker(wrong_id))
    first = conn.send(ApiKey.METADATA, MetadataRequest(topics=None))
    second = conn.send(ApiKey.METADATA, MetadataRequest(topics=None))
    with pytest.raises(NetworkError, match="correlation id"):
        conn.wait(first, 5)
    assert not conn.connected
    assert isinstance(second.error, NetworkError)  # every request in flight fails


@pytest.mark.spec("CLIENT-12")
def test_an_unanswered_request_times_out_and_fails_everything_in_flight(fake_broker):
    conn = connect(fake_broker(lambda header, body: None), request_timeout_ms=300)
    first = conn.send(ApiKey.METADATA, MetadataRequest(topics=None))
    second = conn.send(ApiKey.METADATA, MetadataRequest(topics=None))
    with pytest.raises(RequestTimedOutError):
        conn.wait(first, 5)
    assert not conn.connected and isinstance(second.error, RequestTimedOutError)
    assert second.error.code == ErrorCode.REQUEST_TIMED_OUT and second.error.code.retriable


@pytest.mark.spec("CLIENT-12")
def test_the_network_client_expires_requests_in_poll(fake_broker):
    broker = fake_broker(lambda header, body: None)
    metadata = Metadata([("127.0.0.1", broker.port)])
    client = NetworkClient(metadata, client_id="t", request_timeout_ms=200)
    failed = []
    client.send(-1, ApiKey.METADATA, MetadataRequest(topics=None), callback=failed.append)
    for _ in range(20):
        if failed:
            break
        client.poll(100)
    assert failed and isinstance(failed[0].error, RequestTimedOutError)
    assert metadata.update_requested  # a lost connection asks for fresh metadata
    client.close()


@pytest.mark.spec("CLIENT-9")
def test_a_request_without_response_is_done_at_once_and_not_in_flight(fake_broker):
    conn = connect(fake_broker(lambda header, body: None))
    request = conn.send(ApiKey.METADATA, MetadataRequest(topics=None), expect_response=False)
    assert request.done and request.error is None and not conn.in_flight
    conn.close()


@pytest.mark.spec("CLIENT-12")
def test_connecting_to_nothing_is_a_network_error():
    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(NetworkError, match="cannot connect"):
        BrokerConnection("127.0.0.1", port, connect_timeout_ms=500).connect()


@pytest.mark.spec("CLIENT-19")
def test_bootstrap_servers_are_host_port_pairs():
    assert parse_bootstrap_servers("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap_servers(["[::1]:9092"]) == [("::1", 9092)]
    for bad in ("", "host", "host:", ":9092", "h:0", "h:99999", "h:x"):
        with pytest.raises(ValueError):
            parse_bootstrap_servers(bad)


@pytest.mark.spec("CLIENT-1")
def test_an_api_the_broker_lacks_fails_the_request_not_the_caller(fake_broker):
    broker = fake_broker()
    broker.advertise = {ApiKey.API_VERSIONS: (0, 3), ApiKey.PRODUCE: (0, 2)}
    client = NetworkClient(Metadata([("127.0.0.1", broker.port)]), client_id="t")
    failed = []
    request = client.send(-1, ApiKey.PRODUCE, None, callback=failed.append)
    assert request.done and failed == [request]
    assert request.error.code == ErrorCode.UNSUPPORTED_VERSION
    client.close()
