"""The handlers' one question to the authorizer (Kafka: `AuthHelper.authorize`).

Every check in a handler is one call, `authorized(apis, request, OPERATION, TYPE, name)`
(or `require`, which raises the resource type's refusal as a KafkaError): True when the
broker has no authorizer (`authorizer.class.name` empty) or the request's principal, from
its host, may do it (security/acls.py). What a refusal answers is the
handler's business: each API has its own error code, as in Kafka's `KafkaApis`.

Rules: SEC-17, SEC-26, REBAL-23, BROKER-62.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

Op, Res = AclOperation, ResourceType  # short names for the handlers' calls
# The error of a refusal, by resource type (Kafka: the AuthorizationException subclasses).
REFUSALS = {
    Res.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    Res.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    Res.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    Res.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def authorized(
    apis: ApiContext,
    request: Request,
    operation: AclOperation,
    rtype: ResourceType,
    name: str = CLUSTER_NAME,
) -> bool:
    authorizer = apis.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(request.principal, request.host, operation, rtype, name)


def authorized_any(
    apis: ApiContext, request: Request, operation: AclOperation, rtype: ResourceType
) -> bool:
    """May it do `operation` on some resource of the type? (KIP-679's idempotent producer)"""
    authorizer = apis.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize_any(request.principal, request.host, operation, rtype)


# The operations of each resource type (Kafka: `AclEntry.supportedOperations`): what an
# authorized-operations field can name.
SUPPORTED_OPERATIONS = {
    Res.TOPIC: (
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DESCRIBE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    ),
    Res.CLUSTER: (
        Op.CREATE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
        Op.ALTER,
        Op.DESCRIBE,
    ),
    Res.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    Res.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
}


def authorized_operations(
    apis: ApiContext, request: Request, rtype: ResourceType, name: str = CLUSTER_NAME
) -> int:
    """The operations the request's principal may do on the resource, as the 32-bit field
    of Metadata v8+, DescribeTopicPartitions, DescribeGroups v3+ (REBAL-23) and
    DescribeCluster (SEC-26): bit n set for the operation of code n (Kafka:
    `AuthHelper.authorizedOperations`, `Utils.to32BitField`, KIP-430). Without an
    authorizer every operation of the resource type."""
    allowed = (
        op for op in SUPPORTED_OPERATIONS[rtype] if authorized(apis, request, op, rtype, name)
    )
    return sum(1 << op for op in allowed)


def require(
    apis: ApiContext,
    request: Request,
    operation: AclOperation,
    rtype: ResourceType,
    name: str = CLUSTER_NAME,
) -> None:
    """Raise the resource type's refusal (a KafkaError) unless authorized: for handlers
    that already turn KafkaErrors into a resource's error code."""
    if not authorized(apis, request, operation, rtype, name):
        message = f"{request.principal} may not {operation.name} {rtype.name} {name}"
        raise KafkaError(message, code=REFUSALS[rtype])
