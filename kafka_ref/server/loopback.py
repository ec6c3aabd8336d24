"""A broker's requests to itself, without a socket.

The transaction coordinator sends WriteTxnMarkers to every partition leader, and a
partition leader sends AddPartitionsToTxn `verify_only` to a transaction coordinator
(server/inter_broker_channel.py). Often the other end is this very broker: on one broker,
always. Kafka sends those requests over a network connection to itself as well; kafka-ref
hands them to its own handlers instead. A round trip through the kernel costs the broker's
one event loop several turns, and a transaction of a thousand records to eight partitions
needs eight verifications and a marker request, each on the path of the producer.

Nothing else changes: the request is encoded into the frame a socket would carry, decoded
into a `Request` as the network layer does, and run by the same handler (`KafkaApis.handle`:
the same checks, the same purgatory, the same timeouts); its answer is the response frame,
decoded as the sender decodes any response. The request has no listener
(`Request.listener_name` is None) and the broker's own host.

The answer comes by callback, **at once when the handler answers at once**. That is the
point on one broker: when EndTxn's PrepareCommit is logged, the coordinator answers, then
sends its markers (TXN-12) in the event loop's next turn, which writes that answer first
(server/txn_adapter.py); the handler writes the markers at once, and CompleteCommit is
logged in that same turn, before the broker reads another request. The producer's next
transaction then never finds the previous one still completing, which would cost it a
CONCURRENT_TRANSACTIONS and a retry 20 ms later. Verifications are answered in the order
they were asked, so a producer's batches are appended in the order they came
(server/add_partitions_manager.py). A handler that must wait (markers replicated to
followers, in a cluster) answers later, from the purgatory, like any other.

Rules: TXN-24.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from kafka_ref.protocol import decode_request, decode_response, encode_request
from kafka_ref.server.request_channel import Request

OnResponse = Callable[[Any], None]  # a response body, or a ConnectionError


class LoopbackConnection:
    """The `Connection` of one request a broker makes to itself: no socket; the decoded
    answer, or a ConnectionError if the handler closes the connection, goes to `on_response`."""

    def __init__(self, name: str, api_key: int, version: int, on_response: OnResponse) -> None:
        self.name, self.api_key, self.version = name, api_key, version
        self.on_response, self.closed = on_response, False
        self.request: Request | None = None
        self._answered = False

    def on_response_ready(self) -> None:
        assert self.request is not None
        frame = self.request.response
        if frame is None:  # "no response" is for acks=0 produce only
            return self._answer(ConnectionError("no response"))
        self._answer(
            decode_response(memoryview(frame.to_bytes())[4:], self.api_key, self.version)[1]
        )

    def close(self, reason: str) -> None:
        self.closed = True
        self._answer(ConnectionError(f"closed: {reason}"))

    def _answer(self, result: Any) -> None:
        if not self._answered:
            self._answered = True
            self.on_response(result)


class Loopback:
    """Runs the requests addressed to broker `node_id`, this broker, through `handle`."""

    def __init__(self, node_id: int, host: str, handle: Callable[[Request], None]) -> None:
        self.node_id, self.handle = node_id, handle
        self.name = f"{host}:loopback"  # Request.host: the broker's own
        self._ids = itertools.count(1)

    def send(
        self, api_key: int, version: int, body: Any, client_id: str, on_response: OnResponse
    ) -> None:
        """Handle `body` here; `on_response` gets the decoded response body, or a
        ConnectionError, now or when the handler answers."""
        frame = encode_request(api_key, version, next(self._ids), client_id, body)
        header, decoded = decode_request(memoryview(frame)[4:])
        connection = LoopbackConnection(self.name, api_key, version, on_response)
        connection.request = Request(connection, header, decoded, len(frame))
        self.handle(connection.request)
