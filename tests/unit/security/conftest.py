"""An in-process broker with all four listeners, and a wire client that can speak TLS and SASL.

`secure_broker` has PLAINTEXT, SSL (client certificates required), SASL_PLAINTEXT and
SASL_SSL listeners on free ports, PLAIN users from a JAAS config and a SCRAM user `alice`
in its credentials file. `SecureWire` is the conformance suite's wire client over a plain or
TLS socket, with SASL helpers: `plain()`, `scram()` (a client written from RFC 5802 with
the broker's own key derivations), `handshake()` and `authenticate()` for single steps.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
import ssl
import time
from typing import Any

import pytest

from kafka_ref.conformance import wire
from kafka_ref.protocol.messages import (
    ApiKey,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kafka_ref.security import scram
from kafka_ref.security.credentials import CredentialStore
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.certs import SCRAM_USERS, Pki, make_pki, secure_broker_props


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_pki(str(tmp_path_factory.mktemp("pki")))


def add_scram_users(data_dir) -> None:
    store = CredentialStore(data_dir)
    for user, password in SCRAM_USERS.items():
        store.alter(user, {m: scram.make_credential(m, password) for m in scram.HASHES})


def start_secure_broker(pki: Pki, data_dir, **more: Any) -> BrokerThread:
    data_dir.mkdir(parents=True, exist_ok=True)
    add_scram_users(data_dir)
    props = {**secure_broker_props(pki), "log.dirs": str(data_dir), **more}
    return BrokerThread(KafkaConfig.from_props({k: str(v) for k, v in props.items()})).start()


@pytest.fixture(scope="module")
def secure_broker(pki, tmp_path_factory):
    broker = start_secure_broker(pki, tmp_path_factory.mktemp("secure") / "data")
    yield broker
    broker.stop()


def port(broker: BrokerThread, listener: str) -> int:
    return broker.broker.socket_server.ports[listener]


def client_context(pki: Pki, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=pki.ca)
    if cert:
        context.load_cert_chain(cert, key)
    return context


class SecureWire(wire.Wire):
    """A wire client on 127.0.0.1, over TLS when given a context."""

    def __init__(self, port: int, context: ssl.SSLContext | None = None) -> None:
        super().__init__("127.0.0.1", port, 10.0)
        if context is not None:
            self.sock = context.wrap_socket(self.sock, server_hostname="localhost")

    def handshake(self, mechanism: str, version: int = 1) -> Any:
        body = SaslHandshakeRequest(mechanism=mechanism)
        return self.request(ApiKey.SASL_HANDSHAKE, version, body)

    def authenticate(self, token: bytes, version: int = 2) -> Any:
        return self.request(
            ApiKey.SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=token)
        )

    def plain(self, user: str, password: str) -> Any:
        assert self.handshake("PLAIN").error_code == 0
        return self.authenticate(b"\x00" + user.encode() + b"\x00" + password.encode())

    def scram(self, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Any:
        """A whole SCRAM exchange; returns the last SaslAuthenticate response."""
        assert self.handshake(mechanism).error_code == 0
        client_first, client_final = scram_client(user, password, mechanism)
        first = self.authenticate(client_first)
        if first.error_code:
            return first
        final, expected_server_signature = client_final(bytes(first.auth_bytes))
        last = self.authenticate(final)
        if last.error_code == 0:
            assert bytes(last.auth_bytes) == expected_server_signature  # the broker knew us
        return last

    def closed_by_broker(self, seconds: float = 5.0) -> bool:
        """True once the broker closed the connection (read end of file or a reset)."""
        self.sock.settimeout(0.2)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.sock.recv(65536) == b"":
                    return True
            except TimeoutError:
                continue
            except (ConnectionError, ssl.SSLError, OSError):
                return True
        return False


def scram_client(user: str, password: str, mechanism: str, nonce: str | None = None):
    """RFC 5802's client: (client-first, a function from server-first to (client-final,
    the server signature to expect))."""
    nonce = nonce or secrets.token_urlsafe(18)
    bare = f"n={user},r={nonce}"

    def final(server_first: bytes) -> tuple[bytes, bytes]:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        salted = scram.salted_password(
            mechanism, password, base64.b64decode(fields["s"]), int(fields["i"])
        )
        without_proof = f"c=biws,r={fields['r']}"
        auth_message = f"{bare},{server_first.decode()},{without_proof}".encode()
        key = scram.client_key(mechanism, salted)
        stored = hashlib.new(scram.HASHES[mechanism], key).digest()
        proof = scram.xor(key, scram.signature(mechanism, stored, auth_message))
        server_key = hmac.new(salted, b"Server Key", scram.HASHES[mechanism]).digest()
        expected = b"v=" + base64.b64encode(scram.signature(mechanism, server_key, auth_message))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode(), expected

    return f"n,,{bare}".encode(), final


def raw_connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)
