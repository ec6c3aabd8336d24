"""Helpers for the client unit tests: a scriptable fake broker and metadata builders.

`FakeBroker` listens on a free port in a thread and answers each request frame with what
its `handler(header, body)` returns: a list of whole response frames (possibly empty, or
frames with a wrong correlation id), so tests can make a "broker" misbehave on purpose.
The default handler answers ApiVersions with the `advertise` ranges.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest

from kafka_ref.protocol import ApiKey, FrameDecoder, decode_request, encode_response
from kafka_ref.protocol.messages import (
    ApiVersionsResponse,
    MetadataResponse,
    supported_api_versions,
)


def api_versions(ranges: dict[int, tuple[int, int]], error_code: int = 0) -> Any:
    return ApiVersionsResponse(
        error_code=error_code,
        api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(ranges.items())
        ],
        throttle_time_ms=0,
    )


class FakeBroker:
    def __init__(self, handler: Callable[[Any, Any], list[bytes] | None] | None = None) -> None:
        self.advertise = {key: (lo, hi) for key, lo, hi in supported_api_versions()}
        self.handler = handler
        self.requests: list[tuple[Any, Any]] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._server.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        decoder = FrameDecoder()
        with conn:
            while not self._stop:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                for payload in decoder.feed(data):
                    header, body = decode_request(payload)
                    self.requests.append((header, body))
                    for frame in self.answer(header, body) or []:
                        conn.sendall(frame)

    def answer(self, header: Any, body: Any) -> list[bytes] | None:
        if header.request_api_key == ApiKey.API_VERSIONS:
            return [
                encode_response(
                    ApiKey.API_VERSIONS,
                    header.request_api_version,
                    header.correlation_id,
                    api_versions(self.advertise),
                )
            ]
        if self.handler is not None:
            return self.handler(header, body)
        return None

    def close(self) -> None:
        self._stop = True
        self._server.close()


@pytest.fixture
def fake_broker():
    brokers = []

    def make(handler=None) -> FakeBroker:
        broker = FakeBroker(handler)
        brokers.append(broker)
        return broker

    yield make
    for broker in brokers:
        broker.close()


def metadata_response(
    topics: dict[str, list[int]],
    *,
    brokers: list[tuple[int, str, int]] = ((1, "127.0.0.1", 9092),),
    errors: dict[str, int] | None = None,
    controller_id: int = 1,
) -> Any:
    """A MetadataResponse: topic -> the leader of each partition (-1: none)."""
    M = MetadataResponse
    out = [
        M.MetadataResponseTopic(
            error_code=0,
            name=name,
            is_internal=False,
            partitions=[
                M.MetadataResponsePartition(
                    error_code=0,
                    partition_index=i,
                    leader_id=leader,
                    replica_nodes=[leader],
                    isr_nodes=[leader],
                    offline_replicas=[],
                )
                for i, leader in enumerate(leaders)
            ],
        )
        for name, leaders in topics.items()
    ]
    for name, code in (errors or {}).items():
        out.append(M.MetadataResponseTopic(error_code=code, name=name, partitions=[]))
    return M(
        throttle_time_ms=0,
        brokers=[
            M.MetadataResponseBroker(node_id=i, host=h, port=p, rack=None) for i, h, p in brokers
        ],
        cluster_id="test",
        controller_id=controller_id,
        topics=out,
    )
