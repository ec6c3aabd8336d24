"""The handlers' one question to the authorizer (Kafka: `AuthHelper.authorize`).

Every check in a handler is one call, `authorized(apis, request, OPERATION, TYPE, name)`
(or `require`, which raises the resource type's refusal as a KafkaError): True when the
broker has no authorizer (`authorizer.class.name` empty) or the request's principal, from
its host, may do it (security/acls.py). What a refusal answers is the
handler's business: each API has its own error code, as in Kafka's `KafkaApis`.

Rules: SEC-17, REBAL-23.
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
    apis: ApiContext, request: Request, operation: AclOperation, rtype: ResourceType,
    name: str = CLUSTER_NAME,
) -> bool:  # fmt: skip
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


# Kafka `AclEntry.supportedOperations`: what can be granted on a resource of each type.
SUPPORTED_OPERATIONS = {
    Res.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
}


def authorized_operations(
    apis: ApiContext, request: Request, rtype: ResourceType, name: str
) -> int:
    """The operations the request's principal may do on the resource, as a bitfield of
    their codes (Kafka `AuthHelper.authorizedOperations`, `Utils.to32BitField`): every
    supported one without an authorizer (DescribeGroups v3+, REBAL-23)."""
    supported = SUPPORTED_OPERATIONS[rtype]
    return sum(1 << op for op in supported if authorized(apis, request, op, rtype, name))


def require(
    apis: ApiContext, request: Request, operation: AclOperation, rtype: ResourceType,
    name: str = CLUSTER_NAME,
) -> None:  # fmt: skip
    """Raise the resource type's refusal (a KafkaError) unless authorized: for handlers
    that already turn KafkaErrors into a resource's error code."""
    if not authorized(apis, request, operation, rtype, name):
        message = f"{request.principal} may not {operation.name} {rtype.name} {name}"
        raise KafkaError(message, code=REFUSALS[rtype])
