"""Throwaway TLS certificates for the security tests, made at test time with `cryptography`.

`make_pki(directory)` writes a CA, a broker certificate for 127.0.0.1 and localhost (its
private key encrypted with `BROKER_KEY_PASSWORD`, as `ssl.key.password` decrypts it), and a
client certificate for `CLIENT_DN`, each as PEM files: the broker's key and chain in one
file, as Kafka's PEM keystore (`ssl.keystore.location`, KIP-651) holds them.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

BROKER_KEY_PASSWORD = "broker-key-secret"
CLIENT_DN = "CN=alice,OU=eng,O=Example\\, Inc.,C=US"  # as Kafka's principal builder writes it


@dataclass(frozen=True)
class Pki:
    ca: str  # CA certificate (the truststore of both sides)
    broker_keystore: str  # encrypted key + certificate chain
    client_cert: str
    client_key: str
    other_ca_client_cert: str  # a client certificate from a CA the broker does not trust
    other_ca_client_key: str


def _name(cn: str, ou: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COUNTRY_NAME, "US")]
    if ou:
        attributes += [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example, Inc."),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou),
        ]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _certificate(subject, key, issuer, issuer_key, *, ca=False, sans=()) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key, password: str | None = None) -> bytes:
    encryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return path


def make_pki(directory: str) -> Pki:
    def new_key():
        return ec.generate_private_key(ec.SECP256R1())

    ca_key, other_key = new_key(), new_key()
    ca = _certificate(
        _name("kafka-ref test CA"), ca_key, _name("kafka-ref test CA"), ca_key, ca=True
    )
    other = _certificate(
        _name("untrusted CA"), other_key, _name("untrusted CA"), other_key, ca=True
    )
    broker_key, client_key, stranger_key = new_key(), new_key(), new_key()
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    broker = _certificate(_name("broker"), broker_key, ca.subject, ca_key, sans=sans)
    client = _certificate(_name("alice", "eng"), client_key, ca.subject, ca_key)
    stranger = _certificate(_name("mallory", "eng"), stranger_key, other.subject, other_key)
    path = lambda name: os.path.join(directory, name)  # noqa: E731
    return Pki(
        ca=_write(path("ca.pem"), _pem(ca)),
        broker_keystore=_write(
            path("broker.pem"), _key_pem(broker_key, BROKER_KEY_PASSWORD) + _pem(broker) + _pem(ca)
        ),
        client_cert=_write(path("client.pem"), _pem(client)),
        client_key=_write(path("client.key"), _key_pem(client_key)),
        other_ca_client_cert=_write(path("stranger.pem"), _pem(stranger)),
        other_ca_client_key=_write(path("stranger.key"), _key_pem(stranger_key)),
    )


PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
SCRAM_USERS = {"alice": "alice-scram-secret"}


def secure_broker_props(pki: Pki, ports: tuple[int, int, int, int] = (0, 0, 0, 0)) -> dict:
    """A broker with all four listeners: PLAINTEXT, SSL (mTLS required), SASL_PLAINTEXT
    (PLAIN and SCRAM) and SASL_SSL (PLAIN and SCRAM), by Kafka's property names."""
    plain, ssl_port, sasl_plain, sasl_ssl = ports
    return {
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{sasl_plain},SASL_SSL://127.0.0.1:{sasl_ssl}"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki.broker_keystore,
        "ssl.key.password": BROKER_KEY_PASSWORD,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki.ca,
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "group.initial.rebalance.delay.ms": 0,
    }
