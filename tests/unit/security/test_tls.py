"""TLS listeners: PEM keystores, mTLS, refusals that cost one connection, copies not sendfile."""

from __future__ import annotations

import pathlib
import ssl

import pytest

from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    DescribeClusterRequest,
    FindCoordinatorRequest,
)
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from tests.certs import BROKER_KEY_PASSWORD, CLIENT_DN, secure_broker_props
from tests.unit.security.conftest import (
    SecureWire,
    client_context,
    port,
    raw_connect,
    start_secure_broker,
)
from tests.unit.server.conftest import batch


def mtls(pki):
    return client_context(pki, pki.client_cert, pki.client_key)


@pytest.fixture
def bystander(secure_broker, pki):
    """A client on the SSL listener that must not notice the others' failures."""
    wire = SecureWire(port(secure_broker, "SSL"), mtls(pki))
    assert wire.metadata([], 5, False).brokers
    yield wire
    assert wire.metadata([], 5, False).brokers, "the bystander lost its connection"
    wire.close()


@pytest.mark.spec("SEC-4", "SEC-5")
def test_a_client_certificate_is_required_and_names_the_principal(secure_broker, pki):
    with SecureWire(port(secure_broker, "SSL"), mtls(pki)) as wire:
        assert wire.metadata([], 5, False).brokers
        names = secure_broker.call(
            lambda: {c.principal for c in secure_broker.broker.socket_server.connections}
        )
        assert f"User:{CLIENT_DN}" in names
    for cert, key in ((None, None), (pki.other_ca_client_cert, pki.other_ca_client_key)):
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            wire = SecureWire(port(secure_broker, "SSL"), client_context(pki, cert, key))
            wire.metadata([], 5, False)  # TLS 1.3 reports the refusal on the first read


@pytest.mark.spec("SEC-4")
def test_plaintext_bytes_on_a_tls_port_close_that_connection_only(secure_broker, bystander):
    wire = SecureWire(port(secure_broker, "SSL"))  # no TLS: a Kafka request in the clear
    wire.send_raw(frames.encode_request(ApiKey.API_VERSIONS, 0, 1, "c", ApiVersionsRequest()))
    assert wire.closed_by_broker()


@pytest.mark.spec("SEC-4")
def test_a_truncated_handshake_closes_that_connection_only(secure_broker, bystander, pki):
    hello = _client_hello(pki)
    for cut in (5, len(hello) // 2):
        sock = raw_connect(port(secure_broker, "SASL_SSL"))
        sock.sendall(hello[:cut])
        sock.close()  # gone mid-handshake
    assert (
        SecureWire(port(secure_broker, "SASL_SSL"), client_context(pki))
        .handshake("PLAIN")
        .mechanisms
    )  # the listener still shakes hands


def _client_hello(pki) -> bytes:
    """The first flight of a real TLS client, captured from a memory BIO."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context(pki).wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


@pytest.mark.spec("SEC-4")
def test_fetched_file_slices_are_copied_through_tls(secure_broker, pki):
    plain = SecureWire(port(secure_broker, "PLAINTEXT"))
    assert plain.create_topic("tls-slices") == 0
    for _ in range(4):
        assert plain.produce("tls-slices", 0, batch(100, value_size=1000)).error_code == 0
    expected = plain.read_all("tls-slices")
    with SecureWire(port(secure_broker, "SSL"), mtls(pki)) as wire:
        assert wire.read_all("tls-slices") == expected  # not os.sendfile into a TLS stream
        assert len(expected) == 400


@pytest.mark.spec("SEC-2")
def test_each_listener_answers_with_its_own_endpoints(secure_broker, pki):
    listeners = {
        "PLAINTEXT": lambda p: SecureWire(p),
        "SSL": lambda p: SecureWire(p, mtls(pki)),
        "SASL_SSL": lambda p: SecureWire(p, client_context(pki)),
    }
    for name, connect in listeners.items():
        with connect(port(secure_broker, name)) as wire:
            if name.startswith("SASL"):
                assert wire.plain("alice", "alice-secret").error_code == 0
            own = port(secure_broker, name)
            assert [(b.host, b.port) for b in wire.metadata([], 5, False).brokers] == [
                ("127.0.0.1", own)
            ]
            cluster = wire.request(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
            assert [b.port for b in cluster.brokers] == [own]
            find = FindCoordinatorRequest(key="g", key_type=0)
            answer = wire.request(ApiKey.FIND_COORDINATOR, 2, find)
            while answer.error_code:  # the offsets topic is being created
                answer = wire.request(ApiKey.FIND_COORDINATOR, 2, find)
            assert answer.port == own


@pytest.mark.spec("SEC-3")
def test_an_inline_pem_keystore_works(pki, tmp_path):
    key_and_chain = pathlib.Path(pki.broker_keystore).read_text()
    key_end = key_and_chain.index("-----END ENCRYPTED PRIVATE KEY-----") + 35
    inline = {
        "ssl.keystore.location": "",
        "ssl.keystore.key": key_and_chain[:key_end],
        "ssl.keystore.certificate.chain": key_and_chain[key_end:],
        "ssl.truststore.location": "",
        "ssl.truststore.certificates": pathlib.Path(pki.ca).read_text(),
    }
    broker = start_secure_broker(pki, tmp_path / "data", **inline)
    try:
        with SecureWire(port(broker, "SSL"), mtls(pki)) as wire:
            assert wire.metadata([], 5, False).brokers
    finally:
        broker.stop()


@pytest.mark.spec("SEC-3")
def test_a_keystore_that_does_not_load_refuses_the_start(pki, tmp_path):
    props = {**secure_broker_props(pki), "log.dirs": str(tmp_path), "ssl.key.password": "wrong-pw"}
    broker = BrokerThread(KafkaConfig.from_props({k: str(v) for k, v in props.items()}))
    with pytest.raises(ConfigError) as refused:
        broker.start()
    assert "ssl.keystore" in str(refused.value)
    assert "wrong-pw" not in str(refused.value) and BROKER_KEY_PASSWORD not in str(refused.value)
    broker.stop()


@pytest.mark.spec("SEC-4", "SEC-5")
def test_a_requested_certificate_may_be_missing(pki, tmp_path):
    broker = start_secure_broker(
        pki, tmp_path / "data", **{"listener.name.ssl.ssl.client.auth": "requested"}
    )
    try:
        for context, principal in (
            (client_context(pki), "User:ANONYMOUS"),
            (mtls(pki), f"User:{CLIENT_DN}"),
        ):
            with SecureWire(port(broker, "SSL"), context) as wire:
                assert wire.metadata([], 5, False).brokers
                connections = broker.broker.socket_server.connections
                assert principal in broker.call(lambda c=connections: {p.principal for p in c})
    finally:
        broker.stop()
