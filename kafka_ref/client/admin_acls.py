"""The admin client's ACL operations (Kafka's `Admin.createAcls`, `describeAcls`,
`deleteAcls`, KIP-4, KIP-290): what `kafka-acls.sh --bootstrap-server` does.

    admin.create_acls([AclBinding(ResourcePattern(ResourceType.TOPIC, "clicks"),
                       AccessControlEntry("User:alice", "*", AclOperation.READ,
                                          AclPermissionType.ALLOW))])
    admin.describe_acls(AclBindingFilter(resource_type=ResourceType.TOPIC))
    admin.delete_acls([AclBindingFilter(principal="User:alice")])

Each goes to any broker: every broker stores ACLs where all brokers read them (the
metadata directory, or ZooKeeper). So `AclAdmin` needs one thing, a way to send a request
to any broker and get its response (admin_requests.py). A refusal raises `KafkaError`
(SECURITY_DISABLED when the broker has no authorizer, CLUSTER_AUTHORIZATION_FAILED without
ALTER or DESCRIBE on the cluster, INVALID_REQUEST for a malformed ACL).

Spec rules: SEC-18 (spec/security.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_ref.client.admin_requests import SendToAny, check
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kafka_ref.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)


def _filter_fields(f: AclBindingFilter) -> dict:
    return dict(
        resource_type_filter=f.resource_type,
        resource_name_filter=f.name,
        pattern_type_filter=f.pattern_type,
        principal_filter=f.principal,
        host_filter=f.host,
        operation=f.operation,
        permission_type=f.permission,
    )


def _binding(item: object, pattern: ResourcePattern) -> AclBinding:
    return AclBinding(
        pattern,
        AccessControlEntry(
            item.principal,
            item.host,
            AclOperation(item.operation),
            AclPermissionType(item.permission_type),
        ),
    )


class AclAdmin:
    """ACL operations of `Admin`."""

    def __init__(self, send_to_any: SendToAny) -> None:
        self._send = send_to_any

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        bindings = list(bindings)
        creation = CreateAclsRequest.AclCreation
        body = CreateAclsRequest(
            creations=[
                creation(
                    resource_type=b.pattern.resource_type,
                    resource_name=b.pattern.name,
                    resource_pattern_type=b.pattern.pattern_type,
                    principal=b.entry.principal,
                    host=b.entry.host,
                    operation=b.entry.operation,
                    permission_type=b.entry.permission,
                )
                for b in bindings
            ]
        )
        response = self._send(ApiKey.CREATE_ACLS, body)
        for binding, result in zip(bindings, response.results, strict=True):
            check(f"create ACL {binding}", result.error_code, result.error_message)

    def describe_acls(self, selector: AclBindingFilter) -> list[AclBinding]:
        response = self._send(ApiKey.DESCRIBE_ACLS, DescribeAclsRequest(**_filter_fields(selector)))
        check("describe ACLs", response.error_code, response.error_message)
        return [
            _binding(
                acl,
                ResourcePattern(
                    ResourceType(r.resource_type), r.resource_name, PatternType(r.pattern_type)
                ),
            )
            for r in response.resources
            for acl in r.acls
        ]

    def delete_acls(self, selectors: Iterable[AclBindingFilter]) -> list[AclBinding]:
        """Delete what the filters match; returns the ACLs deleted."""
        body = DeleteAclsRequest(
            filters=[DeleteAclsRequest.DeleteAclsFilter(**_filter_fields(f)) for f in selectors]
        )
        response = self._send(ApiKey.DELETE_ACLS, body)
        deleted = []
        for result in response.filter_results:
            check("delete ACLs", result.error_code, result.error_message)
            for m in result.matching_acls:
                check("delete ACL", m.error_code, m.error_message)
                pattern = ResourcePattern(
                    ResourceType(m.resource_type), m.resource_name, PatternType(m.pattern_type)
                )
                deleted.append(_binding(m, pattern))
        return deleted
