"""SaslHandshake (API key 17): the client names the SASL mechanism it wants (KIP-43, KIP-152).

On a SASL_PLAINTEXT or SASL_SSL listener a client must authenticate before anything else.
It sends ApiVersions (optional) and then SaslHandshake with a mechanism name (`PLAIN`,
`SCRAM-SHA-256`, `SCRAM-SHA-512`); the broker answers NONE and its enabled mechanisms, or
UNSUPPORTED_SASL_MECHANISM with the same list, so the client can say which it could use.
The tokens of the mechanism itself then travel in SaslAuthenticate requests (v1, KIP-152),
or, after a v0 handshake, as raw size-prefixed frames with no request header (Kafka 0.10's
way, kept for old clients).

Version history (Kafka's JSON comments): v0 the tokens follow as raw frames; v1 the tokens
follow in SaslAuthenticate. Neither is flexible.

Kafka's definitions: SaslHandshakeRequest.json, SaslHandshakeResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

SaslHandshakeRequest = Message(
    "SaslHandshakeRequest",
    api_key=17,
    valid_versions="0-1",
    flexible_versions="none",
    fields=[Field("Mechanism", "string", "0+", about="The SASL mechanism chosen by the client.")],
)

SaslHandshakeResponse = Message(
    "SaslHandshakeResponse",
    api_key=17,
    valid_versions="0-1",
    flexible_versions="none",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
        Field("Mechanisms", "[]string", "0+", about="The mechanisms enabled in the server."),
    ],
)
