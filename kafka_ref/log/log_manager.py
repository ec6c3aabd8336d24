"""The log manager: every partition log in one data directory, opened and closed safely.

A broker stores its partitions in a *data directory* (`log.dirs`), one subdirectory per
partition, plus a few files at the root (Kafka's `LogManager`):

    <data-dir>/
        orders-0/                          a partition log (log.py)
        orders-1/
        my-topic-with-dashes-12/           topic "my-topic-with-dashes", partition 12
        recovery-point-offset-checkpoint   checkpoints.py
        log-start-offset-checkpoint
        .kafka_cleanshutdown               present only between a clean stop and a start

A partition directory is `<topic>-<partition>`. Topic names may contain dashes, so the
partition is what follows the *last* dash (DUR-12).

**Startup.** If `.kafka_cleanshutdown` exists, the last run closed every log cleanly, so no
recovery is needed (DUR-6). The marker is removed at once (and the removal fsynced), so a
crash during this run makes the next start recover. The two checkpoints give each log its
recovery point and log start offset; an unreadable checkpoint is reported and treated as
empty, which is safe: recovery starts from the beginning (DUR-8). Anything in the data
directory that is not a partition directory or a known file is reported with a warning and
left alone: the log manager never deletes what it does not understand (DUR-10).

**Running.** `get_or_create_log` opens or creates a log; `checkpoint()` writes both
checkpoints (Kafka does so every `log.flush.offset.checkpoint.interval.ms`); `flush_logs()`
is the periodic flush task (flush.ms, and segments rolled but not yet fsynced).

**Shutdown.** `close()` flushes and closes every log, writes the checkpoints (every recovery
point is now the log end offset), and only then writes the clean-shutdown marker.

Rules: DUR-6, DUR-8, DUR-10, DUR-12.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable

from kafka_ref.clock import Clock, SystemClock
from kafka_ref.config import LogConfig
from kafka_ref.files import fsync_directory, write_atomically
from kafka_ref.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    OffsetCheckpointFile,
)
from kafka_ref.log.log import Log

logger = logging.getLogger("kafka_ref.log.log_manager")

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_DELETE_DIR = re.compile(r".+-\d+\.[0-9a-f]{32}-delete")  # Kafka: <tp>.<uuid>-delete
# Root files kafka-ref or Kafka itself may keep next to the partition directories.
_KNOWN_ROOT_FILES = {
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    "cleaner-offset-checkpoint",
    "meta.properties",
    "bootstrap.checkpoint",
}

TopicPartition = tuple[str, int]


def parse_topic_partition(name: str) -> TopicPartition | None:
    """("my-topic", 3) from "my-topic-3"; None when `name` is not a partition directory."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isascii() or not partition.isdigit():
        return None
    if not _TOPIC.fullmatch(topic) or topic in (".", ".."):
        return None
    return topic, int(partition)


def log_dir_name(topic: str, partition: int) -> str:
    if not _TOPIC.fullmatch(topic) or topic in (".", "..") or partition < 0:
        raise ValueError(f"invalid topic-partition {topic!r} {partition}")
    return f"{topic}-{partition}"


class LogManager:
    """The logs of one data directory (Kafka: `LogManager`). Opens them on construction."""

    def __init__(
        self,
        data_dir: str | os.PathLike,
        default_config: LogConfig | None = None,
        clock: Clock | None = None,
        *,
        topic_config: Callable[[str], LogConfig | None] | None = None,
    ) -> None:
        self.data_dir = os.path.abspath(os.fspath(data_dir))
        self.default_config = default_config or LogConfig()
        self.clock = clock or SystemClock()
        self._topic_config = topic_config or (lambda topic: None)
        self.logs: dict[TopicPartition, Log] = {}
        self.stray_paths: list[str] = []
        os.makedirs(self.data_dir, exist_ok=True)
        self._recovery_points = OffsetCheckpointFile(self._root(RECOVERY_POINT_CHECKPOINT))
        self._log_starts = OffsetCheckpointFile(self._root(LOG_START_OFFSET_CHECKPOINT))
        marker = self._root(CLEAN_SHUTDOWN_FILE)
        self.had_clean_shutdown = os.path.exists(marker)
        if self.had_clean_shutdown:
            os.unlink(marker)  # from now on, a crash means recovery at the next start
            fsync_directory(self.data_dir)
        self._load_logs()

    def _root(self, name: str) -> str:
        return os.path.join(self.data_dir, name)

    def _read_checkpoint(self, checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
        try:
            return checkpoint.read()
        except CheckpointError as err:
            logger.error("%s; ignoring it (logs recover from their start)", err)
            return {}

    def _load_logs(self) -> None:
        recovery_points = self._read_checkpoint(self._recovery_points)
        log_starts = self._read_checkpoint(self._log_starts)
        for name in sorted(os.listdir(self.data_dir)):
            path = self._root(name)
            tp = parse_topic_partition(name) if os.path.isdir(path) else None
            if tp is None:
                if os.path.isdir(path) and _DELETE_DIR.fullmatch(name):
                    logger.info("finishing the deletion of %s", path)
                    shutil.rmtree(path, ignore_errors=True)
                elif name not in _KNOWN_ROOT_FILES and not name.endswith(".tmp"):
                    logger.warning("ignoring %s: not a partition log directory", path)
                    self.stray_paths.append(path)
                continue
            self.logs[tp] = Log.open(
                path,
                self.config_for(tp[0]),
                self.clock,
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=log_starts.get(tp),
                clean_shutdown=self.had_clean_shutdown,
            )
        logger.info(
            "loaded %d logs from %s (%s shutdown)",
            len(self.logs),
            self.data_dir,
            "clean" if self.had_clean_shutdown else "unclean",
        )

    def config_for(self, topic: str) -> LogConfig:
        return self._topic_config(topic) or self.default_config

    # ------------------------------------------------------------------ logs
    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created empty (offset 0) if it does not exist yet."""
        log = self.logs.get((topic, partition))
        if log is None:
            path = self._root(log_dir_name(topic, partition))
            log = Log.open(path, config or self.config_for(topic), self.clock)
            fsync_directory(self.data_dir)
            self.logs[(topic, partition)] = log
            logger.info("created log %s", path)
        return log

    def delete_log(self, topic: str, partition: int) -> bool:
        """Delete a partition's log: rename the directory aside (atomic), then remove it."""
        log = self.logs.pop((topic, partition), None)
        if log is None:
            return False
        log.close()
        doomed = f"{log.dir}.{uuid.uuid4().hex}-delete"
        os.replace(log.dir, doomed)  # a crash now leaves a -delete dir the next start removes
        fsync_directory(self.data_dir)
        shutil.rmtree(doomed, ignore_errors=True)
        logger.info("deleted log %s-%d", topic, partition)
        return True

    # ------------------------------------------------------------------ durability
    def checkpoint(self) -> None:
        """Write every log's recovery point and log start offset (atomically)."""
        self._recovery_points.write({tp: log.recovery_point for tp, log in self.logs.items()})
        self._log_starts.write({tp: log.log_start_offset for tp, log in self.logs.items()})

    def flush_logs(self) -> int:
        """The periodic flush: flush.ms, and rolled segments not yet fsynced. Returns count."""
        return sum(1 for log in self.logs.values() if log.maybe_flush())

    def close(self) -> None:
        """Flush and close every log, checkpoint, then write the clean-shutdown marker."""
        for log in self.logs.values():
            log.close()
        self.checkpoint()
        write_atomically(self._root(CLEAN_SHUTDOWN_FILE), b"")
        logger.info("closed %d logs cleanly in %s", len(self.logs), self.data_dir)
        self.logs.clear()
