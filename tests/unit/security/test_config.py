"""Listeners by Kafka's names, PLAIN's JAAS users and the principal of a certificate."""

from __future__ import annotations

import pytest

from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.cluster.zk_data import decode_broker, encode_broker
from kafka_ref.security.listeners import EndPoint
from kafka_ref.security.plain import AuthenticationFailed, PlainSaslServer, plain_users
from kafka_ref.security.principal import ssl_principal
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from tests.certs import PLAIN_JAAS


@pytest.mark.spec("SEC-1")
def test_listeners_take_their_protocol_from_the_map():
    config = KafkaConfig.from_props(
        {
            "listeners": "PLAINTEXT://:9092,SSL://127.0.0.1:9093,INTERNAL://10.0.0.1:9094,"
            "CONTROLLER://:9095",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SASL_SSL",
            "controller.listener.names": "CONTROLLER",
            "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.internal.scram-sha-512.sasl.jaas.config": "x required;",
            "sasl.enabled.mechanisms": "PLAIN",
        }
    )
    assert [(e.listener, e.protocol, e.host, e.port) for e in config.endpoints()] == [
        ("PLAINTEXT", "PLAINTEXT", "", 9092),
        ("SSL", "SSL", "127.0.0.1", 9093),
        ("INTERNAL", "SASL_SSL", "10.0.0.1", 9094),
    ]
    assert config.listener_get("INTERNAL", "sasl.enabled.mechanisms") == ("SCRAM-SHA-512",)
    assert config.listener_get("SSL", "sasl.enabled.mechanisms") == ("PLAIN",)  # the plain key
    assert config.listener_get("internal", "scram-sha-512.sasl.jaas.config") == "x required;"
    assert config.inter_broker_listener == "PLAINTEXT"


@pytest.mark.spec("SEC-1")
@pytest.mark.parametrize(
    "props,fragment",
    [
        ({"listeners": "FOO://:1"}, "no security protocol for listener FOO"),
        ({"listeners": "SSL://:1,SSL://:2"}, "appears twice"),
        ({"listener.security.protocol.map": "A:TLS"}, "NAME:PROTOCOL"),
        ({"listener.name.ssl.ssl.keystore.lokation": "x"}, "unknown broker config"),
        ({"listener.name.ssl.num.partitions": "3"}, "unknown broker config"),
        ({"ssl.keystore.type": "JKS"}, "PEM"),
        ({"advertised.listeners": "SSL://h:1"}, "not in listeners"),
        (
            {"listeners": "SSL://:1,PLAINTEXT://:2", "inter.broker.listener.name": "INTERNAL"},
            "is not among the listeners",
        ),
        ({"listeners": "SSL://:1"}, "PLAINTEXT is not among the listeners"),
    ],
)
def test_bad_listener_configs_are_one_line(props, fragment):
    with pytest.raises(ConfigError, match=fragment):
        KafkaConfig.from_props(props)


@pytest.mark.spec("SEC-2")
def test_each_listener_is_advertised_by_its_name():
    config = KafkaConfig.from_props(
        {
            "listeners": "PLAINTEXT://0.0.0.0:9092,SASL_SSL://0.0.0.0:9094",
            "advertised.listeners": "SASL_SSL://kafka1.example:19094",
        }
    )
    assert [e.uri() for e in config.advertised_endpoints()] == [
        "PLAINTEXT://127.0.0.1:9092",  # not advertised: its own address, wildcard -> loopback
        "SASL_SSL://kafka1.example:19094",
    ]


@pytest.mark.spec("SEC-2")
def test_the_broker_znode_lists_every_endpoint_and_protocol():
    endpoints = (
        EndPoint("PLAINTEXT", "PLAINTEXT", "h", 9092),
        EndPoint("EXTERNAL", "SASL_SSL", "ext.example", 9094),
    )
    raw = encode_broker(BrokerEndpoint(3, "h", 9092, "r1", endpoints))
    assert b'"endpoints":["PLAINTEXT://h:9092","EXTERNAL://ext.example:9094"]' in raw
    protocols = b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","EXTERNAL":"SASL_SSL"}'
    assert protocols in raw
    broker = decode_broker(3, raw)
    assert broker == BrokerEndpoint(3, "h", 9092, "r1", endpoints)
    assert broker.address("EXTERNAL") == ("ext.example", 9094)
    assert broker.address("SSL") is None  # no such listener: left out of that listener's view
    old = decode_broker(1, b'{"version":4,"host":"o","port":1,"endpoints":["PLAINTEXT://o:1"]}')
    assert old.address("PLAINTEXT") == ("o", 1)


@pytest.mark.spec("SEC-8")
def test_plain_checks_the_jaas_users():
    users = plain_users(PLAIN_JAAS)
    assert users == {"admin": "admin-secret", "alice": "alice-secret"}
    ok = PlainSaslServer(users)
    assert ok.evaluate(b"\x00alice\x00alice-secret") == b"" and ok.authorization_id == "alice"
    messages = set()
    for token in (b"\x00alice\x00wrong", b"\x00mallory\x00alice-secret"):
        with pytest.raises(AuthenticationFailed) as failed:
            PlainSaslServer(users).evaluate(token)
        messages.add(str(failed.value))
    assert messages == {"Authentication failed: Invalid username or password"}
    with pytest.raises(AuthenticationFailed, match="authorization id"):
        PlainSaslServer(users).evaluate(b"admin\x00alice\x00alice-secret")
    with pytest.raises(AuthenticationFailed, match="3 tokens"):
        PlainSaslServer(users).evaluate(b"alice")
    escaped = plain_users('PlainLoginModule required user_q="a\\"b";')
    assert escaped == {"q": 'a"b'}


@pytest.mark.spec("SEC-5")
def test_a_certificate_principal_is_its_dn_as_java_writes_it():
    subject = (
        (("countryName", "US"),),
        (("organizationName", "Example, Inc."),),
        (("organizationalUnitName", "eng"), ("userId", "7")),
        (("commonName", "#alice "),),
    )
    assert ssl_principal({"subject": subject}) == (
        "User:CN=\\#alice\\ ,OU=eng+UID=7,O=Example\\, Inc.,C=US"
    )
    assert ssl_principal({}) == ssl_principal(None) == "User:ANONYMOUS"


@pytest.mark.spec("SEC-2")
def test_a_tls_only_broker_keeps_a_loopback_plaintext_listener_for_brokers():
    config = KafkaConfig.from_props(
        {
            "listeners": "SASL_SSL://:9095,INTERNAL://127.0.0.1:9099",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,INTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert config.inter_broker_listener == "INTERNAL"
    assert [e.uri() for e in config.advertised_endpoints()] == [
        "SASL_SSL://127.0.0.1:9095",
        "INTERNAL://127.0.0.1:9099",
    ]
