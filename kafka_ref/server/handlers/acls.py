"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31): managing ACLs over the wire
(Kafka: `AclApis`).

Each translates between the messages' int8 codes and security/acls.py's values and calls
the broker's `Authorizer`, which stores the change durably (and, in ZooKeeper mode, tells
the other brokers) before it counts. Without an authorizer each answers
SECURITY_DISABLED; DescribeAcls needs DESCRIBE on the cluster, the others ALTER, else
CLUSTER_AUTHORIZATION_FAILED, as in Kafka. Versions 2-3 are flexible; v3 names the USER
resource type, which every version accepts, as Kafka's do (SEC-27).

Rules: SEC-18, SEC-27.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse
from kafka_ref.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    validate,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


# Kafka's words for the two refusals of the whole request (DescribeAcls' error message).
REFUSAL_MESSAGES = {
    ErrorCode.SECURITY_DISABLED: "No Authorizer is configured on the broker",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
}


def _refusal(apis: ApiContext, request: Request, operation: AclOperation) -> ErrorCode | None:
    if apis.authorizer is None:
        return ErrorCode.SECURITY_DISABLED
    if not authorized(apis, request, operation, Res.CLUSTER):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


def binding_filter(f: Any) -> AclBindingFilter:
    """A request's filter as values; an unknown code is a ValueError."""
    return AclBindingFilter(
        ResourceType(f.resource_type_filter),
        f.resource_name_filter,
        PatternType(f.pattern_type_filter),
        f.principal_filter,
        f.host_filter,
        AclOperation(f.operation),
        AclPermissionType(f.permission_type),
    )


def creation_binding(c: Any) -> AclBinding:
    """A CreateAcls creation as a binding; an unknown code is a ValueError."""
    return AclBinding(
        ResourcePattern(
            ResourceType(c.resource_type), c.resource_name, PatternType(c.resource_pattern_type)
        ),
        AccessControlEntry(
            c.principal, c.host, AclOperation(c.operation), AclPermissionType(c.permission_type)
        ),
    )


def handle_describe_acls(apis: ApiContext, request: Request) -> Any:
    refused = _refusal(apis, request, Op.DESCRIBE)
    if refused is not None:
        return DescribeAclsResponse(error_code=refused, error_message=REFUSAL_MESSAGES[refused])
    try:
        found = apis.authorizer.describe(binding_filter(request.body))
    except ValueError as err:
        return DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=str(err))
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for binding in found:
        by_pattern[binding.pattern].append(binding.entry)
    resource, acl = DescribeAclsResponse.DescribeAclsResource, DescribeAclsResponse.AclDescription
    return DescribeAclsResponse(
        resources=[
            resource(
                resource_type=p.resource_type,
                resource_name=p.name,
                pattern_type=p.pattern_type,
                acls=[
                    acl(
                        principal=e.principal,
                        host=e.host,
                        operation=e.operation,
                        permission_type=e.permission,
                    )
                    for e in entries
                ],
            )
            for p, entries in by_pattern.items()
        ]
    )


def handle_create_acls(apis: ApiContext, request: Request) -> Any:
    result = CreateAclsResponse.AclCreationResult
    refused = _refusal(apis, request, Op.ALTER)
    if refused is not None:
        creations = request.body.creations
        return CreateAclsResponse(results=[result(error_code=refused) for _ in creations])
    results, valid = [], []
    for c in request.body.creations:
        try:
            binding = creation_binding(c)
            problem = validate(binding)
        except ValueError as err:
            problem = str(err)
        if problem is None:
            valid.append(binding)
            results.append(result(error_code=0))
        else:
            results.append(result(error_code=ErrorCode.INVALID_REQUEST, error_message=problem))
    if valid:
        apis.authorizer.create(valid)
    return CreateAclsResponse(results=results)


def handle_delete_acls(apis: ApiContext, request: Request) -> Any:
    result = DeleteAclsResponse.DeleteAclsFilterResult
    refused = _refusal(apis, request, Op.ALTER)
    if refused is not None:
        filters = request.body.filters
        return DeleteAclsResponse(filter_results=[result(error_code=refused) for _ in filters])
    try:
        selectors = [binding_filter(f) for f in request.body.filters]
    except ValueError as err:
        invalid = result(error_code=ErrorCode.INVALID_REQUEST, error_message=str(err))
        return DeleteAclsResponse(filter_results=[invalid for _ in request.body.filters])
    return delete_acls_response(apis.authorizer.delete(selectors))


def delete_acls_response(removed: list[list[AclBinding]]) -> Any:
    """DeleteAcls' answer: per filter, the bindings it removed (a KRaft controller answers
    a forwarded DeleteAcls with the same, once its records commit)."""
    result, matching = (
        DeleteAclsResponse.DeleteAclsFilterResult,
        DeleteAclsResponse.DeleteAclsMatchingAcl,
    )
    return DeleteAclsResponse(
        filter_results=[
            result(
                matching_acls=[
                    matching(
                        resource_type=b.pattern.resource_type,
                        resource_name=b.pattern.name,
                        pattern_type=b.pattern.pattern_type,
                        principal=b.entry.principal,
                        host=b.entry.host,
                        operation=b.entry.operation,
                        permission_type=b.entry.permission,
                    )
                    for b in bindings
                ]
            )
            for bindings in removed
        ]
    )
