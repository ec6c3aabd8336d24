"""The log manager: every partition log of the broker's data directories, opened and closed safely.

A broker stores its partitions in one or more *data directories* (`log.dirs=/a,/b,/c`),
one subdirectory per partition, plus a few files at the root of every directory (Kafka's
`LogManager` keeps them per log dir):

    <log-dir>/
        orders-0/                          a partition log (log.py)
        orders-1/
        my-topic-with-dashes-12/           topic "my-topic-with-dashes", partition 12
        meta.properties                    broker id and cluster id (the metadata layer)
        recovery-point-offset-checkpoint   checkpoints.py, for the partitions of this dir
        log-start-offset-checkpoint
        replication-offset-checkpoint      the HWs (the replica manager)
        cleaner-offset-checkpoint          the compaction progress (cleaner_manager.py)
        .kafka_cleanshutdown               present only between a clean stop and a start;
                                           a KRaft broker's epoch inside (KIP-966)

A partition directory is `<topic>-<partition>`. Topic names may contain dashes, so the
partition is what follows the *last* dash (DUR-12).

**Several directories** (DUR-13, Kafka's "JBOD"). Each directory is independent: its own
checkpoints, its own clean-shutdown marker (a directory whose marker is missing recovers
its logs, the others do not). A partition lives in exactly one directory: a new one goes
to the directory holding the *fewest partitions*, ties broken by the order of `log.dirs`
(Kafka's `LogManager.nextLogDirs`). A partition found in two directories at startup is an
error: the broker cannot know which copy is right (Kafka: "Duplicate log directories").
A directory listed twice, or that cannot be created or is not a writable directory, stops
the startup with `LogDirError` (Kafka would mark it offline and run on the others as long
as one is left; kafka-ref refuses to start).

**Startup.** If `.kafka_cleanshutdown` exists, the last run closed every log cleanly, so no
recovery is needed (DUR-6). The marker is removed at once (and the removal fsynced), so a
crash during this run makes the next start recover. A KRaft broker writes its broker
epoch into the marker, `{"version":0,"brokerEpoch":N}` as Kafka's
`CleanShutdownFileHandler` does, and the next start reads it back
(`previous_broker_epoch`, -1 unless every directory holds the same one): the broker sends
it in its BrokerRegistration, so that the controller tells a clean restart from an unclean
one (KBROKER-20). The two checkpoints give each log its
recovery point and log start offset; an unreadable checkpoint is reported and treated as
empty, which is safe: recovery starts from the beginning (DUR-8). Anything in the data
directory that is not a partition directory or a known file is reported with a warning and
left alone: the log manager never deletes what it does not understand (DUR-10).

A broker's logs keep producer state (idempotence and transactions): each is opened with a
`ProducerStateManager` plugged in (producer_state.py, LOG-19).

**Running.** `get_or_create_log` opens or creates a log; `checkpoint()` writes both
checkpoints (Kafka does so every `log.flush.offset.checkpoint.interval.ms`); `flush_logs()`
is the periodic flush task (flush.ms, and segments rolled but not yet fsynced).

**A failing disk** (DUR-15). A write that fails (a full disk: ENOSPC) fails that append
with KAFKA_STORAGE_ERROR and loses nothing acknowledged (DUR-1, DUR-2). It is reported with
`report_storage_failure`: at ERROR, naming the directory and its free space, once per
directory and then at most once a minute with the count of failures in between, so that an
operator sees it at once and a full disk does not flood the log with one line per request.

**A failed directory** (DUR-16, KIP-112). Any other I/O error in a directory while the
broker runs (EIO, the directory gone or replaced, a read-only remount) means the disk can
no longer be trusted: `maybe_add_offline_log_dir` (Kafka's `LogDirFailureChannel`) marks
the directory *offline* once, drops its logs (their file handles closed, errors ignored:
the disk is gone) and tells the listeners (the replica manager, which takes the partitions
offline and tells the controller). The other directories keep serving: new partitions go
only to online directories, checkpoints and the clean-shutdown marker are written only
there. When no directory is left online, the broker cannot serve anything and stops
(`all_dirs_offline`). A full disk (ENOSPC, EDQUOT) is not a failed directory: deleting
data repairs it, so it stays a failed append (DUR-15); `is_log_dir_failure` tells them
apart.

**Shutdown.** `close()` flushes and closes every log, writes the checkpoints (every recovery
point is now the log end offset), and only then writes the clean-shutdown markers.

Rules: DUR-6, DUR-8, DUR-10, DUR-12, DUR-13, DUR-15, DUR-16, KBROKER-20.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable

from kafka_ref.clock import Clock, SystemClock
from kafka_ref.common import TopicPartition
from kafka_ref.config import LogConfig
from kafka_ref.errors import KafkaStorageError
from kafka_ref.files import fsync_directory, write_atomically
from kafka_ref.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    OffsetCheckpointFile,
)
from kafka_ref.log.log import Log
from kafka_ref.log.producer_state import ProducerStateManager
from kafka_ref.metrics.recorders import LatencyHistogram

logger = logging.getLogger("kafka_ref.log.log_manager")

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
NO_BROKER_EPOCH = -1  # no epoch in the marker: not a KRaft broker's, or not a clean stop
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_DELETE_DIR = re.compile(r".+-\d+\.[0-9a-f]{32}-delete")  # Kafka: <tp>.<uuid>-delete
# Root files kafka-ref or Kafka itself may keep next to the partition directories.
# Kafka: Topic.CLUSTER_METADATA_TOPIC_NAME. Its partition directory in a log dir is the
# metadata log a KRaft node's RaftManager keeps (kafka_ref/raft/kafka_raft_log.py).
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
_KNOWN_ROOT_FILES = {
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    "cleaner-offset-checkpoint",
    "meta.properties",
    "bootstrap.checkpoint",
    "__scram_credentials.json",  # security/credentials.py
    "__acls.json",  # security/authorizer.py
    "__client_quotas.json",  # quota/store.py
}

LogDirs = str | os.PathLike | Iterable[str | os.PathLike]


STORAGE_FAILURE_REPORT_INTERVAL_MS = 60_000  # one ERROR line per directory and minute at most


class LogDirError(KafkaStorageError):
    """The data directories cannot be used as configured or as found: the broker stops."""


_FULL_DISK = (errno.ENOSPC, errno.EDQUOT)


def is_log_dir_failure(err: BaseException) -> bool:
    """Whether `err` (an OSError, or a storage error raised from one) means the directory
    failed (DUR-16), rather than the disk being full (DUR-15) or the data being invalid."""
    cause = err if isinstance(err, OSError) else err.__cause__
    return isinstance(cause, OSError) and cause.errno not in _FULL_DISK


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


def create_and_validate_log_dirs(log_dirs: LogDirs) -> tuple[str, ...]:
    """The directories as absolute paths, each created if missing (Kafka's
    `createAndValidateLogDirs`). A directory named twice, or one that cannot be created or
    written, is a `LogDirError`: kafka-ref refuses to start rather than run without it."""
    if isinstance(log_dirs, (str, os.PathLike)):
        log_dirs = [log_dirs]
    dirs = tuple(os.path.abspath(os.fspath(d)) for d in log_dirs)
    if not dirs:
        raise LogDirError("no log directory configured (log.dirs)")
    seen: dict[str, str] = {}
    for path in dirs:
        real = os.path.realpath(path)  # /a and a symlink to /a are the same directory
        if real in seen:
            raise LogDirError(f"Duplicate log directory found: {seen[real]} and {path}")
        seen[real] = path
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as err:
            raise LogDirError(f"Failed to create data directory {path}: {err}") from None
        if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            raise LogDirError(f"Failed to validate data directory {path}: not writable")
    return dirs


def read_broker_epoch(marker: str) -> int:
    """The broker epoch a clean-shutdown marker holds, -1 if none (an empty marker, one
    that does not parse; Kafka: `CleanShutdownFileHandler.read`)."""
    try:
        with open(marker, encoding="utf-8") as f:
            epoch = json.load(f)["brokerEpoch"]
    except (OSError, ValueError, KeyError, TypeError):
        return NO_BROKER_EPOCH
    return epoch if isinstance(epoch, int) and epoch >= 0 else NO_BROKER_EPOCH


class LogManager:
    """The logs of the data directories (Kafka: `LogManager`). Opens them on construction.

    `log_dirs` is one directory or a list of them (`log.dirs`)."""

    def __init__(
        self,
        log_dirs: LogDirs,
        default_config: LogConfig | None = None,
        clock: Clock | None = None,
        *,
        topic_config: Callable[[str], LogConfig | None] | None = None,
    ) -> None:
        self.log_dirs = create_and_validate_log_dirs(log_dirs)
        self.default_config = default_config or LogConfig()
        self.clock = clock or SystemClock()
        self._topic_config = topic_config or (lambda topic: None)
        self.logs: dict[TopicPartition, Log] = {}
        self._log_counts = dict.fromkeys(self.log_dirs, 0)  # partitions per directory
        self.flush_timer = LatencyHistogram()  # every log's flushes (LogFlushRateAndTimeMs)
        self.stray_paths: list[str] = []
        self._storage_failures: dict[str, tuple[int, int]] = {}  # dir -> (reported at, since)
        self.clean_shutdown: dict[str, bool] = {}  # per directory: was its marker there?
        epochs: set[int] = set()  # the broker epochs the markers hold
        self.offline_dirs: set[str] = set()  # failed while running (DUR-16)
        self.log_dir_failure_listeners: list[Callable[[str], None]] = []
        for log_dir in self.log_dirs:
            marker = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
            self.clean_shutdown[log_dir] = os.path.exists(marker)
            if self.clean_shutdown[log_dir]:
                epochs.add(read_broker_epoch(marker))
                os.unlink(marker)  # from now on, a crash means recovery at the next start
                fsync_directory(log_dir)
        # the epoch of the last run if it shut down cleanly everywhere (KIP-966), else -1
        agreed = len(epochs) == 1 and self.had_clean_shutdown
        self.previous_broker_epoch = epochs.pop() if agreed else NO_BROKER_EPOCH
        self._load_logs()

    @property
    def had_clean_shutdown(self) -> bool:
        """Whether every directory was closed cleanly by the last run."""
        return all(self.clean_shutdown.values())

    @staticmethod
    def _checkpoint(log_dir: str, name: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(log_dir, name))

    def _read_checkpoint(self, log_dir: str, name: str) -> dict[TopicPartition, int]:
        try:
            return self._checkpoint(log_dir, name).read()
        except CheckpointError as err:
            logger.error("%s; ignoring it (logs recover from their start)", err)
            return {}

    def _find_logs(self) -> dict[TopicPartition, str]:
        """Every partition directory of every log dir; the same partition twice is an error."""
        found: dict[TopicPartition, str] = {}
        for log_dir in self.log_dirs:
            for name in sorted(os.listdir(log_dir)):
                path = os.path.join(log_dir, name)
                tp = parse_topic_partition(name) if os.path.isdir(path) else None
                if tp is not None and tp[0] == CLUSTER_METADATA_TOPIC:
                    continue  # the KRaft quorum's log, kafka_ref/raft/'s (Kafka skips it too)
                if tp is None:
                    if os.path.isdir(path) and _DELETE_DIR.fullmatch(name):
                        logger.info("finishing the deletion of %s", path)
                        shutil.rmtree(path, ignore_errors=True)
                    elif name not in _KNOWN_ROOT_FILES and not name.endswith(".tmp"):
                        logger.warning("ignoring %s: not a partition log directory", path)
                        self.stray_paths.append(path)
                elif tp in found:
                    raise LogDirError(
                        f"Duplicate log directories for {name} are found in both {found[tp]}"
                        f" and {path}: delete the copy that is wrong, then start again"
                    )
                else:
                    found[tp] = path
        return found

    def _load_logs(self) -> None:
        found = self._find_logs()  # before opening anything: recovery writes to the logs
        for log_dir in self.log_dirs:
            recovery_points = self._read_checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT)
            log_starts = self._read_checkpoint(log_dir, LOG_START_OFFSET_CHECKPOINT)
            for tp, path in found.items():
                if os.path.dirname(path) != log_dir:
                    continue
                self.logs[tp] = Log.open(
                    path,
                    self.config_for(tp[0]),
                    self.clock,
                    recovery_point=recovery_points.get(tp, 0),
                    log_start_offset=log_starts.get(tp),
                    clean_shutdown=self.clean_shutdown[log_dir],
                    producer_state=ProducerStateManager,
                )
                self.logs[tp].flush_timer = self.flush_timer
                self._log_counts[log_dir] += 1
            logger.info(
                "loaded %d logs from %s (%s shutdown)",
                len(self.logs_in(log_dir)),
                log_dir,
                "clean" if self.clean_shutdown[log_dir] else "unclean",
            )

    def config_for(self, topic: str) -> LogConfig:
        return self._topic_config(topic) or self.default_config

    # ------------------------------------------------------------------ logs
    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def logs_in(self, log_dir: str) -> dict[TopicPartition, Log]:
        """The logs whose partition directory is in `log_dir`."""
        return {tp: log for tp, log in self.logs.items() if log.parent_dir == log_dir}

    @property
    def online_dirs(self) -> tuple[str, ...]:
        return tuple(d for d in self.log_dirs if d not in self.offline_dirs)

    @property
    def all_dirs_offline(self) -> bool:
        return not self.online_dirs

    def next_log_dir(self) -> str:
        """Where a new partition goes: the online directory with the fewest partitions, the
        first such one in `log.dirs` order (Kafka's `nextLogDirs`; DUR-13, DUR-16). The
        counts are kept as logs come and go: counting every log for each new one would make
        creating n partitions cost n^2 steps."""
        online = self.online_dirs
        if not online:
            raise KafkaStorageError("every log directory is offline")
        return min(online, key=self._log_counts.__getitem__)  # the first of equals

    def maybe_add_offline_log_dir(self, log_dir: str, what: str, err: BaseException) -> None:
        """`what` failed in `log_dir` with an I/O error: the directory goes offline, once
        (Kafka: `LogDirFailureChannel.maybeAddOfflineLogDir`, `LogManager.handleLogDirFailure`;
        DUR-16). Its logs are dropped and the listeners told."""
        if log_dir in self.offline_dirs or log_dir not in self.log_dirs:
            return
        self.offline_dirs.add(log_dir)
        logger.error("log directory %s is offline: %s failed: %s", log_dir, what, err)
        for tp, log in self.logs_in(log_dir).items():
            del self.logs[tp]
            with contextlib.suppress(Exception):  # the disk is gone: nothing more to save
                log.close()
        self._log_counts[log_dir] = 0
        for listener in self.log_dir_failure_listeners:
            listener(log_dir)
        if self.all_dirs_offline:
            logger.error("every log directory (%s) is offline", ", ".join(self.log_dirs))

    def handle_io_error(self, log_dir: str, what: str, err: BaseException) -> None:
        """A write to `log_dir` failed: a full disk is reported (DUR-15), any other I/O
        error takes the directory offline (DUR-16)."""
        if is_log_dir_failure(err):
            self.maybe_add_offline_log_dir(log_dir, what, err)
        else:
            self.report_storage_failure(log_dir, what, err)

    def report_storage_failure(self, log_dir: str, what: str, err: BaseException) -> None:
        """A write to `log_dir` failed: ERROR once, then once a minute at most (DUR-15)."""
        now = self.clock.milliseconds()
        reported_at, since = self._storage_failures.get(log_dir, (None, 0))
        if reported_at is not None and now - reported_at < STORAGE_FAILURE_REPORT_INTERVAL_MS:
            self._storage_failures[log_dir] = (reported_at, since + 1)
            return
        self._storage_failures[log_dir] = (now, 0)
        try:
            free = f"{shutil.disk_usage(log_dir).free} bytes free"
        except OSError as usage_err:
            free = f"free space unknown: {usage_err}"
        more = f"; {since} more failure(s) since the last report" if since else ""
        logger.error("log directory %s: %s failed: %s (%s%s)", log_dir, what, err, free, more)

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created empty (offset 0) if it does not exist yet."""
        log = self.logs.get((topic, partition))
        if log is None:
            log_dir = self.next_log_dir()
            path = os.path.join(log_dir, log_dir_name(topic, partition))
            try:
                log = Log.open(
                    path,
                    config or self.config_for(topic),
                    self.clock,
                    producer_state=ProducerStateManager,
                )
                fsync_directory(log_dir)
            except OSError as err:
                self.handle_io_error(log_dir, f"creating {path}", err)
                raise KafkaStorageError(f"cannot create {path}: {err}") from err
            log.flush_timer = self.flush_timer
            self.logs[(topic, partition)] = log
            self._log_counts[log_dir] += 1
            logger.info("created log %s", path)
        return log

    def update_config(self, topic: str, config: LogConfig) -> None:
        """The topic's config changed while its logs are open: they take it from the next
        append, roll, flush or retention pass on (Kafka: `UnifiedLog.updateConfig`)."""
        for (name, _), log in self.logs.items():
            if name == topic:
                log.config = config

    def reconfigure_default_config(self, defaults: LogConfig) -> None:
        """New broker defaults (a dynamic broker config, CONFIG-6): every open log takes
        its topic's config again, its overrides over the new defaults (Kafka:
        `reconfigureDefaultLogConfig`, `DynamicLogConfig.updateLogsConfig`)."""
        self.default_config = defaults
        for topic in {topic for topic, _ in self.logs}:
            self.update_config(topic, self.config_for(topic))

    def delete_log(self, topic: str, partition: int) -> bool:
        """Delete a partition's log: rename the directory aside (atomic), then remove it."""
        log = self.logs.pop((topic, partition), None)
        if log is None:
            return False
        log.close()
        self._log_counts[log.parent_dir] -= 1
        doomed = f"{log.dir}.{uuid.uuid4().hex}-delete"
        os.replace(log.dir, doomed)  # a crash now leaves a -delete dir the next start removes
        fsync_directory(log.parent_dir)
        shutil.rmtree(doomed, ignore_errors=True)
        logger.info("deleted log %s-%d", topic, partition)
        return True

    # ------------------------------------------------------------------ durability
    def checkpoint(self) -> None:
        """Write every log's recovery point and log start offset, in its own online
        directory; a directory that fails goes offline (DUR-16)."""
        for log_dir in self.online_dirs:
            logs = self.logs_in(log_dir)
            try:
                self._checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT).write(
                    {tp: log.recovery_point for tp, log in logs.items()}
                )
                self._checkpoint(log_dir, LOG_START_OFFSET_CHECKPOINT).write(
                    {tp: log.log_start_offset for tp, log in logs.items()}
                )
            except OSError as err:
                self.handle_io_error(log_dir, "writing the checkpoints", err)

    def flush_logs(self) -> int:
        """The periodic flush: flush.ms, and rolled segments not yet fsynced. Returns count."""
        flushed = 0
        for log in list(self.logs.values()):
            try:
                flushed += log.maybe_flush()
            except (OSError, KafkaStorageError) as err:
                self.handle_io_error(log.parent_dir, f"flushing {log.dir}", err)
        return flushed

    def close(self, broker_epoch: int = NO_BROKER_EPOCH) -> None:
        """Flush and close every log, checkpoint, then write the clean-shutdown markers of
        the online directories (an offline one recovers at the next start), with a KRaft
        broker's `broker_epoch` in them (Kafka: `LogManager.shutdown(brokerEpoch)`)."""
        for log in self.logs.values():
            log.close()
        self.checkpoint()
        content = b""
        if broker_epoch != NO_BROKER_EPOCH:
            marker = {"version": 0, "brokerEpoch": broker_epoch}
            content = json.dumps(marker, separators=(",", ":")).encode()
        for log_dir in self.online_dirs:
            write_atomically(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE), content)
        logger.info("closed %d logs cleanly in %s", len(self.logs), ", ".join(self.log_dirs))
        self.logs.clear()
        self._log_counts = dict.fromkeys(self.log_dirs, 0)
