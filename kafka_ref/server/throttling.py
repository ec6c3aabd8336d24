"""Throttling: client quotas applied to each response as it leaves (KIP-13, KIP-124, KIP-219).

Every answer passes `ApiContext.send` (handlers/context.py); with any quota configured it
passes here first (Kafka does the same in `KafkaApis` per API: `handleProduceRequest`'s
response callback, `handleFetchRequest`'s, and `RequestHelper.sendResponseMaybeThrottle`
for the rest):

* the **request quota** (`request_percentage`, KIP-124) records, for every API, the time a
  handler spent on the request (dequeued to handled, as a percentage of a second);
* a **Produce** records the request's size against `producer_byte_rate`; an acks=0 produce
  is recorded too, it only has no response to carry the throttle time;
* a **Fetch** records its response's size against `consumer_byte_rate` (the response is
  encoded here to know it: file slices count their length, nothing is read). A fetch that
  must be throttled is answered *empty*, with no partitions, and its bytes are unrecorded
  (KIP-219: the client gets nothing it would have to be throttled for); a consumer's fetch
  `max_bytes` is capped by the quota's burst (`max_value_in_window`, in handlers/fetch.py).

The response carries the larger throttle time in `throttle_time_ms` and is sent at once;
the broker then *mutes* the connection, reads nothing from it, for that long (KIP-219;
Kafka's `ThrottledChannel` and the processor's `CHANNEL_THROTTLED` mute state): a client that
ignores the field is throttled all the same, by TCP backpressure. The larger throttle's
manager records it in its `throttle-time` metric.

Exempt, as in Kafka, are requests between brokers (a follower's Fetch, WriteTxnMarkers:
`CLUSTER_ACTION`), and requests made inside the broker (no connection to mute).

Rules: QUOTA-6, QUOTA-7, QUOTA-8.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kafka_ref.protocol.messages import ApiKey, FetchResponse
from kafka_ref.quota.manager import NANOS_TO_PERCENTAGE, ClientQuotaManager, QuotaManagers
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import encode_response

if TYPE_CHECKING:
    from kafka_ref.clock import Clock

USER_PREFIX = "User:"


def quota_user(principal: str) -> str:
    """The user a quota names: the principal's name (`User:alice` -> `alice`)."""
    return principal[len(USER_PREFIX) :] if principal.startswith(USER_PREFIX) else principal


def exempt(request: Request) -> bool:
    """Requests no client quota applies to: brokers' own, and the broker's internal ones."""
    if getattr(request.connection, "mute_for", None) is None:
        return True  # not a client connection
    if request.api_key == ApiKey.WRITE_TXN_MARKERS:
        return True
    return request.api_key == ApiKey.FETCH and request.body.replica_id >= 0


def max_fetch_bytes(quotas: QuotaManagers, request: Request) -> int | None:
    """The most a consumer's fetch may return under its quota (None: no cap)."""
    if not quotas.fetch.enabled:
        return None
    cap = quotas.fetch.max_value_in_window(quota_user(request.principal), request.client_id or "")
    return None if cap is None else int(cap)


def apply_quotas(quotas: QuotaManagers, clock: Clock, request: Request, result: Any) -> Any:
    """Record the request against its client's quotas; the answer to send, with its
    `throttle_time_ms` set, and the connection muted if it is throttled."""
    if exempt(request) or request.connection_closed():
        return result
    user, client_id = quota_user(request.principal), request.client_id or ""
    now_ms = clock.milliseconds()
    thread_ns = (request.local_done_ns or time.monotonic_ns()) - request.dequeued_ns
    request_ms = quotas.request.record_and_get_throttle_ms(
        user, client_id, thread_ns * NANOS_TO_PERCENTAGE, now_ms
    )
    bandwidth_ms, bandwidth = 0, quotas.produce
    if request.api_key == ApiKey.PRODUCE:
        bandwidth_ms = quotas.produce.record_and_get_throttle_ms(
            user, client_id, request.size, now_ms
        )
    elif request.api_key == ApiKey.FETCH and isinstance(result, FetchResponse.cls):
        bandwidth = quotas.fetch
        result, bandwidth_ms = _fetch(
            quotas.fetch, request, result, user, client_id, now_ms, request_ms
        )
    throttle_ms = max(request_ms, bandwidth_ms)
    if throttle_ms <= 0:
        return result
    manager: ClientQuotaManager = bandwidth if bandwidth_ms > request_ms else quotas.request
    manager.throttled(user, client_id, throttle_ms, now_ms)
    request.connection.mute_for(throttle_ms / 1000)
    if hasattr(result, "throttle_time_ms"):
        result.throttle_time_ms = throttle_ms
    return result


def _fetch(
    fetch: ClientQuotaManager,
    request: Request,
    result: Any,
    user: str,
    client_id: str,
    now_ms: int,
    request_ms: int,
) -> tuple[Any, int]:
    """A consumer's fetch response: sent as is (encoded: its size was needed), or, if
    throttled by either quota, replaced by an empty one (KIP-219)."""
    if request_ms > 0:  # throttled anyway: no records go out, so none are counted
        return _empty_fetch(result), 0
    try:
        encoded = encode_response(
            request.api_key, request.api_version, request.correlation_id, result
        )
    except Exception:  # a bug: `ApiContext.send` meets it again and closes the connection
        return result, 0
    throttle_ms = fetch.record_and_get_throttle_ms(user, client_id, encoded.size, now_ms)
    if throttle_ms <= 0:
        return encoded, 0
    fetch.unrecord(user, client_id, encoded.size, now_ms)
    return _empty_fetch(result), throttle_ms


def _empty_fetch(result: Any) -> Any:
    """Kafka's `FetchContext.getThrottledResponse`: no partitions, the same session."""
    return FetchResponse(
        throttle_time_ms=0,
        error_code=result.error_code,
        session_id=result.session_id,
        responses=[],
    )
