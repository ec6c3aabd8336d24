"""SaslHandshake and SaslAuthenticate where no authentication is expected.

During authentication both requests are answered by the connection's authenticator in the
network layer (server/sasl_server.py) and never reach `KafkaApis`. They arrive here on a
PLAINTEXT or SSL listener, where there is nothing to authenticate, and on a SASL connection
that has authenticated and may not re-authenticate (no `connections.max.reauth.ms`):
Kafka's `KafkaApis.handleSaslHandshakeRequest` and `handleSaslAuthenticateRequest` answer
ILLEGAL_SASL_STATE, and so does kafka-ref (SEC-6, SEC-9). A client configured for SASL
against a PLAINTEXT port learns its mistake in one line instead of waiting.

Rules: SEC-6, SEC-9.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


def handle_sasl_handshake(apis: ApiContext, request: Request) -> Any:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


def handle_sasl_authenticate(apis: ApiContext, request: Request) -> Any:
    return SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        auth_bytes=b"",
        error_message=f"no SASL authentication in progress (listener {request.listener_name})",
    )
