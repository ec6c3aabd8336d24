"""DescribeUserScramCredentials (API key 50): which SCRAM credentials users have (KIP-554).

An operator asks which mechanisms (and iteration counts) some users, or all users (a null
list), have SCRAM credentials for; `kafka-configs.sh --describe --entity-type users`
sends it. Only the mechanism and iteration count come back: never the salt or the keys.
Mechanisms travel as int8 codes: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512 (0 is UNKNOWN).

Errors: CLUSTER_AUTHORIZATION_FAILED (31) for the whole request without DESCRIBE on the
cluster; per user RESOURCE_NOT_FOUND (91) for a user named without credentials,
DUPLICATE_RESOURCE (92) for a user named twice.

Version history (Kafka's JSON comments): v0 only, flexible. kafka-ref declares 0.

Kafka's definitions: DescribeUserScramCredentialsRequest.json, ...Response.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeUserScramCredentialsRequest = Message(
    "DescribeUserScramCredentialsRequest",
    api_key=50,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "Users",
            "[]UserName",
            "0+",
            nullable_versions="0+",
            about="The users to describe, or null/empty to describe all users.",
            fields=[Field("Name", "string", "0+", about="The user name.")],
        ),
    ],
)

DescribeUserScramCredentialsResponse = Message(
    "DescribeUserScramCredentialsResponse",
    api_key=50,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The message-level error code."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The message-level error message, if any.",
        ),
        Field(
            "Results",
            "[]DescribeUserScramCredentialsResult",
            "0+",
            about="The results for descriptions, one per user.",
            fields=[
                Field("User", "string", "0+", about="The user name."),
                Field("ErrorCode", "int16", "0+", about="The user-level error code."),
                Field(
                    "ErrorMessage",
                    "string",
                    "0+",
                    nullable_versions="0+",
                    default=None,
                    about="The user-level error message, if any.",
                ),
                Field(
                    "CredentialInfos",
                    "[]CredentialInfo",
                    "0+",
                    about="The mechanism and iterations of each of the user's credentials.",
                    fields=[
                        Field("Mechanism", "int8", "0+", about="The SCRAM mechanism."),
                        Field("Iterations", "int32", "0+", about="The iteration count."),
                    ],
                ),
            ],
        ),
    ],
)
