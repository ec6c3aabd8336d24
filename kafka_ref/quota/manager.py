"""The quota managers: measure each client's rate and say how long to throttle it.

Kafka's `ClientQuotaManager` (one for Produce, one for Fetch; `ClientRequestQuotaManager`
for the request quota) keeps, per *sensor key* (who shares a rate, entity.py), a `Rate` over
the quota windows (rate.py) and an `Avg` of the throttle times handed out. For each request:

1. **record** the value (the produce request's bytes, the fetch response's bytes, or the
   handler thread's time as a percentage of a second) in the client's rate, *then* measure
   it. Recording first means a client is throttled for what it has already done: the bytes
   are appended, the response is sent, and the *next* requests wait;
2. if the rate O is above the bound T, the **throttle time** is the time it takes, with
   nothing more recorded, for the rate over the window W to come down to T:
   O * W / (W + X) = T, so X = (O - T) / T * W (`ClientQuotaManager.throttleTime`, rounded
   to whole milliseconds). W is the rate's own window size at that moment. The request
   quota caps X at one quota window (`ClientRequestQuotaManager.maxThrottleTimeMs`): a
   request's cost is only known after it ran, and one slow request must not lock a client
   out for long;
3. a Fetch that must be throttled is answered empty (KIP-219), so its bytes are
   **unrecorded** (a negative record of the same size): the client did not get them.

`max_value_in_window` is the largest burst a client can take unthrottled,
`bound * (samples - 1) * window`: the broker caps a fetch's `max_bytes` with it, so a single
response never exceeds what the quota can pay for (Kafka: `getMaxValueInQuotaWindow`).

With no quota of a type configured, its manager records nothing (Kafka: `quotasEnabled`):
the hot path pays one dictionary test. Quotas change live: the bound is looked up at every
record, and a sensor keeps its samples when its bound changes.

Rules: QUOTA-3, QUOTA-5, QUOTA-6.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_ref.quota.entity import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaEntity,
    governing,
    sensor_key,
)
from kafka_ref.quota.rate import Avg, Rate

THROTTLE_TIME_SAMPLES, THROTTLE_TIME_WINDOW_MS = 2, 30_000  # Kafka's default MetricConfig
NANOS_TO_PERCENTAGE = 100.0 / 1e9  # a second of thread time is 100 %


@dataclass
class ClientSensors:
    """One sensor key's measured rate and its throttle-time average."""

    rate: Rate
    throttle_time: Avg


class ClientQuotaManager:
    """Rates and throttle times of one quota type (Produce, Fetch or Request)."""

    def __init__(
        self,
        quota_type: str,
        key: str,
        samples: int,
        window_s: int,
        *,
        max_throttle_ms: int | None = None,
    ) -> None:
        self.quota_type, self.key = quota_type, key  # "Produce", "producer_byte_rate"
        self.samples, self.window_ms = samples, window_s * 1000
        self.max_throttle_ms = max_throttle_ms
        self.overrides: dict[QuotaEntity, float] = {}
        self.sensors: dict[tuple[str, str], ClientSensors] = {}

    @property
    def enabled(self) -> bool:
        return bool(self.overrides)

    def _sensors(self, user: str, client_id: str) -> tuple[ClientSensors, float | None]:
        found = governing(self.overrides, user, client_id)
        key = sensor_key(found[0] if found else None, user, client_id)
        sensors = self.sensors.get(key)
        if sensors is None:
            sensors = ClientSensors(
                Rate(self.samples, self.window_ms),
                Avg(THROTTLE_TIME_SAMPLES, THROTTLE_TIME_WINDOW_MS),
            )
            self.sensors[key] = sensors
        return sensors, found[1] if found else None

    def quota(self, user: str, client_id: str) -> float | None:
        """The bound that applies to (user, client id), None: unlimited."""
        found = governing(self.overrides, user, client_id)
        return found[1] if found else None

    def record_and_get_throttle_ms(
        self, user: str, client_id: str, value: float, now_ms: int
    ) -> int:
        """Record `value` and return how long the client must now wait (0: within quota)."""
        if not self.overrides:
            return 0
        sensors, bound = self._sensors(user, client_id)
        sensors.rate.record(value, now_ms)
        if bound is None:
            return 0
        observed = sensors.rate.measure(now_ms)
        if observed <= bound:
            return 0
        window = sensors.rate.window_size_ms(now_ms)
        throttle = round((observed - bound) / bound * window)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return int(throttle)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch sends no records)."""
        if self.overrides:
            self._sensors(user, client_id)[0].rate.record(-value, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The largest value one request can record without being throttled for sure."""
        bound = self.quota(user, client_id)
        return None if bound is None else bound * (self.samples - 1) * self.window_ms / 1000

    def throttled(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        """Note a throttle handed out (the `throttle-time` metric)."""
        self._sensors(user, client_id)[0].throttle_time.record(throttle_ms, now_ms)

    def metrics(self, now_ms: int) -> list[tuple[str, str, float, float]]:
        """(user, client-id, rate, average throttle ms) per sensor key, for the scrape."""
        return [
            (user, client, s.rate.measure(now_ms), s.throttle_time.measure(now_ms))
            for (user, client), s in sorted(self.sensors.items())
        ]


class QuotaManagers:
    """The three managers and the quota configs they enforce (Kafka: `QuotaManagers`)."""

    def __init__(self, samples: int = 11, window_s: int = 1, store: Any = None) -> None:
        self.produce = ClientQuotaManager("Produce", PRODUCER_BYTE_RATE, samples, window_s)
        self.fetch = ClientQuotaManager("Fetch", CONSUMER_BYTE_RATE, samples, window_s)
        self.request = ClientQuotaManager(
            "Request", REQUEST_PERCENTAGE, samples, window_s, max_throttle_ms=window_s * 1000
        )
        self.all = (self.produce, self.fetch, self.request)
        self.configs: dict[QuotaEntity, dict[str, float]] = {}
        self.store = store  # FileQuotaStore or ZkQuotaStore (store.py); None: nothing stored
        if store is not None:
            self.replace(store.load())

    @property
    def enabled(self) -> bool:
        return bool(self.configs)

    def replace(self, configs: dict[QuotaEntity, dict[str, float]]) -> None:
        """Put a whole new set of quota configs in force (after a change in the store)."""
        self.configs = {e: dict(c) for e, c in configs.items() if c}
        for manager in self.all:
            manager.overrides = {
                e: c[manager.key] for e, c in self.configs.items() if manager.key in c
            }

    def alter(self, entity: QuotaEntity, set_: dict[str, float], remove: tuple[str, ...]) -> None:
        """Store a change, then put the stored configs in force (durable first)."""
        if self.store is None:
            raise RuntimeError("no quota store")
        self.store.alter(entity, set_, remove)
        self.replace(self.store.load())
