"""DescribeAcls (API key 29): list the ACLs a filter selects (KIP-4, KIP-290).

The filter's fields each match everything with their "any" value: resource type ANY (1),
name null, pattern type ANY (1) or MATCH (2: the patterns that would apply to the named
resource, literal, `*` and prefixes), principal and host null, operation ANY (1),
permission ANY (1). The answer groups the ACLs by resource pattern. Needs DESCRIBE on the
cluster (else CLUSTER_AUTHORIZATION_FAILED); SECURITY_DISABLED without an authorizer.

Version history (Kafka's JSON comments): v1 adds the pattern types; v2 flexible; v3 adds
the USER resource type. kafka-ref declares 1-3, as Kafka 4.4:
the USER type (7) and its operations CREATE_TOKENS and DESCRIBE_TOKENS are valid in every
version, as Kafka does not check the version (SEC-26). Codes of the int8 fields: security/acls.py.

Kafka's definitions: DescribeAclsRequest.json, DescribeAclsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeAclsRequest = Message(
    "DescribeAclsRequest",
    api_key=29,
    valid_versions="1-3",
    flexible_versions="2+",
    fields=[
        Field("ResourceTypeFilter", "int8", "0+", about="The resource type."),
        Field("ResourceNameFilter", "string", "0+", nullable_versions="0+", about="The name."),
        Field("PatternTypeFilter", "int8", "1+", default=3, about="The pattern type."),
        Field("PrincipalFilter", "string", "0+", nullable_versions="0+", about="The principal."),
        Field("HostFilter", "string", "0+", nullable_versions="0+", about="The host."),
        Field("Operation", "int8", "0+", about="The operation to match."),
        Field("PermissionType", "int8", "0+", about="The permission type to match."),
    ],
)

DescribeAclsResponse = Message(
    "DescribeAclsResponse",
    api_key=29,
    valid_versions="1-3",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field("ErrorMessage", "string", "0+", nullable_versions="0+", about="The message."),
        Field(
            "Resources",
            "[]DescribeAclsResource",
            "0+",
            about="Each resource pattern that is returned.",
            fields=[
                Field("ResourceType", "int8", "0+", about="The resource type."),
                Field("ResourceName", "string", "0+", about="The resource name."),
                Field("PatternType", "int8", "1+", default=3, about="The pattern type."),
                Field(
                    "Acls",
                    "[]AclDescription",
                    "0+",
                    about="The ACLs.",
                    fields=[
                        Field("Principal", "string", "0+", about="The ACL principal."),
                        Field("Host", "string", "0+", about="The ACL host."),
                        Field("Operation", "int8", "0+", about="The ACL operation."),
                        Field("PermissionType", "int8", "0+", about="The permission type."),
                    ],
                ),
            ],
        ),
    ],
)
