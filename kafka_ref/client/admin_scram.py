"""The admin client's SCRAM user operations (Kafka's `Admin.describeUserScramCredentials`,
`alterUserScramCredentials`, KIP-554): what `kafka-configs.sh --entity-type users` does.

    admin.alter_user_scram_credentials(
        upsertions={"alice": {"SCRAM-SHA-256": ("alice-secret", 8192)}},
        deletions={"bob": ["SCRAM-SHA-512"]})
    admin.describe_user_scram_credentials(["alice"])   # {"alice": {"SCRAM-SHA-256": 8192}}

The password is salted and hashed here, on the client (PBKDF2 with a random salt, Kafka's
`ScramFormatter`): the request carries the salt, the iteration count and the salted
password, never the password. Every broker answers these, so `ScramAdmin` needs only a way
to send to any broker (admin_requests.py). A user the broker refuses raises `KafkaError` with the
broker's error (UNACCEPTABLE_CREDENTIAL, RESOURCE_NOT_FOUND, UNSUPPORTED_SASL_MECHANISM,
CLUSTER_AUTHORIZATION_FAILED...), after every other user's answer was read.

Spec rules: SEC-22 (spec/security.md).
"""

from __future__ import annotations

import secrets

from kafka_ref.client.admin_requests import SendToAny, check
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
)
from kafka_ref.security.scram import MECHANISM_TYPES, MIN_ITERATIONS, salted_password

MECHANISMS = {code: name for name, code in MECHANISM_TYPES.items()}


class ScramAdmin:
    """SCRAM user operations of `Admin`."""

    def __init__(self, send_to_any: SendToAny) -> None:
        self._send = send_to_any

    def describe_user_scram_credentials(
        self, users: list[str] | None = None
    ) -> dict[str, dict[str, int]]:
        """user -> mechanism -> iterations, for `users` or (None) every user."""
        names = (
            None
            if users is None
            else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users]
        )
        response = self._send(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, DescribeUserScramCredentialsRequest(users=names)
        )
        check("describe SCRAM credentials", response.error_code, response.error_message)
        described = {}
        for result in response.results:
            check(f"describe user {result.user}", result.error_code, result.error_message)
            described[result.user] = {
                MECHANISMS.get(i.mechanism, str(i.mechanism)): i.iterations
                for i in result.credential_infos
            }
        return described

    def alter_user_scram_credentials(
        self,
        upsertions: dict[str, dict[str, tuple[str, int]]] | None = None,
        deletions: dict[str, list[str]] | None = None,
    ) -> None:
        """Add or replace (user -> mechanism -> (password, iterations)) and delete
        (user -> mechanisms) credentials."""
        request = AlterUserScramCredentialsRequest
        upserts = []
        for user, mechanisms in (upsertions or {}).items():
            for mechanism, (password, iterations) in mechanisms.items():
                salt = secrets.token_bytes(32)
                salted = (
                    salted_password(mechanism, password, salt, iterations)
                    if mechanism in MECHANISM_TYPES
                    else b"?"  # the broker answers UNSUPPORTED_SASL_MECHANISM
                )
                upserts.append(
                    request.ScramCredentialUpsertion(
                        name=user,
                        mechanism=MECHANISM_TYPES.get(mechanism, 0),
                        iterations=iterations or MIN_ITERATIONS,
                        salt=salt,
                        salted_password=salted,
                    )
                )
        deletes = [
            request.ScramCredentialDeletion(name=user, mechanism=MECHANISM_TYPES.get(m, 0))
            for user, mechanisms in (deletions or {}).items()
            for m in mechanisms
        ]
        response = self._send(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS, request(deletions=deletes, upsertions=upserts)
        )
        for result in response.results:
            check(f"alter user {result.user}", result.error_code, result.error_message)
