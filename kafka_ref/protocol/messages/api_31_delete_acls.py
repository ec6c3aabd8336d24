"""DeleteAcls (API key 31): remove the ACLs each filter selects (KIP-4, KIP-290).

The filters are DescribeAcls's (ANY values and nulls match everything, MATCH the patterns
that apply to a name); each filter's result lists the ACLs it removed. Needs ALTER on the
cluster (else CLUSTER_AUTHORIZATION_FAILED); SECURITY_DISABLED without an authorizer.

Version history (Kafka's JSON comments): v1 adds the pattern type; v2 flexible; v3 adds
the USER resource type. kafka-ref declares 1-3, as Kafka 4.4:
the USER type (7) and its operations CREATE_TOKENS and DESCRIBE_TOKENS are valid in every
version, as Kafka does not check the version (SEC-26).

Kafka's definitions: DeleteAclsRequest.json, DeleteAclsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DeleteAclsRequest = Message(
    "DeleteAclsRequest",
    api_key=31,
    listeners=("broker", "controller"),
    valid_versions="1-3",
    flexible_versions="2+",
    fields=[
        Field(
            "Filters",
            "[]DeleteAclsFilter",
            "0+",
            about="The filters to use when deleting ACLs.",
            fields=[
                Field("ResourceTypeFilter", "int8", "0+", about="The resource type."),
                Field("ResourceNameFilter", "string", "0+", nullable_versions="0+", about="Name."),
                Field("PatternTypeFilter", "int8", "1+", default=3, about="The pattern type."),
                Field("PrincipalFilter", "string", "0+", nullable_versions="0+", about="Who."),
                Field("HostFilter", "string", "0+", nullable_versions="0+", about="The host."),
                Field("Operation", "int8", "0+", about="The ACL operation."),
                Field("PermissionType", "int8", "0+", about="The permission type."),
            ],
        )
    ],
)

DeleteAclsResponse = Message(
    "DeleteAclsResponse",
    api_key=31,
    valid_versions="1-3",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "FilterResults",
            "[]DeleteAclsFilterResult",
            "0+",
            about="The results for each filter.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field("ErrorMessage", "string", "0+", nullable_versions="0+", about="Message."),
                Field(
                    "MatchingAcls",
                    "[]DeleteAclsMatchingAcl",
                    "0+",
                    about="The ACLs which matched this filter.",
                    fields=[
                        Field("ErrorCode", "int16", "0+", about="The deletion error code."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="The deletion error message.",
                        ),
                        Field("ResourceType", "int8", "0+", about="The ACL resource type."),
                        Field("ResourceName", "string", "0+", about="The ACL resource name."),
                        Field("PatternType", "int8", "1+", default=3, about="The pattern type."),
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
