"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): SCRAM users over
the wire (KIP-554; Kafka: `ZkAdminManager.describeUserScramCredentials`,
`alterUserScramCredentials`).

The broker's credential store (security/credentials.py: the metadata directory's file, or
ZooKeeper's `/config/users` announced under `/config/changes`) holds the credentials;
these handlers translate. Alter receives a salt and a *salted password* (the client ran
PBKDF2), derives the stored and server keys (`scram.credential_from_salted`) and stores
only those: no password reaches the broker, and nothing secret is logged or answered.
Describe answers mechanisms and iteration counts only.

Each user is checked whole before anything of it is written: an unknown mechanism, a bad
iteration count, an empty salt, a mechanism named twice or the deletion of a credential
that does not exist fails that user (and none of its changes apply), not the others.
Describe needs DESCRIBE on the cluster, Alter ALTER, else CLUSTER_AUTHORIZATION_FAILED.

Rules: SEC-22.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsResponse,
)
from kafka_ref.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

MECHANISMS = {code: name for name, code in MECHANISM_TYPES.items()}
Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo
AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
# Kafka's messages for what fails one user
TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request"
NO_CREDENTIAL = "Attempt to describe a user credential that does not exist"
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
NOT_TO_DELETE = "Attempt to delete a user credential that does not exist"


def handle_describe_user_scram_credentials(apis: ApiContext, request: Request) -> Any:
    if not authorized(apis, request, Op.DESCRIBE, Res.CLUSTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return DescribeUserScramCredentialsResponse(error_code=code, error_message=code.name)
    known = apis.credentials.describe()
    asked = [u.name for u in request.body.users or ()]
    results = []
    for user in dict.fromkeys(asked) if asked else sorted(known):
        if asked.count(user) > 1:
            error, message = ErrorCode.DUPLICATE_RESOURCE, f"{TWICE}: {user}"
        elif user not in known:
            error, message = ErrorCode.RESOURCE_NOT_FOUND, f"{NO_CREDENTIAL}: {user}"
        else:
            infos = [
                Info(mechanism=MECHANISM_TYPES[m], iterations=n) for m, n in known[user].items()
            ]
            results.append(Result(user=user, error_code=0, credential_infos=infos))
            continue
        results.append(
            Result(user=user, error_code=error, error_message=message, credential_infos=[])
        )
    return DescribeUserScramCredentialsResponse(error_code=0, results=results)


def _check_user(
    user: str, deletions: list[Any], upsertions: list[Any], existing: dict[str, int]
) -> tuple[ErrorCode, str] | None:
    """Why this user's part of the request cannot apply, or None."""
    named = [d.mechanism for d in deletions] + [u.mechanism for u in upsertions]
    unacceptable = ErrorCode.UNACCEPTABLE_CREDENTIAL
    if not user:
        return unacceptable, "Username must not be empty"
    if any(code not in MECHANISMS for code in named):
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if len(set(named)) != len(named):
        return ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE
    for u in upsertions:
        if not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
            return unacceptable, f"Iterations must be {MIN_ITERATIONS}..{MAX_ITERATIONS}"
        if not u.salt or not u.salted_password:
            return unacceptable, "Salt and salted password must not be empty"
    if any(MECHANISMS[d.mechanism] not in existing for d in deletions):
        return ErrorCode.RESOURCE_NOT_FOUND, NOT_TO_DELETE
    return None


def handle_alter_user_scram_credentials(apis: ApiContext, request: Request) -> Any:
    body = request.body
    users = list(
        dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    )
    if not authorized(apis, request, Op.ALTER, Res.CLUSTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        results = [AlterResult(user=u, error_code=code, error_message=code.name) for u in users]
        return AlterUserScramCredentialsResponse(results=results)
    store, known, results = apis.credentials, apis.credentials.describe(), []
    for user in users:
        deletions = [d for d in body.deletions if d.name == user]
        upsertions = [u for u in body.upsertions if u.name == user]
        refused = _check_user(user, deletions, upsertions, known.get(user, {}))
        if refused is not None:
            results.append(AlterResult(user=user, error_code=refused[0], error_message=refused[1]))
            continue
        add: dict[str, ScramCredential] = {
            MECHANISMS[u.mechanism]: credential_from_salted(
                MECHANISMS[u.mechanism], bytes(u.salt), bytes(u.salted_password), u.iterations
            )
            for u in upsertions
        }
        store.alter(user, add, tuple(MECHANISMS[d.mechanism] for d in deletions))
        results.append(AlterResult(user=user, error_code=0))
    return AlterUserScramCredentialsResponse(results=results)
