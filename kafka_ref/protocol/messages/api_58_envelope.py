"""Envelope (API key 58, KIP-590): a broker forwards a client's request to the controller.

In KRaft the active controller decides every change to the cluster's metadata; a client
asks any broker. The broker does not decide: it wraps the client's request, header and
body as the client sent them, in an Envelope with who the client is (its principal, in
Kafka's `DefaultPrincipalData` encoding, and its address) and sends it to the active
controller, which answers the inner request as if the client had asked it and wraps the
answer in the EnvelopeResponse. The broker hands the inner response to the client as it
is: it carries the client's own correlation id. An error of the envelope itself (the
controller is not active any more: NOT_CONTROLLER) is in the EnvelopeResponse's ErrorCode.

Version history: v0 only, flexible.

Kafka's definitions: EnvelopeRequest.json, EnvelopeResponse.json, DefaultPrincipalData.json.
"""

from kafka_ref.protocol.schema import Field, Message

EnvelopeRequest = Message(
    "EnvelopeRequest",
    api_key=58,
    valid_versions="0",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("RequestData", "bytes", "0+", about="The embedded request header and data."),
        Field(
            "RequestPrincipal",
            "bytes",
            "0+",
            nullable_versions="0+",
            about="Value of the initial client principal when the request is redirected by a "
            "broker.",
        ),
        Field("ClientHostAddress", "bytes", "0+", about="The original client's address in bytes."),
    ],
)

EnvelopeResponse = Message(
    "EnvelopeResponse",
    api_key=58,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "ResponseData",
            "bytes",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The embedded response header and data.",
        ),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
    ],
)

DefaultPrincipalData = Message(
    "DefaultPrincipalData",
    api_key=None,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("Type", "string", "0+", about="The principal type."),
        Field("Name", "string", "0+", about="The principal name."),
        Field(
            "TokenAuthenticated",
            "bool",
            "0+",
            about="Whether the principal was authenticated by a delegation token on the "
            "forwarding broker.",
        ),
    ],
)
