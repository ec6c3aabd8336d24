"""The client's side of SASL: what a broker sends when it connects to another broker.

A broker is also a client: its replica fetchers, its transaction coordinator's markers and
its controller's requests connect to other brokers' inter-broker listener, and when that
listener speaks SASL they must authenticate like any client (Kafka:
`SaslClientAuthenticator`, with the mechanism `sasl.mechanism.inter.broker.protocol`).
Each mechanism here is a small state machine, `evaluate(challenge) -> token or None`: the
first call gets an empty challenge, each later one the broker's last answer, and None means
the exchange is over (SEC-21):

    PLAIN   b""            -> NUL user NUL password           (RFC 4616)
            b""            -> None
    SCRAM   b""            -> n,,n=user,r=<nonce>             (client-first, RFC 5802)
            server-first   -> c=biws,r=<nonces>,p=<proof>     (client-final)
            server-final   -> None, after checking v=<ServerSignature>

The SCRAM client checks the broker's signature too: a broker that does not hold the user's
ServerKey (an impostor) fails the exchange, so authentication is mutual.

`sasl_exchange` is the conversation around a mechanism, as Kafka's clients hold it: a
SaslHandshake v1 naming the mechanism, then one SaslAuthenticate per token until the
mechanism is done. It is written without I/O (a generator that yields requests and is sent
their responses), so the broker's asyncio connection (server/follower_connection.py) and
the clients' blocking one (client/connection.py) drive the same code (SEC-21, SEC-24).

Rules: SEC-21, SEC-24.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Generator
from typing import Any

from kafka_ref.protocol.messages import ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_ref.security import scram
from kafka_ref.security.plain import AuthenticationFailed


class PlainSaslClient:
    """PLAIN: the whole secret in one message, so only over TLS in earnest."""

    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._username, self._password = username, password
        self._sent = False

    def evaluate(self, challenge: bytes) -> bytes | None:
        if self._sent:
            return None
        self._sent = True
        return b"\x00" + self._username.encode() + b"\x00" + self._password.encode()


class ScramSaslClient:
    """SCRAM-SHA-256 or SCRAM-SHA-512, the client's half (Kafka: `ScramSaslClient`)."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str = "") -> None:
        if mechanism not in scram.HASHES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
        self.mechanism, self._password = mechanism, password
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._bare = f"n={name},r={nonce or secrets.token_urlsafe(18)}"
        self._state = "first"
        self._expected = b""  # the server signature that proves the broker knows us

    def evaluate(self, challenge: bytes) -> bytes | None:
        if self._state == "first":
            self._state = "final"
            return f"n,,{self._bare}".encode()
        if self._state == "final":
            self._state = "verify"
            return self._client_final(challenge.decode("utf-8", "replace"))
        if self._state == "verify":
            self._state = "done"
            if not hmac.compare_digest(challenge, self._expected):
                raise AuthenticationFailed("the broker's SCRAM server signature is wrong")
            return None
        raise AuthenticationFailed("SCRAM exchange already finished")

    def _client_final(self, server_first: str) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.split(",") if "=" in item)
        nonce = self._bare.split(",r=", 1)[1]
        if not fields.get("r", "").startswith(nonce) or "s" not in fields or "i" not in fields:
            raise AuthenticationFailed("malformed SCRAM server-first message")
        mechanism = self.mechanism
        iterations = int(fields["i"])
        if iterations < scram.MIN_ITERATIONS:
            raise AuthenticationFailed(f"SCRAM iterations {iterations} below the minimum")
        salted = scram.salted_password(
            mechanism, self._password, base64.b64decode(fields["s"]), iterations
        )
        without_proof = f"c=biws,r={fields['r']}"
        auth_message = f"{self._bare},{server_first},{without_proof}".encode()
        key = scram.client_key(mechanism, salted)
        stored = hashlib.new(scram.HASHES[mechanism], key).digest()
        proof = scram.xor(key, scram.signature(mechanism, stored, auth_message))
        credential = scram.credential_from_salted(mechanism, b"", salted, iterations)
        server = scram.signature(mechanism, credential.server_key, auth_message)
        self._expected = b"v=" + base64.b64encode(server)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def sasl_client(mechanism: str, username: str, password: str) -> PlainSaslClient | ScramSaslClient:
    """The client of a mechanism by its name (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."""
    if mechanism == "PLAIN":
        return PlainSaslClient(username, password)
    return ScramSaslClient(mechanism, username, password)


# What the exchange yields: (api key, version, request body); it is sent the response.
SaslStep = tuple[int, int, Any]


def sasl_exchange(
    client: PlainSaslClient | ScramSaslClient, username: str, authenticate_version: int = 2
) -> Generator[SaslStep, Any, None]:
    """SaslHandshake v1, then SaslAuthenticate (v0-2) rounds until `client` is done.

    Drive it with `step = next(exchange)`, then `step = exchange.send(response)` until
    StopIteration. A refusal raises AuthenticationFailed with a message that names the
    mechanism and the user and the broker's reason, never the password.
    """
    mechanism = client.mechanism
    handshake = yield ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism)
    if handshake.error_code:
        enabled = ",".join(handshake.mechanisms) or "none"
        raise AuthenticationFailed(
            f"SASL mechanism {mechanism} is not enabled on the listener (enabled: {enabled})"
        )
    who = f"{username!r} with {mechanism}"
    challenge = b""
    while True:
        try:
            token = client.evaluate(challenge)
        except AuthenticationFailed as err:  # the broker's SCRAM signature was wrong
            raise AuthenticationFailed(f"authentication as {who} failed: {err}") from None
        if token is None:
            return
        body = SaslAuthenticateRequest(auth_bytes=token)
        answer = yield ApiKey.SASL_AUTHENTICATE, authenticate_version, body
        if answer.error_code:
            reason = answer.error_message or "no reason given"
            raise AuthenticationFailed(f"authentication as {who} failed: {reason}")
        challenge = bytes(answer.auth_bytes)  # a view into a reused buffer: copy it
