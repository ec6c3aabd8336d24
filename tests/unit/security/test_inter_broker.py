"""A broker connecting to another broker's inter-broker listener (SEC-21): TLS with its own
keystore, SASL with `sasl.mechanism.inter.broker.protocol` and the listener's JAAS
credentials, all inside `FetcherConnection.open`, against a real broker's listeners."""

from __future__ import annotations

import asyncio

import pytest

from kafka_ref.cli import main
from kafka_ref.protocol.messages import ApiKey, ApiVersionsRequest
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.security.listeners import ListenerError
from kafka_ref.server.follower_connection import FetcherConnection, InterBrokerAuthenticationError
from kafka_ref.server.kafka_config import KafkaConfig
from tests.certs import BROKER_KEY_PASSWORD, PLAIN_JAAS, SCRAM_USERS
from tests.unit.security.conftest import port

pytestmark = pytest.mark.timeout(60)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="{password}";'
)


def inter_broker_config(pki, protocol: str, mechanism: str = "", jaas: str = "") -> KafkaConfig:
    """A broker whose inter-broker listener INTERNAL speaks `protocol`."""
    props = {
        "listeners": "INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": f"INTERNAL:{protocol}",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.location": pki.broker_keystore,
        "ssl.key.password": BROKER_KEY_PASSWORD,
        "ssl.truststore.location": pki.ca,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    }
    if mechanism:
        props["sasl.mechanism.inter.broker.protocol"] = mechanism
        props[f"listener.name.internal.{mechanism.lower()}.sasl.jaas.config"] = jaas
    return KafkaConfig.from_props(props)


def principal_after_connecting(broker, listener: str, security: InterBrokerSecurity) -> str:
    """Connect as a broker would, send ApiVersions, and say who the other broker saw."""

    def principals() -> set[str]:
        return broker.call(lambda: {c.principal for c in broker.broker.socket_server.connections})

    before = principals()

    async def connect() -> set[str]:
        connection = await FetcherConnection.open(
            "127.0.0.1", port(broker, listener), security, "broker-9"
        )
        try:
            body = ApiVersionsRequest(client_software_name="t", client_software_version="1")
            answer = await connection.request(ApiKey.API_VERSIONS, 3, body, "broker-9")
            assert answer.error_code == 0
            return principals() - before
        finally:
            connection.close()

    (principal,) = asyncio.run(connect())
    return principal


@pytest.mark.spec("SEC-21")
@pytest.mark.parametrize(
    "protocol,mechanism,jaas,principal",
    [
        ("SSL", "", "", "User:CN=broker,C=US"),  # mTLS: the broker certificate's DN
        ("SASL_PLAINTEXT", "PLAIN", PLAIN_JAAS, "User:admin"),
        (
            "SASL_SSL",
            "SCRAM-SHA-512",
            SCRAM_JAAS.format(password=SCRAM_USERS["alice"]),
            "User:alice",
        ),
    ],
)
def test_inter_broker_connections_authenticate_with_the_listeners_security(
    secure_broker, pki, protocol, mechanism, jaas, principal
):
    security = InterBrokerSecurity.from_config(inter_broker_config(pki, protocol, mechanism, jaas))
    assert principal_after_connecting(secure_broker, protocol, security) == principal


@pytest.mark.spec("SEC-21")
def test_a_refused_inter_broker_login_is_a_connection_error_naming_no_password(secure_broker, pki):
    jaas = SCRAM_JAAS.format(password="wrong-password-42")
    security = InterBrokerSecurity.from_config(
        inter_broker_config(pki, "SASL_SSL", "SCRAM-SHA-256", jaas)
    )
    assert "wrong-password-42" not in repr(security)

    async def connect() -> None:
        await FetcherConnection.open("127.0.0.1", port(secure_broker, "SASL_SSL"), security, "b")

    with pytest.raises(InterBrokerAuthenticationError) as refused:
        asyncio.run(connect())
    assert isinstance(refused.value, ConnectionError)  # what every caller retries on
    assert "'alice' with SCRAM-SHA-256" in str(refused.value)
    assert "wrong-password-42" not in str(refused.value)


@pytest.mark.spec("SEC-21")
@pytest.mark.parametrize(
    "mechanism,jaas,fragment",
    [
        ("GSSAPI", "", "must be one of the sasl.enabled.mechanisms"),
        ("SCRAM-SHA-256", "", "needs username="),
        (
            "PLAIN",
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="x";',
            "needs username=",
        ),
    ],
)
def test_inter_broker_sasl_settings_that_cannot_work_refuse_the_start(
    pki, mechanism, jaas, fragment
):
    config = inter_broker_config(pki, "SASL_SSL", mechanism, jaas)
    with pytest.raises(ListenerError, match=fragment):
        InterBrokerSecurity.from_config(config)


@pytest.mark.spec("SEC-21")
def test_a_broker_whose_inter_broker_login_cannot_work_does_not_start(tmp_path, capsys):
    args = [
        "broker",
        "--data-dir",
        str(tmp_path),
        "--config",
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "--config",
        "security.inter.broker.protocol=SASL_PLAINTEXT",
        "--config",
        "sasl.enabled.mechanisms=SCRAM-SHA-256",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "sasl.mechanism.inter.broker.protocol=GSSAPI must be one of" in err
