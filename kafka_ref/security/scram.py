"""SCRAM: proving a password without sending it (RFC 5802; SCRAM-SHA-256 is RFC 7677).

Salted Challenge Response Authentication Mechanism. The broker never stores the password:
it stores, per user and mechanism, a random *salt*, an *iteration count* and two keys
derived from the password (Kafka: `ScramCredential`, `ScramFormatter`):

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)      (RFC 5802's Hi)
    ClientKey      = HMAC(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC(SaltedPassword, "Server Key")

The exchange is two rounds (SEC-10):

    client-first   n,,n=alice,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<salt>,i=<iterations>
    client-final   c=biws,r=<both nonces>,p=<ClientProof>
    server-final   v=<ServerSignature>

`AuthMessage` is client-first (without its `n,,` header), server-first and client-final
(without the proof) joined by commas. The client proves it knows ClientKey:
`ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage)`; the broker XORs the signature
back out and checks that H(result) is StoredKey. The broker proves it knows ServerKey by
`ServerSignature = HMAC(ServerKey, AuthMessage)`. Someone who steals the stored keys still
cannot log in (StoredKey is a hash of what the proof needs), the password never crosses the
wire, and the nonces make each exchange unique, so a recorded one cannot be replayed.

Kafka requires at least 4096 iterations (and at most 16384). A user name escapes `,` and
`=` as `=2C` and `=3D`. Kafka's `tokenauth=true` extension (delegation tokens) is not
supported.

Rules: SEC-10, SEC-11.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ref.security.plain import AuthenticationFailed

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka: ScramMechanism.minIterations, ...
# The int8 codes of the Alter/DescribeUserScramCredentials APIs (Kafka: `ScramMechanism.type`)
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


@dataclass(frozen=True)
class ScramCredential:
    """What the broker keeps of a password (Kafka: `ScramCredential`)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_string(self) -> str:
        """Kafka's text form (`ScramCredentialUtils.credentialToString`)."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_string(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(","))
        b64 = base64.b64decode
        return cls(
            b64(fields["salt"]),
            b64(fields["stored_key"]),
            b64(fields["server_key"]),
            int(fields["iterations"]),
        )


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)


def client_key(mechanism: str, salted: bytes) -> bytes:
    return _hmac(HASHES[mechanism], salted, b"Client Key")


def make_credential(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """Salt and hash a password (Kafka: `ScramFormatter.generateCredential`)."""
    if mechanism not in HASHES:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be {MIN_ITERATIONS}..{MAX_ITERATIONS}")
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted(mechanism, salt, salted, iterations)


def credential_from_salted(
    mechanism: str, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """The stored credential from a salted password: what the broker does with
    AlterUserScramCredentials, whose client salts and hashes (KIP-554), so that the password
    itself never travels (Kafka: `ScramFormatter.generateCredential(salt, saltedPassword,
    iterations)`)."""
    hash_name = HASHES[mechanism]
    stored = hashlib.new(hash_name, client_key(mechanism, salted)).digest()
    return ScramCredential(salt, stored, _hmac(hash_name, salted, b"Server Key"), iterations)


def signature(mechanism: str, key: bytes, auth_message: bytes) -> bytes:
    """ClientSignature (key StoredKey) or ServerSignature (key ServerKey)."""
    return _hmac(HASHES[mechanism], key, auth_message)


def xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _attributes(message: str) -> dict[str, str]:
    """`a=1,b=2` -> {"a": "1", "b": "2"}; a value may contain `=` (base64), a key is one
    letter or an extension name (`tokenauth`)."""
    attributes = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise AuthenticationFailed(f"malformed SCRAM message attribute {key!r}")
        attributes[key] = value
    return attributes


def _username(encoded: str) -> str:
    """RFC 5802 saslname: `=2C` is `,` and `=3D` is `=`; any other `=` is an error."""
    name = encoded.replace("=2C", ",").replace("=3D", "=")
    if "=" in encoded.replace("=2C", "").replace("=3D", ""):
        raise AuthenticationFailed("malformed SCRAM user name")
    return name


class ScramSaslServer:
    """The broker's side of one SCRAM exchange (Kafka: `ScramSaslServer`)."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str, str], ScramCredential | None],
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(18),
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup  # (user, mechanism) -> credential
        self._nonce = nonce
        self._state = "client-first"
        self._credential: ScramCredential | None = None
        self._first_bare = self._server_first = self._nonces = ""
        self.authorization_id: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        """One client message in, one server message out; AuthenticationFailed on failure."""
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed("SCRAM messages are UTF-8") from None
        if self._state == "client-first":
            return self._client_first(message)
        if self._state == "client-final":
            return self._client_final(message)
        raise AuthenticationFailed("SCRAM exchange already finished")

    def _client_first(self, message: str) -> bytes:
        flag, _, rest = message.partition(",")
        authzid, _, bare = rest.partition(",")
        if flag not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise AuthenticationFailed("malformed SCRAM client-first message (channel binding)")
        attributes = _attributes(bare)
        if "n" not in attributes or "r" not in attributes:
            raise AuthenticationFailed("SCRAM client-first message lacks n= or r=")
        if attributes.keys() - {"n", "r"}:  # an extension such as tokenauth=true
            raise AuthenticationFailed("SCRAM extensions are not supported")
        user = _username(attributes["n"])
        if authzid and _username(authzid[2:]) != user:
            raise AuthenticationFailed("authorization id differs from the user name")
        credential = self._lookup(user, self.mechanism)
        if credential is None or credential.iterations < MIN_ITERATIONS:
            raise AuthenticationFailed(invalid_credentials(self.mechanism))
        self._credential, self.authorization_id = credential, user
        self._first_bare = bare
        self._nonces = attributes["r"] + self._nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonces},s={salt},i={credential.iterations}"
        self._state = "client-final"
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        without_proof, sep, proof = message.rpartition(",p=")
        if not sep:
            raise AuthenticationFailed("SCRAM client-final message lacks its proof")
        attributes = _attributes(without_proof)
        if attributes.get("r") != self._nonces:
            raise AuthenticationFailed("SCRAM nonce mismatch")
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        try:
            client_proof = base64.b64decode(proof, validate=True)
            key = xor(client_proof, signature(self.mechanism, credential.stored_key, auth_message))
        except ValueError:  # not base64, or not the hash's length
            raise AuthenticationFailed(invalid_credentials(self.mechanism)) from None
        computed = hashlib.new(HASHES[self.mechanism], key).digest()
        if not hmac.compare_digest(computed, credential.stored_key):
            raise AuthenticationFailed(invalid_credentials(self.mechanism))
        self._state, self.complete = "done", True
        server = signature(self.mechanism, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server)


def invalid_credentials(mechanism: str) -> str:
    """Kafka's message for a wrong user or password: the same for both, naming neither."""
    return (
        f"Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )
