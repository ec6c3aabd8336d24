"""The SASL authenticator of one connection (Kafka: `SaslServerAuthenticator`).

On a SASL_PLAINTEXT or SASL_SSL listener a connection must authenticate before it may do
anything (KIP-152). Kafka runs this state machine in the network layer, before requests
reach `KafkaApis`; so does kafka-ref (network.py asks `admit` for every request and hands
SaslHandshake and SaslAuthenticate here):

    start ──ApiVersions──> start                      (answered by KafkaApis as usual)
    start ──SaslHandshake(mechanism)──> authenticate  (v1)  | raw tokens (v0)
    authenticate ──SaslAuthenticate(token)*──> complete     (one per mechanism round)
    complete ──any request──> complete                (the principal rides on the request)
    complete ──SaslHandshake──> authenticate          (re-authentication, KIP-368)
    complete ──SaslHandshake/SaslAuthenticate──> KafkaApis: ILLEGAL_SASL_STATE (no re-auth)

* Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are accepted;
  anything else closes the connection (SEC-6). A SaslAuthenticate before a SaslHandshake
  too.
* SaslHandshake with a mechanism that is not enabled is UNSUPPORTED_SASL_MECHANISM with the
  enabled list, then the connection closes (SEC-7).
* A failed exchange is SASL_AUTHENTICATION_FAILED with a message that names no secret, then
  the connection closes (SEC-7). Nothing about the password is logged.
* After a v0 SaslHandshake the tokens travel as bare size-prefixed frames without a request
  header, as Kafka 0.10 clients send them; a failure then just closes the connection.
* KIP-368: with `connections.max.reauth.ms` > 0 the successful SaslAuthenticate (v1+)
  answers `session_lifetime_ms`; a request other than a re-authentication after the session
  expired closes the connection. The client re-authenticates on the same connection with
  SaslHandshake + SaslAuthenticate; the principal may not change (SEC-9). Without session
  expiry there is no re-authentication: the handshake is answered ILLEGAL_SASL_STATE.

Rules: SEC-6, SEC-7, SEC-9.
"""

from __future__ import annotations

import logging
import time

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, SaslAuthenticateResponse, SaslHandshakeResponse
from kafka_ref.security.listeners import ListenerSecurity
from kafka_ref.security.plain import AuthenticationFailed
from kafka_ref.security.principal import sasl_principal
from kafka_ref.server.response import Response, encode_response

logger = logging.getLogger("kafka_ref.security.sasl_server")

SASL_KEYS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
_BEFORE_AUTH = SASL_KEYS | {ApiKey.API_VERSIONS}


class SaslServerAuthenticator:
    """Authentication state of one connection on a SASL listener."""

    def __init__(self, listener: ListenerSecurity, peer: str) -> None:
        self.listener, self.peer = listener, peer
        self.state = "start"  # start | authenticate | raw | complete
        self.principal: str | None = None  # User:<name> once authenticated
        self.session_expires_ns: int | None = None
        self._server = None  # the mechanism's server for the exchange under way

    @property
    def authenticated(self) -> bool:
        return self.principal is not None and self.state == "complete"

    @property
    def raw_tokens(self) -> bool:
        """After a v0 SaslHandshake the next frame is a bare token, not a request."""
        return self.state == "raw"

    def admit(self, api_key: int) -> str | None:
        """None if a request with this key may proceed; else why the connection closes."""
        if self.state == "complete":
            expired = self.session_expires_ns is not None and time.monotonic_ns() > (
                self.session_expires_ns
            )
            if expired and api_key not in _BEFORE_AUTH:
                return "the SASL session expired (connections.max.reauth.ms)"
            return None
        if api_key not in _BEFORE_AUTH:
            return f"{_api_name(api_key)} request before SASL authentication (KIP-152)"
        if api_key == ApiKey.SASL_AUTHENTICATE and self.state != "authenticate":
            return "SaslAuthenticate before SaslHandshake"
        if api_key == ApiKey.SASL_HANDSHAKE and self.state == "authenticate":
            return "a second SaslHandshake during SASL authentication"
        return None

    def intercepts(self, api_key: int) -> bool:
        """Whether a SASL request is the authenticator's to answer. Once authenticated, only
        a SaslHandshake that starts a re-authentication is, and only when sessions expire
        (Kafka: `maybeBeginServerReauthentication`); KafkaApis answers the others
        ILLEGAL_SASL_STATE."""
        if self.state != "complete":
            return True
        return api_key == ApiKey.SASL_HANDSHAKE and self.session_expires_ns is not None

    def handle(self, request) -> Response:
        """Answer a SaslHandshake or SaslAuthenticate (admitted already)."""
        if request.api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(request)
        return self._authenticate(request)

    def _handshake(self, request) -> Response:
        enabled = list(self.listener.mechanisms)
        mechanism = request.body.mechanism
        if mechanism not in self.listener.mechanisms:
            logger.info(
                "%s asked for SASL mechanism %r; enabled: %s",
                self.peer,
                mechanism,
                ",".join(enabled),
            )
            body = SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
            )
            return self._encode(request, body, close=True)
        self._server = self.listener.mechanisms[mechanism]()
        self.state = "authenticate" if request.api_version >= 1 else "raw"
        return self._encode(
            request, SaslHandshakeResponse(error_code=ErrorCode.NO_ERROR, mechanisms=enabled)
        )

    def _authenticate(self, request) -> Response:
        try:
            token = self._evaluate(bytes(request.body.auth_bytes))
        except AuthenticationFailed as err:
            body = SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                error_message=str(err),
                auth_bytes=b"",
            )
            return self._encode(request, body, close=True)
        lifetime_ms = self._session_lifetime_ms() if self.authenticated else 0
        body = SaslAuthenticateResponse(
            error_code=ErrorCode.NO_ERROR,
            error_message=None,
            auth_bytes=token,
            session_lifetime_ms=lifetime_ms,
        )
        return self._encode(request, body)

    def raw_token(self, frame: bytes) -> Response:
        """A bare token after a v0 handshake: the answer is a bare token too."""
        try:
            token = self._evaluate(frame)
        except AuthenticationFailed:  # v0 has no way to say why: close (Kafka does the same)
            return Response([b""], close_after=True)
        return Response([len(token).to_bytes(4, "big"), token])

    def _evaluate(self, token: bytes) -> bytes:
        """Run one round of the mechanism; on its last, check and set the principal."""
        server = self._server
        assert server is not None
        try:
            answer = server.evaluate(token)
        except AuthenticationFailed as err:
            logger.info(
                "SASL %s authentication from %s failed: %s", server.mechanism, self.peer, err
            )
            raise
        if server.complete:
            principal = sasl_principal(server.authorization_id)
            if self.principal is not None and principal != self.principal:
                logger.info(
                    "%s re-authenticated as %s, not %s", self.peer, principal, self.principal
                )
                raise AuthenticationFailed(
                    f"Cannot change principals during re-authentication from {self.principal}"
                    f": {principal}"
                )
            if self.principal is None:
                logger.info("%s authenticated as %s (%s)", self.peer, principal, server.mechanism)
            self.principal, self.state, self._server = principal, "complete", None
        return answer

    def _session_lifetime_ms(self) -> int:
        """KIP-368: when the session ends; 0 when connections.max.reauth.ms is 0."""
        lifetime_ms = self.listener.reauth_ms
        self.session_expires_ns = (
            time.monotonic_ns() + lifetime_ms * 1_000_000 if lifetime_ms > 0 else None
        )
        return lifetime_ms

    @staticmethod
    def _encode(request, body, *, close: bool = False) -> Response:
        response = encode_response(
            request.api_key, request.api_version, request.correlation_id, body
        )
        response.close_after = close
        return response


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"
