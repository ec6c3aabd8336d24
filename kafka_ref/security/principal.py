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

Rules: SEC-5.
"""

from __future__ import annotations

from typing import Any

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
