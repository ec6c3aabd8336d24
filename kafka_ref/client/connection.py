"""A connection to one broker: frames, correlation ids and version negotiation.

Everything a Kafka client does travels over plain TCP connections, one per broker, as
*frames*: an int32 size, then a request (header + body). The client picks a
`correlation_id` for each request; the broker echoes it in the response. A broker answers
the requests of one connection **strictly in the order they were sent**, so the client
keeps a queue of *in-flight* requests, and the next response always belongs to the oldest
one - the correlation id only confirms it. A mismatch means the stream is out of step, and
the only safe thing to do is to close the connection (Kafka's `NetworkClient`:
"Correlation id for response does not match request").

Several requests may be in flight on one connection at once (*pipelining*, capped by
`max.in.flight.requests.per.connection`): the producer sends its next Produce while the
broker is still writing the previous one. A request with `acks=0` expects no response at
all and never enters the queue.

**Version negotiation.** The first request on a connection is always **ApiVersions**: the
broker lists, per API key, the lowest and highest version it accepts. For every API the
client then uses the *highest version both sides support* (Kafka:
`NodeApiVersions.latestUsableVersion`), so old clients work with new brokers and vice
versa. A broker too old for our ApiVersions version answers with error
UNSUPPORTED_VERSION and a v0 body listing its ranges (KIP-511); we retry at the highest
version it lists.

**Timeouts.** If the oldest in-flight request is not answered within
`request.timeout.ms`, the connection is closed and every request on it fails with
REQUEST_TIMED_OUT; callers decide whether to retry (Kafka does the same: the answer may
still come, and the only way to tell it apart from later answers would be to keep the
connection in a state nobody can reason about).

**Security.** On an SSL or SASL_SSL listener the socket is wrapped in TLS right after
TCP connects (the handshake checks the broker's certificate against the truststore, and
its host name); on a SASL listener, after ApiVersions (the one request a SASL listener
serves before authentication), the connection logs in with SaslHandshake v1 and
SaslAuthenticate rounds (security/sasl_client.py, the same exchange a broker runs with
another broker). Only then is the connection handed out, so every caller above sees an
authenticated connection or an `AuthenticationError` naming mechanism and user (SEC-24).
TLS decrypts whole records: bytes may wait inside the `SSLSocket` after the kernel's
buffer is empty, where `select` cannot see them, so `has_buffered_data` is asked first.

This class is blocking and not thread-safe: one thread uses it (the producer's sender, or
a consumer's or admin's caller). `NetworkClient` (network_client.py) manages one per broker.

Spec rules: CLIENT-1, CLIENT-11, CLIENT-12 (spec/client.md); SEC-24 (spec/security.md).
"""

from __future__ import annotations

import itertools
import logging
import select
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from kafka_ref import __version__
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import (
    APIS,
    ApiKey,
    FrameDecoder,
    UnsupportedVersionError,
    decode_response,
    encode_request,
    peek_correlation_id,
)
from kafka_ref.protocol.messages import ApiVersionsRequest
from kafka_ref.security.client_security import PLAINTEXT, AuthenticationError, ClientSecurity
from kafka_ref.security.plain import AuthenticationFailed
from kafka_ref.security.sasl_client import sasl_exchange

log = logging.getLogger("kafka_ref.client")

# At most this much per read. Over TLS a read returns at most what is left of one TLS record
# (16 KB); any rest of a record stays decrypted in the SSLSocket (`has_buffered_data`).
RECEIVE_BYTES = 1 << 20

# The versions our clients can speak: the protocol registry, except that the producer
# builds record batch v2, which needs Produce v3+ (v0-v2 carry the old message sets),
# AddPartitionsToTxn v4+ is the brokers' own form (KIP-890): clients send at most v3, and
# our clients build the group requests of one group, one coordinator key and one leaving
# member, by topic name, in the classic protocol: FindCoordinator before its batches (v4),
# LeaveGroup before its batches (v3), OffsetFetch before its groups (v8), OffsetCommit
# before the KIP-848 consumer's v9 (GROUP_ID_NOT_FOUND) and v10 (topic ids); our consumer
# names the topics it fetches, which Fetch v13+ does by topic id (KIP-516). Our producer
# speaks transactions v1: Produce v12, EndTxn v5 and TxnOffsetCommit v5 are transactions
# v2's (KIP-890 part 2), which a client sends only to a cluster that finalized it.
_CLIENT_MAX = {
    ApiKey.PRODUCE: 11,
    ApiKey.END_TXN: 4,
    ApiKey.TXN_OFFSET_COMMIT: 4,
    ApiKey.ADD_PARTITIONS_TO_TXN: 3,
    ApiKey.FETCH: 12,
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.LEAVE_GROUP: 2,
    ApiKey.OFFSET_FETCH: 7,
    ApiKey.OFFSET_COMMIT: 8,
}
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    key: (
        max(api.min_version, 3 if key == ApiKey.PRODUCE else 0),
        min(api.max_version, _CLIENT_MAX.get(key, api.max_version)),
    )
    for key, api in APIS.items()
}


class NetworkError(KafkaError):
    """The connection failed or was closed with requests in flight (retriable)."""

    code = ErrorCode.NETWORK_EXCEPTION


class RequestTimedOutError(KafkaError):
    """No response within request.timeout.ms (retriable)."""

    code = ErrorCode.REQUEST_TIMED_OUT


def parse_bootstrap_servers(servers: str | list[str] | tuple[str, ...]) -> list[tuple[str, int]]:
    """'h1:9092,h2:9093' (or a list of 'host:port') -> [(host, port)]; ValueError if bad."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    addresses = []
    for item in (i.strip() for i in items):
        host, sep, port = item.rpartition(":")
        if not item or not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bad bootstrap server {item!r}: expected HOST:PORT")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise ValueError("no bootstrap servers given")
    return addresses


def choose_version(ours: tuple[int, int], theirs: tuple[int, int]) -> int | None:
    """The highest version in both ranges, or None when they do not overlap."""
    low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
    return high if low <= high else None


class ClientRequest:
    """One request and, once answered, its response or error (Kafka's ClientRequest and
    ClientResponse in one). `callback(request)` runs when it completes, in the I/O thread."""

    __slots__ = (
        "api_key",
        "api_version",
        "body",
        "callback",
        "correlation_id",
        "created",
        "error",
        "node_id",
        "response",
    )

    def __init__(
        self,
        node_id: int,
        api_key: int,
        api_version: int,
        correlation_id: int,
        body: Any,
        callback: Callable[[ClientRequest], None] | None,
    ) -> None:
        self.node_id, self.api_key, self.api_version = node_id, api_key, api_version
        self.correlation_id, self.body, self.callback = correlation_id, body, callback
        self.created = time.monotonic()
        self.response: Any = None
        self.error: KafkaError | None = None

    @property
    def done(self) -> bool:
        return self.response is not None or self.error is not None

    def complete(self, response: Any = None, error: KafkaError | None = None) -> None:
        self.response, self.error = response, error
        if error is None and response is None:
            self.response = True  # acks=0: done, with nothing to report
        if self.callback is not None:
            try:
                self.callback(self)
            except Exception:  # a failing callback must not desynchronize the connection
                log.exception("uncaught error in the completion of %s", ApiKey(self.api_key).name)


class BrokerConnection:
    """A blocking TCP connection to one broker, with pipelined requests."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        node_id: int = -1,
        client_id: str = "kafka-ref",
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int = 10_000,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.host, self.port, self.node_id, self.client_id = host, port, node_id, client_id
        self.security = security
        self.request_timeout_ms, self.connect_timeout_ms = request_timeout_ms, connect_timeout_ms
        self.api_versions: dict[int, int] = {}  # api key -> the version we will send
        self.in_flight: deque[ClientRequest] = deque()
        self._sock: socket.socket | None = None
        self._decoder = FrameDecoder()
        self._ids = itertools.count()

    def __repr__(self) -> str:
        return f"BrokerConnection(node {self.node_id} at {self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def fileno(self) -> int:
        return self._sock.fileno() if self._sock is not None else -1

    def has_buffered_data(self) -> bool:
        """Decrypted bytes wait in the TLS layer, unseen by `select`: read them first."""
        return isinstance(self._sock, ssl.SSLSocket) and self._sock.pending() > 0

    def connect(self) -> BrokerConnection:
        """Open the socket, with TLS and SASL as the listener wants, and negotiate versions;
        raises NetworkError if it cannot, AuthenticationError if the broker refuses us."""
        try:
            self._sock = socket.create_connection(
                (self.host, self.port), timeout=self.connect_timeout_ms / 1000
            )
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.security.ssl_context is not None:
                self._sock = self.security.ssl_context.wrap_socket(
                    self._sock, server_hostname=self.host
                )
            self._sock.settimeout(self.request_timeout_ms / 1000)
        except ssl.SSLError as err:  # includes a certificate that fails verification
            self.close()
            raise AuthenticationError(
                f"TLS handshake with {self.host}:{self.port} failed: {err.reason or err}"
            ) from None
        except OSError as err:
            self.close()
            raise NetworkError(
                f"cannot connect to {self.host}:{self.port}: {err.strerror or err}"
            ) from None
        try:
            self._negotiate_versions()
            if self.security.mechanism is not None:
                self._authenticate()
        except BaseException:
            self.close()
            raise
        return self

    def _authenticate(self) -> None:
        """The SASL exchange, at the SaslAuthenticate version both sides speak (SEC-24)."""
        security = self.security
        exchange = sasl_exchange(
            security.sasl_client(), security.username, self.version_for(ApiKey.SASL_AUTHENTICATE)
        )
        try:
            step = next(exchange)
            while True:
                api_key, version, body = step
                step = exchange.send(self.wait(self.send(api_key, body, version=version)))
        except StopIteration:
            return
        except AuthenticationFailed as err:
            raise AuthenticationError(f"{self.host}:{self.port}: {err}") from None

    def _negotiate_versions(self) -> None:
        """ApiVersions first; then the highest common version of every API (CLIENT-1)."""
        version = CLIENT_VERSIONS[ApiKey.API_VERSIONS][1]
        for _ in range(2):
            request = ApiVersionsRequest(
                client_software_name="kafka-ref", client_software_version=__version__
            )
            answer = self.wait(self.send(ApiKey.API_VERSIONS, request, version=version))
            theirs = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            if answer.error_code != ErrorCode.UNSUPPORTED_VERSION:
                break
            # KIP-511: the broker did not know our version; retry at its highest
            supported = theirs.get(ApiKey.API_VERSIONS, (0, 0))
            version = min(version - 1, supported[1])
        if answer.error_code != ErrorCode.NO_ERROR:
            try:
                code = ErrorCode(answer.error_code)
            except ValueError:
                code = ErrorCode.UNKNOWN_SERVER_ERROR
            raise KafkaError(f"ApiVersions failed at {self.host}:{self.port}", code=code)
        self.api_versions = {}
        for key, ours in CLIENT_VERSIONS.items():
            if key in theirs and (chosen := choose_version(ours, theirs[key])) is not None:
                self.api_versions[key] = chosen

    def version_for(self, api_key: int) -> int:
        """The version negotiated for `api_key`; UnsupportedVersionError if there is none."""
        try:
            return self.api_versions[api_key]
        except KeyError:
            raise UnsupportedVersionError(
                f"broker {self.host}:{self.port} supports no version of {ApiKey(api_key).name} "
                f"that this client speaks"
            ) from None

    def send(
        self,
        api_key: int,
        body: Any,
        *,
        version: int | None = None,
        callback: Callable[[ClientRequest], None] | None = None,
        expect_response: bool = True,
    ) -> ClientRequest:
        """Write one request frame; it joins the in-flight queue unless no answer will come."""
        if self._sock is None:
            raise NetworkError(f"not connected to {self.host}:{self.port}")
        version = self.version_for(api_key) if version is None else version
        correlation_id = next(self._ids) & 0x7FFFFFFF
        request = ClientRequest(self.node_id, api_key, version, correlation_id, body, callback)
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        if expect_response:
            self.in_flight.append(request)
        try:
            self._sock.sendall(frame)
        except OSError as err:
            error = NetworkError(f"send to {self.host}:{self.port} failed: {err}")
            self.close(error)
            if not request.done:  # acks=0: it was never in flight, so fail it here
                request.complete(error=error)
            return request
        if not expect_response:
            request.complete()
        return request

    def receive(self, timeout_s: float) -> list[ClientRequest]:
        """Read what has arrived (waiting up to `timeout_s`); return the requests completed."""
        if self._sock is None:
            return []
        if (
            timeout_s > 0
            and not self.has_buffered_data()
            and not select.select([self._sock], [], [], timeout_s)[0]
        ):
            return self.expire()
        try:
            data = self._sock.recv(RECEIVE_BYTES)
        except (BlockingIOError, InterruptedError, TimeoutError, ssl.SSLWantReadError):
            return self.expire()
        except OSError as err:
            return self.close(NetworkError(f"receive from {self.host}:{self.port}: {err}"))
        if not data:
            return self.close(NetworkError(f"{self.host}:{self.port} closed the connection"))
        completed = []
        try:
            for payload in self._decoder.feed(data):
                completed.append(self._complete(payload))
        except KafkaError as err:  # includes every ProtocolError
            return completed + self.close(NetworkError(f"bad response: {err}"))
        return completed + self.expire()

    def _complete(self, payload: bytes) -> ClientRequest:
        if not self.in_flight:
            raise NetworkError("a response arrived with no request in flight")
        request = self.in_flight[0]
        correlation_id = peek_correlation_id(payload)
        if correlation_id != request.correlation_id:  # the stream is out of step (CLIENT-11)
            raise NetworkError(
                f"correlation id {correlation_id} does not match request {request.correlation_id}"
            )
        _, body = decode_response(payload, request.api_key, request.api_version)
        self.in_flight.popleft()
        request.complete(body)
        return request

    def expire(self, now: float | None = None) -> list[ClientRequest]:
        """Close the connection if its oldest request has waited past request.timeout.ms."""
        if not self.in_flight:
            return []
        now = time.monotonic() if now is None else now
        if (now - self.in_flight[0].created) * 1000 < self.request_timeout_ms:
            return []
        return self.close(
            RequestTimedOutError(
                f"no response from {self.host}:{self.port} within {self.request_timeout_ms} ms"
            )
        )

    def wait(self, request: ClientRequest, timeout_s: float | None = None) -> Any:
        """Block until `request` completes; return its response or raise its error.

        Giving up early closes the connection: the answer may still come, and the next
        request's answer would then be read as this one's.
        """
        deadline = time.monotonic() + (
            self.request_timeout_ms / 1000 if timeout_s is None else timeout_s
        )
        while not request.done:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.close(RequestTimedOutError(f"no response from {self.host}:{self.port}"))
                break
            if self.in_flight:  # wake up in time to expire the oldest request
                oldest = self.in_flight[0].created + self.request_timeout_ms / 1000
                remaining = min(remaining, max(oldest - time.monotonic(), 0.001))
            self.receive(remaining)
        if request.error is not None:
            raise request.error
        return request.response

    def request(self, api_key: int, body: Any, timeout_s: float | None = None) -> Any:
        """Send and wait: the simplest way to talk to a broker."""
        return self.wait(self.send(api_key, body), timeout_s)

    def close(self, error: KafkaError | None = None) -> list[ClientRequest]:
        """Close the socket and fail everything still in flight (NetworkError by default)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._decoder = FrameDecoder()
        failed = list(self.in_flight)
        self.in_flight.clear()
        error = error or NetworkError(f"connection to {self.host}:{self.port} closed")
        for request in failed:
            request.complete(error=error)
        return failed
