"""A client's security settings, by Kafka's client property names.

A client reaches a listener with the listener's security protocol (SEC-1): it must wrap its
connections in TLS for SSL and SASL_SSL, and log in with SASL for SASL_PLAINTEXT and
SASL_SSL. Kafka's clients (and its tools' `--command-config` files) say how with these
properties, which `ClientSecurity.from_properties` reads (SEC-24, SEC-25):

    security.protocol=SASL_SSL                  PLAINTEXT (default), SSL, SASL_PLAINTEXT
    sasl.mechanism=SCRAM-SHA-512                PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="alice" password="alice-secret";
    ssl.truststore.location=/etc/kafka/ca.pem   the CAs that sign the brokers' certificates
    ssl.keystore.location=/etc/kafka/client.pem key + certificate, for mTLS (optional)
    ssl.key.password=...                        if that key is encrypted
    ssl.endpoint.identification.algorithm=https the broker's certificate must name its host
                                                (Kafka's default; empty turns it off)

librdkafka's names are read too, so one properties file serves kafka-ref's tools and
confluent-kafka (`kafka-ref bench --command-config`): `sasl.username` and `sasl.password`
for the JAAS config, `ssl.ca.location` for the truststore, `ssl.certificate.location` with
`ssl.key.location` for the keystore. The stores are PEM files (KIP-651), as on the broker
(security/ssl_config.py); `ssl.truststore.type` and `ssl.keystore.type` may only say PEM.
GSSAPI and OAUTHBEARER are not implemented: a client asking for them is told so before it
connects.

The same object describes how a broker reaches another broker (`InterBrokerSecurity`, a
subclass built from the broker's config, SEC-21): a broker is a client there.

Rules: SEC-21, SEC-24, SEC-25.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.security.plain import parse_jaas_config
from kafka_ref.security.sasl_client import PlainSaslClient, ScramSaslClient, sasl_client
from kafka_ref.security.ssl_config import SslConfigError, client_context

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Every key a client's security settings may use; other security.*, sasl.* and ssl.* keys
# are refused as likely typos.
SECURITY_KEYS = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "sasl.username",
        "sasl.password",
        "ssl.truststore.location",
        "ssl.truststore.certificates",
        "ssl.truststore.type",
        "ssl.keystore.location",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.type",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
    }
)


class ClientSecurityError(ValueError):
    """Security properties that cannot work (the message names the key, never a password)."""


class AuthenticationError(KafkaError):
    """The broker refused this client's credentials, or TLS could not be set up with it
    (Kafka's `AuthenticationException`). Not retriable: the same credentials fail again."""

    code = ErrorCode.SASL_AUTHENTICATION_FAILED


def is_security_key(key: str) -> bool:
    """Does `key` belong to a client's security settings (security.*, sasl.*, ssl.*)?"""
    return key.split(".", 1)[0] in ("security", "sasl", "ssl")


@dataclass(frozen=True)
class ClientSecurity:
    """How to reach a listener: TLS context and SASL credentials (none for PLAINTEXT)."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None  # SASL only
    username: str = ""
    password: str = field(default="", repr=False)  # never in a log line or a repr

    def sasl_client(self) -> PlainSaslClient | ScramSaslClient:
        assert self.mechanism is not None
        return sasl_client(self.mechanism, self.username, self.password)

    @classmethod
    def from_properties(cls, props: Mapping[str, Any] | None) -> ClientSecurity:
        """From Kafka's client properties (keys outside security.*, sasl.*, ssl.* are the
        caller's); ClientSecurityError names the first key that cannot work."""
        props = {k: str(v) for k, v in (props or {}).items() if is_security_key(k)}
        unknown = sorted(set(props) - SECURITY_KEYS)
        if unknown:
            known = ", ".join(sorted(SECURITY_KEYS))
            raise ClientSecurityError(f"unknown security property {unknown[0]} (known: {known})")
        protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in PROTOCOLS:
            raise ClientSecurityError(
                f"security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}"
            )
        for key in ("ssl.truststore.type", "ssl.keystore.type"):
            if props.get(key, "PEM").upper() != "PEM":
                raise ClientSecurityError(f"{key}={props[key]}: only PEM stores are read")
        algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
        if algorithm not in ("https", ""):
            raise ClientSecurityError(
                f"ssl.endpoint.identification.algorithm={algorithm}: https, or empty for none"
            )
        context = None
        if protocol in ("SSL", "SASL_SSL"):
            keys = {**_librdkafka_ssl(props), "ssl.endpoint.identification.algorithm": algorithm}
            get = keys.get
            try:
                context = client_context(get)
            except SslConfigError as err:
                raise ClientSecurityError(str(err)) from None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context)
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            raise ClientSecurityError(
                f"sasl.mechanism={mechanism} is not supported by kafka-ref's clients "
                f"(supported: {', '.join(MECHANISMS)})"
            )
        username, password = _credentials(props)
        return cls(protocol, context, mechanism, username, password)


def _librdkafka_ssl(props: dict[str, str]) -> dict[str, str]:
    """librdkafka's PEM locations as Kafka's keys: the CA file is the truststore, and the
    certificate and key files are read into the inline keystore keys."""
    props = dict(props)
    if "ssl.ca.location" in props:
        props.setdefault("ssl.truststore.location", props["ssl.ca.location"])
    files = {
        "ssl.keystore.certificate.chain": "ssl.certificate.location",
        "ssl.keystore.key": "ssl.key.location",
    }
    if not any(name in props for name in files.values()):
        return props
    for name in files.values():
        if name not in props:
            raise ClientSecurityError(
                f"ssl.certificate.location and ssl.key.location go together: {name} is missing"
            )
    for key, name in files.items():
        try:
            with open(props[name], encoding="ascii") as f:
                props[key] = f.read()
        except (OSError, UnicodeDecodeError) as err:
            reason = getattr(err, "strerror", None) or err
            raise ClientSecurityError(f"{name}: cannot read {props[name]}: {reason}") from None
    return props


def _credentials(props: dict[str, str]) -> tuple[str, str]:
    """username and password from sasl.jaas.config, else sasl.username/sasl.password."""
    if "sasl.jaas.config" in props:
        try:
            options = parse_jaas_config(props["sasl.jaas.config"])[1]
        except ValueError as err:
            raise ClientSecurityError(f"sasl.jaas.config: {err}") from None
        if options.get("username") and "password" in options:
            return options["username"], options["password"]
        raise ClientSecurityError('sasl.jaas.config needs username="..." password="..."')
    if props.get("sasl.username") and "sasl.password" in props:
        return props["sasl.username"], props["sasl.password"]
    raise ClientSecurityError(
        "SASL needs credentials: sasl.jaas.config with username and password "
        "(or sasl.username and sasl.password)"
    )


PLAINTEXT = ClientSecurity()


def resolve_security(security: Mapping[str, Any] | ClientSecurity | None) -> ClientSecurity:
    """A client's `security` argument: Kafka's properties, a ready ClientSecurity, or None
    for PLAINTEXT."""
    if security is None:
        return PLAINTEXT
    if isinstance(security, ClientSecurity):
        return security
    return ClientSecurity.from_properties(security)
