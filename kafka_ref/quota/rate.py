"""A rate over sampled windows, as Kafka's metrics library measures it (`SampledStat`, `Rate`).

A quota is a bound on a *rate*: bytes per second, or percent of a handler thread's time. A
rate needs a window: too short and one large request looks like a flood, too long and a
client that was quiet for a minute may then burst for seconds. Kafka keeps `quota.window.num`
(11) samples of `quota.window.size.seconds` (1) each, and measures over all of them
(`org.apache.kafka.common.metrics.stats.SampledStat`):

* **recording** adds the value to the *current* sample; a sample is complete when its
  window has passed, and the next record then moves to the next sample slot (the oldest
  one, reset), so the slots rotate;
* **purging**: a sample whose window started `samples * window` ago or more is obsolete and
  is reset before it is read, so a quiet client's old bytes do not count for ever;
* **measuring** (`Rate.measure`) is the sum of the samples divided by the *window size*:
  the time since the oldest sample started, but never less than `samples - 1` full windows
  (`Rate.windowSize`). Without that floor a client's first 10 ms would be divided by 10 ms,
  and its first request would look like a huge rate. The floor also sets how big a burst
  passes unthrottled: `bound * (samples - 1) * window` (Kafka's `getMaxValueInQuotaWindow`).

`Avg` keeps the same samples and reports the mean of the recorded values (Kafka's
`throttle-time` metric: the average throttle time, two 30-second samples by default).

Times are in milliseconds, as in Kafka, and come from the caller: the rate is a pure
function of what was recorded when, so tests drive it with a fake clock.

Rules: QUOTA-5.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Sample:
    """One window's sum and count (Kafka: `SampledStat.Sample`)."""

    last_window_ms: int
    value: float = 0.0
    event_count: int = 0

    def reset(self, now_ms: int) -> None:
        self.last_window_ms, self.value, self.event_count = now_ms, 0.0, 0


class SampledStat:
    """`samples` rotating windows of `window_ms` each."""

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 2 or window_ms <= 0:
            raise ValueError(
                f"need at least 2 samples of a positive window, not {samples}x{window_ms}"
            )
        self.samples_wanted, self.window_ms = samples, window_ms
        self.samples: list[Sample] = []
        self.current = 0

    def _current(self, now_ms: int) -> Sample:
        if not self.samples:
            self.samples.append(Sample(now_ms))
        return self.samples[self.current]

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current(now_ms)
        if now_ms - sample.last_window_ms >= self.window_ms:  # complete: advance
            self.current = (self.current + 1) % self.samples_wanted
            if self.current >= len(self.samples):
                sample = Sample(now_ms)
                self.samples.append(sample)
            else:
                sample = self.samples[self.current]
                sample.reset(now_ms)
        sample.value += value
        sample.event_count += 1

    def purge_obsolete(self, now_ms: int) -> None:
        expire_age = self.samples_wanted * self.window_ms
        for sample in self.samples:
            if now_ms - sample.last_window_ms >= expire_age:
                sample.reset(now_ms)

    def oldest(self, now_ms: int) -> Sample:
        if not self.samples:
            self.samples.append(Sample(now_ms))
        return min(self.samples, key=lambda s: s.last_window_ms)

    def total(self, now_ms: int) -> float:
        self.purge_obsolete(now_ms)
        return sum(s.value for s in self.samples)


class Rate(SampledStat):
    """The sum over the samples per second of window (Kafka: `Rate` over `SampledTotal`)."""

    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate divides by (Kafka: `Rate.windowSize`)."""
        self.purge_obsolete(now_ms)
        elapsed = now_ms - self.oldest(now_ms).last_window_ms
        full_windows = elapsed // self.window_ms
        minimum = self.samples_wanted - 1
        if full_windows < minimum:  # assume the missing windows were there, and quiet
            elapsed += (minimum - full_windows) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """Units per second."""
        return self.total(now_ms) / (self.window_size_ms(now_ms) / 1000.0)


class Avg(SampledStat):
    """The mean of the values recorded in the samples (Kafka: `Avg`); 0 with none."""

    def measure(self, now_ms: int) -> float:
        self.purge_obsolete(now_ms)
        count = sum(s.event_count for s in self.samples)
        return sum(s.value for s in self.samples) / count if count else 0.0
