"""The broker's periodic work (Kafka: the jobs `KafkaServer` hands its `KafkaScheduler`).

A broker does more than answer requests. Between them, on the same event loop, it runs a
handful of jobs, each every few seconds or minutes:

* the **log flusher** (`log.flush.scheduler.interval.ms`) flushes each log whose
  `flush.ms` / `flush.messages` are due (DUR-9);
* the **checkpoints** (`log.flush.offset.checkpoint.interval.ms`): recovery points and log
  start offsets, so that a restart after a crash recovers only what came after them;
* **retention** (`log.retention.check.interval.ms`, Kafka's `LogManager.cleanupLogs`):
  old segments deleted by time, size and start offset, never past the high watermark
  (BROKER-42, RET-7);
* the **cleaner** (`log.cleaner.backoff.ms`, Kafka's `LogCleaner`): one compaction pass
  over the compacted logs, never past an open transaction (COMPACT-25);
* the **ISR expiration** (`replica.lag.time.max.ms` / 2, Kafka's `isr-expiration`): a
  leader drops followers that stopped catching up (ISR-3);
* the **high-watermark checkpoint** (`replica.high.watermark.checkpoint.interval.ms`);
* the **producer id expiration** (`producer.id.expiration.check.interval.ms`): producers
  idle for `producer.id.expiration.ms` are forgotten (IDEM-14);
* the **offsets expiration** (`offsets.retention.check.interval.ms`): committed offsets of
  empty groups past `offsets.retention.minutes` go (the group coordinator's job).

A job that fails is logged and runs again at its next period: one bad log must not stop
the flusher for every other. An interval of 0 turns a job off. The cleaner's task is
restarted when `log.cleaner.backoff.ms` changes live (CONFIG-6).

Rules: BROKER-42, COMPACT-25, DUR-9, IDEM-14, ISR-3, REPL-10, RET-7.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.clock import Clock
from kafka_ref.log.cleaner_manager import LogCleaner
from kafka_ref.log.log_manager import LogManager
from kafka_ref.log.retention import LogRetention
from kafka_ref.server.replica_manager import ReplicaManager

logger = logging.getLogger("kafka_ref.server.broker")


class BrokerTasks:
    """The periodic jobs of one broker, as asyncio tasks on its loop."""

    def __init__(
        self,
        config: Any,
        clock: Clock,
        log_manager: LogManager,
        replica_manager: ReplicaManager,
        run_offset_expiration: Callable[[], object],
    ) -> None:
        self.config, self.clock = config, clock
        self.log_manager, self.replica_manager = log_manager, replica_manager
        self.run_offset_expiration = run_offset_expiration
        self._tasks: list[asyncio.Task] = []
        self._cleaner_task: asyncio.Task | None = None
        self._cleaner = LogCleaner()

    def start(self) -> None:
        c = self.config
        self._every("log-flusher", c["log.flush.scheduler.interval.ms"], self.flush_logs)
        interval = c["log.flush.offset.checkpoint.interval.ms"]
        self._every("checkpoint", interval, self.log_manager.checkpoint)
        self._every("log-retention", c["log.retention.check.interval.ms"], self.run_retention)
        self.restart_cleaner()
        interval = c["replica.lag.time.max.ms"] // 2  # Kafka's isr-expiration task (ISR-3)
        self._every("isr-expiration", interval, self.replica_manager.shrink_isrs)
        interval = c["replica.high.watermark.checkpoint.interval.ms"]
        checkpoint_hws = self.replica_manager.checkpoint_high_watermarks
        self._every("highwatermark-checkpoint", interval, checkpoint_hws)
        interval = c["producer.id.expiration.check.interval.ms"]
        self._every("producer-id-expiration", interval, self.expire_producer_ids)
        interval = c["offsets.retention.check.interval.ms"]
        self._every("group-metadata-manager", interval, self.run_offset_expiration)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._cleaner_task = None

    def restart_cleaner(self) -> None:
        """The cleaner's task, (re)started with the `log.cleaner.backoff.ms` in force."""
        if self._cleaner_task is not None:
            self._cleaner_task.cancel()
            self._tasks.remove(self._cleaner_task)
            self._cleaner_task = None
        if self.config["log.cleaner.enable"]:
            interval = max(self.config["log.cleaner.backoff.ms"], 100)
            self._cleaner_task = self._every("log-cleaner", interval, self.run_cleaner)

    def _every(self, name: str, interval_ms: int, job: Callable[[], object]) -> asyncio.Task | None:
        if interval_ms <= 0:
            return None

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                try:
                    job()
                except Exception:  # a failing job is logged and retried next period
                    logger.exception("periodic task %s failed", name)

        task = asyncio.get_running_loop().create_task(loop(), name=name)
        self._tasks.append(task)
        return task

    # ------------------------------------------------------------------ the jobs
    def flush_logs(self) -> int:
        return self.log_manager.flush_logs()

    def run_retention(self) -> int:
        """Kafka's `LogManager.cleanupLogs`: retention for every partition, bounded by HW."""
        now, deleted = self.clock.milliseconds(), 0
        for partition in self.replica_manager.all_partitions():
            result = LogRetention.run(partition.log, now, high_watermark=partition.high_watermark)
            deleted += result.segments_deleted
        return deleted

    def run_cleaner(self) -> int:
        """One cleaner pass over the compacted partitions (Kafka: `LogCleaner`)."""
        now, cleaned = self.clock.milliseconds(), 0
        for partition in self.replica_manager.all_partitions():
            if partition.log.config.compact:
                result = self._cleaner.clean(  # never past an open transaction (COMPACT-25)
                    partition.log, now, max_offset=partition.last_stable_offset
                )
                cleaned += int(result.cleaned)
        return cleaned

    def expire_producer_ids(self) -> int:
        """Forget producers idle for producer.id.expiration.ms (Kafka:
        `removeExpiredProducers`, IDEM-14). Returns how many were forgotten."""
        now, limit = self.clock.milliseconds(), self.config["producer.id.expiration.ms"]
        return sum(
            len(partition.log.producer_state.remove_expired_producers(now, limit))
            for partition in self.replica_manager.all_partitions()
        )
