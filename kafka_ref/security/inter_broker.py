"""How a broker connects to other brokers: the inter-broker listener's security, client side.

Brokers talk to each other over one listener, `inter.broker.listener.name` (or the one named
like `security.inter.broker.protocol`). Its security protocol decides how every
inter-broker connection is made - the replica fetchers', the transaction markers', the
controller's - since all of them open through the one connection class,
`FetcherConnection.open` (server/follower_connection.py) (SEC-21):

    PLAINTEXT       a TCP connection; the other broker sees User:ANONYMOUS
    SSL             TLS with the broker's own keystore as its client certificate; the other
                    broker sees User:<the certificate's DN> when it asks for certificates
    SASL_PLAINTEXT  SaslHandshake and SaslAuthenticate with
    SASL_SSL        `sasl.mechanism.inter.broker.protocol` first (over TLS for SASL_SSL);
                    the other broker sees User:<username>

The SASL credentials are the `username` and `password` options of the listener's JAAS
config for that mechanism, by Kafka's names:

    listener.name.internal.scram-sha-256.sasl.jaas.config=\\
        org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="broker" password="broker-secret";

For SCRAM the user must have a credential in the metadata before the brokers start
(`kafka-ref users` with `--zookeeper`, or `--data-dir` on one broker), as Kafka needs
`kafka-configs.sh --zookeeper ... --add-config` before a SCRAM inter-broker listener works.
The inter-broker principal then must be a super user (or be allowed CLUSTER_ACTION) once
ACLs are on: with SASL it is that user, no longer ANONYMOUS.

Rules: SEC-20, SEC-21.
"""

from __future__ import annotations

import functools
from typing import Any

from kafka_ref.security.client_security import ClientSecurity
from kafka_ref.security.listeners import ListenerError
from kafka_ref.security.plain import parse_jaas_config
from kafka_ref.security.ssl_config import client_context


class InterBrokerSecurity(ClientSecurity):
    """What a broker needs to connect to another broker's inter-broker listener: a
    client's security (security/client_security.py), from the broker's own config."""

    @classmethod
    def from_config(cls, config: Any) -> InterBrokerSecurity:
        """From the broker's config; ListenerError (or SslConfigError) if it cannot work."""
        listener = config.inter_broker_listener
        protocol = next(e.protocol for e in config.endpoints() if e.listener == listener)
        get = functools.partial(config.listener_get, listener)
        context = client_context(get) if protocol in ("SSL", "SASL_SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context)
        mechanism = (config["sasl.mechanism.inter.broker.protocol"] or "").upper()
        enabled = [m.strip().upper() for m in get("sasl.enabled.mechanisms") or ()]
        if mechanism not in enabled:
            raise ListenerError(
                f"sasl.mechanism.inter.broker.protocol={mechanism} must be one of the "
                f"sasl.enabled.mechanisms of the inter-broker listener {listener} "
                f"({','.join(enabled)})"
            )
        key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        jaas = get(f"{mechanism.lower()}.sasl.jaas.config") or get("sasl.jaas.config")
        try:
            options = parse_jaas_config(jaas)[1] if jaas else {}
        except ValueError as err:
            raise ListenerError(f"{key}: {err}") from None
        if not options.get("username") or "password" not in options:
            raise ListenerError(
                f'{key} needs username="..." password="...": the broker\'s own credentials '
                f"for the inter-broker listener {listener}"
            )
        return cls(protocol, context, mechanism, options["username"], options["password"])


PLAINTEXT = InterBrokerSecurity()  # no TLS, no SASL: the other broker sees User:ANONYMOUS
