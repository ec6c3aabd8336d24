"""Principals: the name a connection acts as (Kafka: `KafkaPrincipal`).

Every connection has a principal, `<type>:<name>`, which the authorizer will check against
ACLs. Kafka's default principal builder (`DefaultKafkaPrincipalBuilder`) forms it from the
listener's security protocol (SEC-5):

* PLAINTEXT, and SSL without a client certificate: `User:ANONYMOUS`;
* SSL with a client certificate (mTLS): `User:` and the certificate's subject
  distinguished name as Java's `X500Principal.getName()` writes it (RFC 2253), e.g.
  `User:CN=alice,OU=eng,O=Example,C=US`: the most specific name first (the reverse of
  the order in the certificate), short attribute names, `,` `+` `"` `\\` `<` `>` `;`
  escaped with a backslash;
* SASL_PLAINTEXT and SASL_SSL: `User:` and the name the SASL mechanism authenticated.

Kafka's `ssl.principal.mapping.rules` (rewriting the DN) is not supported: the DN is used
whole, as Kafka's `DEFAULT` rule does.

A KRaft broker that forwards a client's request to the controller (KIP-590) sends the
principal with it, serialized as Kafka's `DefaultKafkaPrincipalBuilder.serialize` does: the
message `DefaultPrincipalData` (type, name, whether a delegation token authenticated it),
prefixed by its version as an INT16 (`MessageUtil.toVersionPrefixedBytes`).

Rules: SEC-5, KBROKER-11.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka_ref.protocol.errors import ProtocolDecodeError
from kafka_ref.protocol.messages import DefaultPrincipalData

PRINCIPAL_DATA_VERSION = 0
_VERSION = struct.Struct(">h")

ANONYMOUS = "User:ANONYMOUS"

# Python's long attribute names -> the keywords RFC 2253 and Java's X500Principal use.
_SHORT = {
    "commonName": "CN",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _escape(value: str) -> str:
    escaped = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
    if escaped[:1] in ("#", " "):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def rfc2253(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """The DN of `ssl.SSLSocket.getpeercert()["subject"]`, as X500Principal.getName() has it."""
    rdns = [
        "+".join(f"{_SHORT.get(key, key)}={_escape(value)}" for key, value in rdn)
        for rdn in reversed(subject)
    ]
    return ",".join(rdns)


def ssl_principal(peer_certificate: dict[str, Any] | None) -> str:
    """`User:<subject DN>` of a verified client certificate; ANONYMOUS without one."""
    subject = (peer_certificate or {}).get("subject")
    return f"User:{rfc2253(subject)}" if subject else ANONYMOUS


def sasl_principal(authorization_id: str) -> str:
    return f"User:{authorization_id}"


def serialize_principal(principal: str, token_authenticated: bool = False) -> bytes:
    """`<type>:<name>` as Kafka's `DefaultKafkaPrincipalBuilder.serialize` writes it."""
    kind, _, name = principal.partition(":")
    out = bytearray(_VERSION.pack(PRINCIPAL_DATA_VERSION))
    data = DefaultPrincipalData(type=kind, name=name, token_authenticated=token_authenticated)
    DefaultPrincipalData.encode_into(PRINCIPAL_DATA_VERSION, out, data)
    return bytes(out)


def deserialize_principal(data: bytes) -> str:
    """The `<type>:<name>` of `serialize_principal`'s bytes (Kafka: `deserialize`);
    ProtocolDecodeError for bytes that are not that."""
    if len(data) < _VERSION.size:
        raise ProtocolDecodeError(f"a principal needs a version, got {len(data)} byte(s)")
    (version,) = _VERSION.unpack_from(data, 0)
    if version != PRINCIPAL_DATA_VERSION:
        raise ProtocolDecodeError(f"unknown DefaultPrincipalData version {version}")
    message, _ = DefaultPrincipalData.decode_from(version, memoryview(data), _VERSION.size)
    return f"{message.type}:{message.name}"
