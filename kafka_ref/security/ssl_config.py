"""TLS for a listener from Kafka's `ssl.*` keys, with PEM files (KIP-651).

An SSL or SASL_SSL listener wraps every connection in TLS (Python's `ssl` module, on the
asyncio transport). Kafka configures it with Java keystores; KIP-651 (Kafka 2.7) added PEM,
which is what kafka-ref reads (SEC-3):

    ssl.keystore.type=PEM
    ssl.keystore.location=/etc/kafka/broker.pem    private key + certificate chain, PEM
    ssl.key.password=...                           if the private key is encrypted
    ssl.truststore.type=PEM
    ssl.truststore.location=/etc/kafka/ca.pem      CA certificates for client certificates
    ssl.client.auth=required|requested|none        mTLS (Kafka's default: none)

or inline: `ssl.keystore.key` (the PEM private key) with `ssl.keystore.certificate.chain`,
and `ssl.truststore.certificates`. A JKS or PKCS12 keystore type is refused by the broker
config (convert it: `keytool -importkeystore ... -deststoretype PKCS12`, then `openssl
pkcs12 -nodes`). Each key can be set for one listener as `listener.name.<listener>.ssl.<...>`.

`ssl.client.auth=required` makes the handshake fail without a certificate signed by the
truststore's CA; `requested` asks for one and accepts a connection without it (its principal
is then ANONYMOUS). TLS 1.2 is the oldest version accepted.

Zero-copy does not survive TLS: the bytes must be encrypted in user space, so a fetch
response's file slices are read and written through the TLS transport instead of
`sendfile(2)` (network.py falls back by itself: the transport has no socket for sendfile).

The same keys make the context a broker connects to other brokers with on an SSL or
SASL_SSL inter-broker listener (`client_context`).

Rules: SEC-3, SEC-4, SEC-21, SEC-24.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Callable
from typing import Any

_CLIENT_AUTH = {
    "required": ssl.CERT_REQUIRED,
    "requested": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
}


class SslConfigError(ValueError):
    """TLS settings that cannot be used (the message names the key, never a password)."""


def server_context(get: Callable[[str], Any]) -> ssl.SSLContext:
    """The listener's TLS context; `get(key)` answers a `ssl.*` key for this listener (the
    broker config has checked the store types, PEM, and `ssl.client.auth`'s value)."""
    client_auth = get("ssl.client.auth") or "none"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_keystore(context, get)
    truststore, certificates = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if truststore:
            context.load_verify_locations(cafile=truststore)
        elif certificates:
            context.load_verify_locations(cadata=certificates)
        elif client_auth != "none":
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except (OSError, ssl.SSLError) as err:
        raise SslConfigError(f"ssl.truststore: cannot load the CA certificates: {err}") from None
    context.verify_mode = _CLIENT_AUTH[client_auth]
    return context


def client_context(get: Callable[[str], Any]) -> ssl.SSLContext:
    """The TLS context a client, or a broker connecting to another broker, uses (SEC-21,
    SEC-24): the truststore's CAs check the broker's certificate, and its host name unless
    `ssl.endpoint.identification.algorithm` is empty; a keystore, when given (a broker always
    has one), is the client certificate, so an `ssl.client.auth=required` listener admits
    the connection as the principal of that certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = get("ssl.endpoint.identification.algorithm") == "https"
    truststore, certificates = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if truststore:
            context.load_verify_locations(cafile=truststore)
        elif certificates:
            context.load_verify_locations(cadata=certificates)
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (OSError, ssl.SSLError) as err:
        raise SslConfigError(f"ssl.truststore: cannot load the CA certificates: {err}") from None
    if get("ssl.keystore.location") or get("ssl.keystore.key"):
        _load_keystore(context, get)
    return context


def _load_keystore(context: ssl.SSLContext, get: Callable[[str], Any]) -> None:
    location, password = get("ssl.keystore.location"), get("ssl.key.password")
    key, chain = get("ssl.keystore.key"), get("ssl.keystore.certificate.chain")
    if not location and not (key and chain):
        raise SslConfigError(
            "an SSL listener needs ssl.keystore.location (PEM key and certificate chain) "
            "or ssl.keystore.key with ssl.keystore.certificate.chain"
        )
    try:
        if location:
            context.load_cert_chain(location, password=password)
            return
        # `ssl` loads certificates from files only: a private temporary file, removed at once
        fd, path = tempfile.mkstemp(suffix=".pem")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"{key.strip()}\n{chain.strip()}\n")
            context.load_cert_chain(path, password=password)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
    except (OSError, ssl.SSLError) as err:  # the reason, never the password
        raise SslConfigError(f"ssl.keystore: cannot load the key and certificates: {err}") from None
