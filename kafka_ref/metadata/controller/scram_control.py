"""SCRAM credentials in KRaft: AlterUserScramCredentials as records (Kafka:
`ScramControlManager`, KIP-554).

The client salts and hashes the password itself and sends the salt, the salted password
and the iterations; the controller derives the stored and server keys (RFC 5802; kafka-ref's
`credential_from_salted`) and writes a UserScramCredentialRecord, or a
RemoveUserScramCredentialRecord for a deletion. Each (user, mechanism) is answered alone:
UNSUPPORTED_SASL_MECHANISM for a mechanism other than SCRAM-SHA-256 (1) and SCRAM-SHA-512
(2), UNACCEPTABLE_CREDENTIAL for an empty user name or iterations outside 4096..16384,
RESOURCE_NOT_FOUND to delete a credential that does not exist, DUPLICATE_RESOURCE when a
request names the same user and mechanism twice.

Rules: KCTRL-13.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.result import NONE, ApiError, ControllerResult
from kafka_ref.metadata.image import MetadataImage
from kafka_ref.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    credential_from_salted,
)

MECHANISMS = {code: name for name, code in MECHANISM_TYPES.items()}


@dataclass(frozen=True)
class ScramDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True)
class ScramUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


def _error(image: MetadataImage, change: ScramDeletion | ScramUpsertion) -> ApiError | None:
    if change.mechanism not in MECHANISMS:
        return ApiError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    if not change.name:
        return ApiError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if isinstance(change, ScramDeletion):
        if (change.mechanism, change.name) not in image.scram:
            return ApiError(
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempted to delete a user credential that does not exist",
            )
    elif change.iterations < MIN_ITERATIONS:
        return ApiError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    elif change.iterations > MAX_ITERATIONS:
        return ApiError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    return None


def alter_user_scram_credentials(
    image: MetadataImage,
    deletions: Sequence[ScramDeletion],
    upsertions: Sequence[ScramUpsertion],
) -> ControllerResult[list[tuple[str, ApiError]]]:
    changes: list[ScramDeletion | ScramUpsertion] = [*deletions, *upsertions]
    named = Counter((c.name, c.mechanism) for c in changes)
    records: list[object] = []
    results = []
    for change in changes:
        if named[(change.name, change.mechanism)] > 1:
            error: ApiError | None = ApiError(
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        else:
            error = _error(image, change)
        if error is not None:
            results.append((change.name, error))
            continue
        if isinstance(change, ScramDeletion):
            records.append(
                r.RemoveUserScramCredentialRecord(name=change.name, mechanism=change.mechanism)
            )
        else:
            credential = credential_from_salted(
                MECHANISMS[change.mechanism], change.salt, change.salted_password, change.iterations
            )
            records.append(
                r.UserScramCredentialRecord(
                    name=change.name,
                    mechanism=change.mechanism,
                    salt=credential.salt,
                    stored_key=credential.stored_key,
                    server_key=credential.server_key,
                    iterations=credential.iterations,
                )
            )
        results.append((change.name, NONE))
    return ControllerResult.of(records, results)
