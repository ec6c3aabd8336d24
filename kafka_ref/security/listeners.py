"""Listeners: named endpoints, each with its security protocol (Kafka: `EndPoint`, `ListenerName`).

A broker can listen on several addresses at once, each a *listener* with a name:

    listeners=PLAINTEXT://:9092,SSL://:9093,SASL_SSL://:9094,INTERNAL://:9095
    advertised.listeners=PLAINTEXT://kafka1:9092,SSL://kafka1:9093,...
    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,INTERNAL:PLAINTEXT
    inter.broker.listener.name=INTERNAL

The name before `://` is the listener's name; `listener.security.protocol.map` says which
of the four security protocols it speaks (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL). By
default each protocol's name maps to itself, so `SSL://:9093` needs no map entry (SEC-1).
`advertised.listeners` says, per listener name, where clients should connect (it defaults
to `listeners`; a wildcard host advertises 127.0.0.1). A client is always answered with the
endpoints *of the listener it came in on*: a client on the SSL port learns the SSL
addresses of every broker, one on the internal network the internal ones (SEC-2).
`inter.broker.listener.name` names the listener brokers use among themselves (default: the
one named like `security.inter.broker.protocol`, PLAINTEXT).

Each listener gets its settings (`ListenerSecurity`, Kafka's `ChannelBuilder`): a TLS
context for SSL and SASL_SSL, the SASL mechanisms for SASL_PLAINTEXT and SASL_SSL. Any
security key can be given for one listener as `listener.name.<name lower-case>.<key>`,
which wins over the plain key (Kafka's listener prefix).

Rules: SEC-1, SEC-2.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.security.credentials import CredentialStore, ZkCredentialStore
from kafka_ref.security.plain import PlainSaslServer, parse_jaas_config, plain_users
from kafka_ref.security.scram import HASHES, ScramSaslServer
from kafka_ref.security.ssl_config import server_context

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", *HASHES)  # GSSAPI and OAUTHBEARER are not supported


class ListenerError(ValueError):
    """A listener configuration that cannot be used: one readable line."""


@dataclass(frozen=True)
class EndPoint:
    """One listener's address (Kafka: `EndPoint`)."""

    listener: str  # the listener name, upper case
    protocol: str  # its security protocol
    host: str
    port: int

    def uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


def parse_protocol_map(items: Iterable[str]) -> dict[str, str]:
    """`NAME:PROTOCOL` pairs -> {NAME: PROTOCOL}; an unknown protocol is an error."""
    mapping = {}
    for item in items:
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in SECURITY_PROTOCOLS:
            raise ListenerError(
                f"listener.security.protocol.map entry {item!r} is not NAME:PROTOCOL with "
                f"PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        mapping[name.strip().upper()] = protocol
    return mapping


def parse_endpoints(
    listeners: Iterable[str], protocol_map: dict[str, str], skip: Iterable[str] = ()
) -> list[EndPoint]:
    """`NAME://HOST:PORT,...` -> endpoints; names in `skip` (KRaft controllers) are left out.
    A bare `HOST:PORT` is a PLAINTEXT listener."""
    skipped = {name.upper() for name in skip}
    endpoints: list[EndPoint] = []
    for item in listeners:
        name, sep, address = item.rpartition("://")
        name = name.upper() if sep else "PLAINTEXT"
        if name in skipped:
            continue
        host, colon, port = address.rpartition(":")
        if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ListenerError(f"listener {item!r} is not NAME://HOST:PORT")
        if name not in protocol_map:
            raise ListenerError(
                f"no security protocol for listener {name}: add {name}:<PROTOCOL> to "
                f"listener.security.protocol.map"
            )
        if any(e.listener == name for e in endpoints):
            raise ListenerError(f"listener name {name} appears twice in {', '.join(listeners)}")
        endpoints.append(EndPoint(name, protocol_map[name], host.strip("[]"), int(port)))
    if not endpoints:
        raise ListenerError("no listener for clients (only controller listeners)")
    return endpoints


@dataclass
class ListenerSecurity:
    """How connections on one listener are secured (Kafka: `ChannelBuilder`)."""

    endpoint: EndPoint
    ssl_context: ssl.SSLContext | None = None
    mechanisms: dict[str, Callable[[], Any]] = field(default_factory=dict)  # name -> SaslServer
    reauth_ms: int = 0  # connections.max.reauth.ms (KIP-368); 0: sessions never expire
    max_receive_size: int = 524288  # sasl.server.max.receive.size: frames before auth (BROKER-55)

    @property
    def name(self) -> str:
        return self.endpoint.listener

    @property
    def sasl(self) -> bool:
        return self.endpoint.protocol.startswith("SASL_")

    def take(self, new: ListenerSecurity) -> None:
        """Put a rebuilt listener's settings in force for the connections that come next
        (CONFIG-10, Kafka's `ChannelBuilder.reconfigure`): the SASL mechanisms and their
        users, the re-authentication period, and the TLS keystore and truststore; an
        established connection keeps what it authenticated with. The socket server keeps
        the first TLS context, whose handshake switches each new connection to the latest
        one (`_switch_context`)."""
        assert new.endpoint == self.endpoint, "a listener's settings, not another's"
        self.mechanisms = new.mechanisms
        self.reauth_ms = new.reauth_ms
        self.max_receive_size = new.max_receive_size
        if self.ssl_context is not None and new.ssl_context is not None:
            self.ssl_context.sni_callback = _switch_context(new.ssl_context)


def _switch_context(latest: ssl.SSLContext) -> Callable[..., None]:
    """A TLS server name callback, called at every handshake, that hands the connection
    the latest context: certificate rotation without restarting the listener."""

    def switch(connection: Any, _server_name: str | None, _context: ssl.SSLContext) -> None:
        connection.context = latest

    return switch


def build_listener_security(
    endpoint: EndPoint,
    get: Callable[[str], Any],
    credentials: CredentialStore | ZkCredentialStore,
) -> ListenerSecurity:
    """The settings of one listener; `get(key)` answers a key with its listener prefix first.
    Raises ListenerError (or SslConfigError) on anything that cannot work."""
    security = ListenerSecurity(
        endpoint,
        reauth_ms=get("connections.max.reauth.ms") or 0,
        max_receive_size=get("sasl.server.max.receive.size") or ListenerSecurity.max_receive_size,
    )
    if endpoint.protocol in ("SSL", "SASL_SSL"):
        security.ssl_context = server_context(get)
    if not security.sasl:
        return security
    enabled = [m.strip().upper() for m in get("sasl.enabled.mechanisms") or ()]
    unknown = [m for m in enabled if m not in MECHANISMS]
    if unknown or not enabled:
        raise ListenerError(
            f"listener {endpoint.listener}: sasl.enabled.mechanisms={','.join(enabled)}: "
            f"kafka-ref supports {', '.join(MECHANISMS)}"
        )
    for mechanism in enabled:
        if mechanism == "PLAIN":
            users = _plain_users(endpoint.listener, get)
            security.mechanisms[mechanism] = lambda users=users: PlainSaslServer(users)
        else:
            security.mechanisms[mechanism] = lambda m=mechanism: ScramSaslServer(
                m, credentials.lookup
            )
    return security


def _plain_users(listener: str, get: Callable[[str], Any]) -> dict[str, str]:
    jaas = get("plain.sasl.jaas.config") or get("sasl.jaas.config")
    where = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
    if not jaas:
        raise ListenerError(f"PLAIN is enabled on listener {listener} but {where} is not set")
    try:
        module, _options = parse_jaas_config(jaas)
    except ValueError as err:
        raise ListenerError(f"{where}: {err}") from None
    if not module.endswith("PlainLoginModule"):
        raise ListenerError(f"{where}: PLAIN needs PlainLoginModule, not {module}")
    return plain_users(jaas)
