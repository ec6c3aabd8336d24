"""CreateAcls (API key 30): add ACLs (KIP-4, KIP-290).

Each creation is one binding: a resource pattern (type, name, LITERAL or PREFIXED) and an
entry (principal, host, operation, ALLOW or DENY). Creating an ACL that exists changes
nothing. Each creation has its own result: INVALID_REQUEST for a filter-only value (ANY,
MATCH) or a bad name, CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster,
SECURITY_DISABLED when the broker has no authorizer.

Version history (Kafka's JSON comments): v1 adds the pattern type; v2 flexible; v3 adds
the USER resource type. kafka-ref declares 1-3, as Kafka 4.4:
the USER type (7) and its operations CREATE_TOKENS and DESCRIBE_TOKENS are valid in every
version, as Kafka does not check the version (SEC-26).

Kafka's definitions: CreateAclsRequest.json, CreateAclsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

CreateAclsRequest = Message(
    "CreateAclsRequest",
    api_key=30,
    listeners=("broker", "controller"),
    valid_versions="1-3",
    flexible_versions="2+",
    fields=[
        Field(
            "Creations",
            "[]AclCreation",
            "0+",
            about="The ACLs that we want to create.",
            fields=[
                Field("ResourceType", "int8", "0+", about="The type of the resource."),
                Field("ResourceName", "string", "0+", about="The resource name."),
                Field("ResourcePatternType", "int8", "1+", default=3, about="The pattern type."),
                Field("Principal", "string", "0+", about="The principal."),
                Field("Host", "string", "0+", about="The host."),
                Field("Operation", "int8", "0+", about="The operation."),
                Field("PermissionType", "int8", "0+", about="ALLOW (3) or DENY (2)."),
            ],
        )
    ],
)

CreateAclsResponse = Message(
    "CreateAclsResponse",
    api_key=30,
    valid_versions="1-3",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Results",
            "[]AclCreationResult",
            "0+",
            about="The results for each ACL creation.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field("ErrorMessage", "string", "0+", nullable_versions="0+", about="Message."),
            ],
        ),
    ],
)
