"""SaslAuthenticate (API key 36): one SASL token each way, in a Kafka request (KIP-152).

After SaslHandshake v1 the client sends its mechanism's tokens wrapped in SaslAuthenticate
requests, and the broker answers each with its own token. PLAIN needs one round
(`authzid NUL user NUL password`); SCRAM two (client-first / server-first, then
client-final / server-final). A failure is SASL_AUTHENTICATION_FAILED with a message, after
which the broker closes the connection. Wrapping the tokens in requests (instead of v0's
raw frames) is what lets a failure be reported with an error code and message.

Version history (Kafka's JSON comments): v0 first version; v1 adds SessionLifetimeMs
(KIP-368: the client re-authenticates on the same connection before the session ends);
v2 is the first flexible version.

Kafka's definitions: SaslAuthenticateRequest.json, SaslAuthenticateResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

SaslAuthenticateRequest = Message(
    "SaslAuthenticateRequest",
    api_key=36,
    valid_versions="0-2",
    flexible_versions="2+",
    fields=[
        Field("AuthBytes", "bytes", "0+", about="The SASL authentication bytes from the client.")
    ],
)

SaslAuthenticateResponse = Message(
    "SaslAuthenticateResponse",
    api_key=36,
    valid_versions="0-2",
    flexible_versions="2+",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The error message, or null if there was no error.",
        ),
        Field("AuthBytes", "bytes", "0+", about="The SASL authentication bytes from the server."),
        Field(
            "SessionLifetimeMs",
            "int64",
            "1+",
            default=0,
            about="Milliseconds after which only re-authentication can occur (KIP-368).",
        ),
    ],
)
