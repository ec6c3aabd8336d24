"""PLAIN: a user name and password in one message (RFC 4616), and Kafka's JAAS user list.

The client sends `authzid NUL authcid NUL password` (the authorization id is usually empty)
and the broker compares the password with the one it knows for that user. The password
crosses the wire as it is, so PLAIN belongs on a SASL_SSL listener; on SASL_PLAINTEXT
anyone on the path can read it (SEC-8).

Kafka's broker learns its PLAIN users from a JAAS configuration, the
`listener.name.<listener>.plain.sasl.jaas.config` key (kafka-ref also reads the
unprefixed `sasl.jaas.config`):

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

`username`/`password` are what the broker itself would send to other brokers; every
`user_<name>="<password>"` option is a user that may log in (Kafka:
`PlainServerCallbackHandler`). Passwords are compared in constant time and never logged:
a failure says "Invalid username or password", whichever was wrong.

Rules: SEC-8.
"""

from __future__ import annotations

import hmac
import re


class AuthenticationFailed(Exception):
    """A SASL exchange that fails: the message goes to the client, so it names no secret."""


# One JAAS option: key="value" (quotes may be escaped) or key=value.
_OPTION = re.compile(r'([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))')


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """`LoginModule flag key="value" ...;` -> (login module class, options)."""
    module, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    flag, _, options_text = rest.partition(" ")
    if not module or flag.rstrip(";") not in ("required", "requisite", "sufficient", "optional"):
        raise ValueError("sasl.jaas.config is not 'LoginModule required key=\"value\" ...;'")
    options = {}
    for match in _OPTION.finditer(options_text):
        quoted, bare = match.group(2), match.group(3)
        options[match.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
    return module, options


def plain_users(jaas_config: str) -> dict[str, str]:
    """The `user_<name>` options of a PlainLoginModule configuration: name -> password."""
    _module, options = parse_jaas_config(jaas_config)
    return {k[len("user_") :]: v for k, v in options.items() if k.startswith("user_")}


class PlainSaslServer:
    """The broker's side of PLAIN (Kafka: `PlainSaslServer`): one message, one answer."""

    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.authorization_id: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        expected = self._users.get(user)
        # compare even for an unknown user, so the time taken does not tell which it was
        matches = hmac.compare_digest((expected or "\x00").encode(), password.encode())
        if expected is None or not matches:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.authorization_id, self.complete = user, True
        return b""
