"""One replica of a partition, as leader or follower (Kafka: `Partition`).

Each partition has `replication.factor` replicas on different brokers. The controller
makes one of them **leader** with a new **leader epoch** and names the **ISR** (in-sync
replicas); the others are **followers** that copy the leader's log by fetching from it.
This class is one broker's replica: its `Log`, its leader epoch cache, its high watermark,
and, while it leads, what it knows of its followers (replica.py). It is pure: requests and
answers are values (messages.py), time comes in as `now`, nothing here does I/O but the log's.

**As leader** (REPL-1..REPL-6, ISR-1..ISR-5):

* a produce is appended with the leader epoch stamped into each batch (REPL-9). With
  acks=all it is refused with NOT_ENOUGH_REPLICAS, before anything is written, while the
  ISR is smaller than the effective `min.insync.replicas`: the topic's, capped at the
  number of replicas (REPL-5). While the ISR is that small the HW does not move either, so
  what acks=1 appends then is committed only once the ISR is large enough again (KIP-966);
* a follower's fetch from offset `o` tells the leader the follower's LEO is `o`. The leader
  then may add the follower to the ISR (it has reached the HW and the start of this epoch,
  ISR-2) and advance the **high watermark**: the smallest LEO over the ISR, never lower
  than before under this leader (REPL-3). Records below the HW are committed: consumers see
  only those (REPL-2);
* acks=all completes once the HW passes the batch (`check_enough_replicas_reach_offset`,
  REPL-4), with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas
  meanwhile (REPL-6);
* a follower that has not caught up for `replica.lag.time.max.ms` leaves the ISR (ISR-3).
  Who joins and who leaves is decided in isr.py. ISR changes are requests to the
  controller (`AlterIsr`); while one is in flight the HW is computed over the old ISR plus
  any replica being added (ISR-5, Kafka's "maximal ISR").

**As follower** (REPL-7): the fetched batches are appended byte for byte, with the leader's
offsets and epochs (`Log.append(assign_offsets=False)`); the HW becomes min(leader's HW,
own LEO). Truncation before fetching is the fetcher's job (follower_fetch_state.py, truncation.py).

**Epochs** (REPL-8): a LeaderAndIsr whose epoch is not newer than the replica's is refused
(FENCED_LEADER_EPOCH); a request carrying an older `current_leader_epoch` gets
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH; a request to a replica that does
not lead gets NOT_LEADER_OR_FOLLOWER.

Rules: REPL-1..REPL-9, ISR-1..ISR-5.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kafka_ref.clock import Clock
from kafka_ref.errors import (
    ErrorCode,
    KafkaError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
)
from kafka_ref.log.checkpoints import OffsetCheckpointFile
from kafka_ref.log.log import Log, LogReadInfo
from kafka_ref.log.validator import AppendInfo, AppendOrigin
from kafka_ref.record.batch import walk_buffer
from kafka_ref.replication.isr import can_join_isr, out_of_sync_replicas
from kafka_ref.replication.leader_epoch import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochFileCache,
)
from kafka_ref.replication.messages import (
    AlterIsr,
    AlterIsrResult,
    EpochRequest,
    EpochResult,
    FencedLeaderEpochError,
    FetchRequest,
    FetchResult,
    LeaderAndIsr,
    UnknownLeaderEpochError,
)
from kafka_ref.replication.reads import WITHOUT_TRANSACTIONS, ConsumerReads, Isolation
from kafka_ref.replication.replica import UNKNOWN_OFFSET, Replica
from kafka_ref.seams import seam

logger = logging.getLogger("kafka_ref.replication.partition")

CONSUMER_REPLICA_ID = -1


@seam
def leader_high_watermark(
    leader_log_end_offset: int, follower_log_end_offsets: Iterable[int], high_watermark: int
) -> int:
    """The HW rule (REPL-3, Kafka `Partition.maybeIncrementLeaderHW`): the smallest LEO over
    the ISR, the leader's own included, and never lower than the HW already reached.

    A follower's LEO is what its last fetch said; one that has not fetched from this leader
    yet is unknown (-1) and holds the HW where it is (ISR-4). A record below the HW is on
    every ISR member, so it survives the loss of any of them but the last: it is committed.
    """
    return max(high_watermark, min([leader_log_end_offset, *follower_log_end_offsets]))


def segment_sized_chunks(records: bytes | memoryview, segment_bytes: int) -> list[memoryview]:
    """The leader's batches cut, at batch boundaries, into appends that fit in a segment.

    A log refuses one append larger than `segment.bytes` (RECORD_LIST_TOO_LARGE), but a
    leader's read may span several of its segments, so a follower appends what it fetched
    in pieces of at most a segment each (a single larger batch stays whole, and is refused
    as on the leader). Kafka's leaders read from one segment per fetch, which bounds the
    same thing from the other side."""
    view = memoryview(records).cast("B")
    chunks, start = [], 0
    for span in walk_buffer(view, partial_tail=True):
        if span.position > start and span.position + span.size - start > segment_bytes:
            chunks.append(view[start : span.position])
            start = span.position
    if start < view.nbytes:
        chunks.append(view[start:])  # with a batch cut short at the end, as fetched
    return chunks


class Partition(ConsumerReads):
    """One broker's replica of one partition (Kafka: `Partition`)."""

    def __init__(
        self,
        topic: str,
        index: int,
        broker_id: int,
        log: Log,
        cache: LeaderEpochFileCache,
        clock: Clock,
        *,
        replica_lag_time_max_ms: int,  # the broker config, declared in its table
        high_watermark: int = 0,
        isolation: Isolation = WITHOUT_TRANSACTIONS,
    ) -> None:
        self.topic, self.index, self.broker_id = topic, index, broker_id
        self.log, self.cache, self.clock = log, cache, clock
        self.isolation = isolation  # what read_committed reads (reads.py)
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        # The log may have lost a tail in a crash; its epochs and HW go with it.
        cache.truncate_from_end(log.log_end_offset)
        cache.truncate_from_start(log.log_start_offset)
        # The committed bound: consumers read below it (REPL-2).
        self.update_high_watermark(
            max(min(high_watermark, log.log_end_offset), log.log_start_offset)
        )
        self.leader_id: int | None = None
        self.leader_epoch = UNDEFINED_EPOCH
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.version = -1
        self.leader_epoch_start_offset = -1
        self.remote: dict[int, Replica] = {}
        self.pending_isr: AlterIsr | None = None
        self._isr_request_sent = False

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return (
            f"Partition({self.topic}-{self.index}@{self.broker_id}, {role}, "
            f"epoch={self.leader_epoch}, isr={self.isr}, hw={self.high_watermark}, "
            f"leo={self.log_end_offset})"
        )

    # ------------------------------------------------------------------ state
    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def update_high_watermark(self, value: int) -> None:
        """Move the HW, and tell the log's producer state, which then forgets the finished
        transactions whose markers are below it (Kafka: `UnifiedLog.updateHighWatermark`
        calls `onHighWatermarkUpdated`). The one place the HW changes producer state:
        reading it, or the LSO, changes nothing (TXN-25)."""
        assert self.log.log_start_offset <= value <= self.log.log_end_offset, (  # REPL-13
            f"{self.topic}-{self.index}: HW {value} outside [log start "
            f"{self.log.log_start_offset}, LEO {self.log.log_end_offset}]"
        )
        self.high_watermark = value
        self.log.producer_state.on_high_watermark_updated(value)

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def min_insync_replicas(self) -> int:
        """The effective min.insync.replicas: the topic's, but never more than the replicas
        it has (Kafka `Partition.effectiveMinIsr`), so that a topic of replication factor 1
        with min.insync.replicas=2 still takes acks=all."""
        return min(self.log.config.min_insync_replicas, max(len(self.replicas), 1))

    @property
    def is_under_min_isr(self) -> bool:
        """Kafka `Partition.isUnderMinIsr`: the ISR is smaller than the effective minimum."""
        return len(self.isr) < self.min_insync_replicas

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR plus any replica an in-flight AlterIsr adds (ISR-5)."""
        if self.pending_isr is None:
            return self.isr
        return tuple(sorted(set(self.isr) | set(self.pending_isr.new_isr)))

    # ------------------------------------------------------------------ LeaderAndIsr
    def _check_new_epoch(self, state: LeaderAndIsr) -> None:
        if state.leader_epoch <= self.leader_epoch:
            raise FencedLeaderEpochError(
                f"{self.topic}-{self.index}: leader epoch {state.leader_epoch} is not newer "
                f"than the current {self.leader_epoch}"
            )

    def _take_state(self, state: LeaderAndIsr) -> None:
        assert set(state.isr) <= set(state.replicas), f"ISR-8: {state}: ISR not in the replicas"
        assert state.leader in (None, -1) or state.leader in state.isr, (
            f"ISR-8: {state}: leader not in ISR"
        )
        self.leader_id, self.leader_epoch = state.leader, state.leader_epoch
        self.isr, self.replicas, self.version = state.isr, state.replicas, state.version
        self.pending_isr, self._isr_request_sent = None, False

    def make_leader(self, state: LeaderAndIsr) -> None:
        """Become (or stay) leader in a new epoch (Kafka `Partition.makeLeader`).

        The epoch starts at the current LEO: it goes into the epoch cache, which is what
        lets followers find where their logs diverge from this one (TRUNC-4).
        """
        self._check_new_epoch(state)
        if state.leader != self.broker_id:
            raise ValueError(f"{state} does not make broker {self.broker_id} leader")
        # A broker that already leads keeps what it knows of its followers (Kafka:
        # `isNewLeader`): with the ISR shrunk to followers that are caught up, the HW moves
        # now, not at their next fetch that changes their position.
        known = self.remote if self.is_leader else {}
        self._take_state(state)
        now = self.clock.milliseconds()
        self.cache.assign(state.leader_epoch, self.log_end_offset)
        self.leader_epoch_start_offset = self.log_end_offset
        self.remote = {
            r: known.get(r) or Replica(r, now, in_isr=r in state.isr)
            for r in state.replicas
            if r != self.broker_id
        }
        self._maybe_increment_high_watermark()
        logger.info("%r: became leader", self)

    def update_assignment_and_isr(self, state: LeaderAndIsr) -> None:
        """The controller changed the replicas or the ISR in this leader epoch (a newer
        partition epoch: KRaft's controller keeps the leader epoch when the leader stays,
        KBROKER-6; Kafka `Partition.updateAssignmentAndIsr`). A leader keeps what it knows of
        the followers that remain, forgets the ones that left, and drops its own pending
        ISR change: the controller decided otherwise, and the leader proposes again from
        the new ISR."""
        assert state.leader_epoch == self.leader_epoch, f"{state} is not epoch {self.leader_epoch}"
        assert state.version > self.version, f"{state} is not newer than {self.version}"
        assert state.leader == self.leader_id or (
            state.leader in (None, -1) and self.leader_id in (None, -1)
        ), f"{state} changes the leader without a new epoch"
        self._take_state(state)
        if self.is_leader:
            now = self.clock.milliseconds()
            self.remote = {
                r: self.remote.get(r) or Replica(r, now, in_isr=r in state.isr)
                for r in state.replicas
                if r != self.broker_id
            }
            self._maybe_increment_high_watermark()
        logger.info("%r: replicas %s, ISR %s", self, state.replicas, state.isr)

    def make_follower(self, state: LeaderAndIsr) -> None:
        """Follow `state.leader` in a new epoch (Kafka `Partition.makeFollower`). The
        caller then starts a fetcher, which truncates before it fetches."""
        self._check_new_epoch(state)
        self._take_state(state)
        self.remote = {}
        self.leader_epoch_start_offset = -1
        logger.info("%r: became follower", self)

    def check_leader_request(self, current_leader_epoch: int, require_leader: bool = True) -> None:
        """A client's request to the leader, in the leader epoch it believes current (REPL-8;
        Kafka `Partition.localLogWithEpochOrThrow`): raise if this replica does not lead, or
        the leader's epoch is another; -1 skips the epoch check. `require_leader=False`: a
        consumer's fetch, which a follower may serve too (KIP-392, BROKER-78)."""
        if require_leader and not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.index}"
            )
        if current_leader_epoch != UNDEFINED_EPOCH and current_leader_epoch != self.leader_epoch:
            if current_leader_epoch < self.leader_epoch:
                raise FencedLeaderEpochError(
                    f"epoch {current_leader_epoch} is older than {self.leader_epoch}"
                )
            raise UnknownLeaderEpochError(
                f"epoch {current_leader_epoch} is newer than {self.leader_epoch}"
            )

    # ------------------------------------------------------------------ leader: produce
    def append_records_to_leader(
        self,
        records: bytes | bytearray | memoryview,
        required_acks: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> AppendInfo:
        """Kafka `Partition.appendRecordsToLeader` (REPL-5, REPL-9)."""
        self.check_leader_request(UNDEFINED_EPOCH)
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {self.isr} is insufficient to satisfy the "
                f"min.isr requirement of {self.min_insync_replicas} for partition "
                f"{self.topic}-{self.index}"
            )
        info = self.log.append(records, leader_epoch=self.leader_epoch, origin=origin)
        self._maybe_increment_high_watermark()  # an ISR of one: committed at once
        return info

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """Is an acks=all produce ending before `required_offset` done, and how? (Kafka
        `checkEnoughReplicasReachOffset`, REPL-4, REPL-6)."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return False, ErrorCode.NO_ERROR
        if len(self.maximal_isr) < self.min_insync_replicas:
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NO_ERROR

    # ------------------------------------------------------------------ leader: fetch
    def fetch(
        self,
        request: FetchRequest,
        records_of: Callable[[LogReadInfo], Any] = LogReadInfo.read_bytes,
    ) -> FetchResult:
        """Serve a follower's or a consumer's fetch; never raises a KafkaError.

        `records_of` turns the log's read (file slices of whole batches) into the result's
        `records`: their bytes by default; a broker may keep the slices, to send them with
        sendfile (BROKER-5)."""
        try:
            return self._fetch(request, records_of)
        except OffsetOutOfRangeError:
            return FetchResult(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                high_watermark=self.high_watermark,
                log_start_offset=self.log_start_offset,
                log_end_offset=self.log_end_offset,
            )
        except KafkaError as err:  # not leader, fenced or unknown epoch
            return FetchResult(err.code)

    def _fetch(
        self, request: FetchRequest, records_of: Callable[[LogReadInfo], Any]
    ) -> FetchResult:
        self.check_leader_request(request.current_leader_epoch)
        now, leo = self.clock.milliseconds(), self.log_end_offset
        is_follower = request.replica_id != CONSUMER_REPLICA_ID
        if is_follower and request.replica_id not in self.remote:
            raise NotLeaderOrFollowerError(f"broker {request.replica_id} is not a replica")
        if request.last_fetched_epoch != UNDEFINED_EPOCH:
            diverging = self.diverging_epoch(request.last_fetched_epoch, request.fetch_offset)
            if diverging is not None:
                return FetchResult(
                    ErrorCode.NO_ERROR,
                    high_watermark=self.high_watermark,
                    log_start_offset=self.log_start_offset,
                    log_end_offset=leo,
                    diverging_epoch=diverging,
                )
        bound = None if is_follower else self.high_watermark  # consumers: committed only
        info = self.log.read(request.fetch_offset, request.max_bytes, max_offset=bound)
        if is_follower:
            self.remote[request.replica_id].update_fetch_state(
                request.fetch_offset, leo, now, request.log_start_offset
            )
            self._maybe_expand_isr(request.replica_id)
            self._maybe_increment_high_watermark()
        return FetchResult(
            ErrorCode.NO_ERROR,
            records_of(info),
            self.high_watermark,
            self.log_start_offset,
            leo,
        )

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """KIP-595's check of a fetch that names the epoch of its last record (Fetch v12+;
        Kafka `Partition.readRecords`, for followers and consumers alike): (epoch, end offset)
        when that epoch ends here before the fetch offset, or this leader knows only older
        epochs: the fetcher's log has diverged (BROKER-66). None when the logs agree.
        OFFSET_OUT_OF_RANGE when this leader knows no such epoch or the offset is below
        the log start."""
        epoch, end = self.cache.end_offset_for(last_fetched_epoch, self.log_end_offset)
        if epoch == UNDEFINED_EPOCH or end == UNDEFINED_EPOCH_OFFSET:
            raise OffsetOutOfRangeError(
                f"the end offset of epoch {last_fetched_epoch} of {self.topic}-{self.index}"
                " is not known here"
            )
        if fetch_offset < self.log_start_offset:
            raise OffsetOutOfRangeError(
                f"offset {fetch_offset} of {self.topic}-{self.index} is below the log start"
                f" offset {self.log_start_offset}"
            )
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def last_offset_for_leader_epoch(self, request: EpochRequest) -> EpochResult:
        """OffsetsForLeaderEpoch (KIP-101/279, TRUNC-4): where does the requested epoch end
        here? The largest epoch <= it that this leader knows, and its end offset."""
        try:
            self.check_leader_request(request.current_leader_epoch)
        except KafkaError as err:
            return EpochResult(err.code)
        epoch, end = self.cache.end_offset_for(request.leader_epoch, self.log_end_offset)
        return EpochResult(ErrorCode.NO_ERROR, epoch, end)

    # ------------------------------------------------------------------ leader: HW and ISR
    def _maybe_increment_high_watermark(self) -> bool:
        """Apply the HW rule (`leader_high_watermark`) over the maximal ISR (ISR-5); not
        while the ISR is under min.insync.replicas (REPL-5, Kafka's `maybeIncrementLeaderHW`
        since KIP-966: a record only the leader and too few followers hold is not yet safe)."""
        if not self.is_leader or self.is_under_min_isr:
            return False
        followers = [
            self.remote[r].log_end_offset if r in self.remote else UNKNOWN_OFFSET
            for r in self.maximal_isr
            if r != self.broker_id
        ]
        new = leader_high_watermark(self.log_end_offset, followers, self.high_watermark)
        if new > self.high_watermark:
            self.update_high_watermark(new)
            return True
        return False

    def _maybe_expand_isr(self, replica_id: int) -> None:
        """ISR-2: a follower joins once it reached the HW and the start of this epoch."""
        if self.pending_isr is not None or replica_id in self.isr:
            return
        leo = self.remote[replica_id].log_end_offset
        if can_join_isr(leo, self.high_watermark, self.leader_epoch_start_offset):
            self._propose_isr(tuple(sorted((*self.isr, replica_id))))

    def maybe_shrink_isr(self) -> None:
        """ISR-3: drop followers that have not caught up for replica.lag.time.max.ms
        (Kafka's isr-expiration task runs this every half of that)."""
        if not self.is_leader or self.pending_isr is not None:
            return
        caught_up = {r: replica.last_caught_up_time_ms for r, replica in self.remote.items()}
        lagging = out_of_sync_replicas(
            self.broker_id,
            self.isr,
            caught_up,
            self.clock.milliseconds(),
            self.replica_lag_time_max_ms,
        )
        if lagging:
            self._propose_isr(tuple(r for r in self.isr if r not in lagging))

    def _propose_isr(self, new_isr: tuple[int, ...]) -> None:
        self.pending_isr = AlterIsr(
            self.topic, self.index, self.broker_id, self.leader_epoch, new_isr, self.version
        )
        self._isr_request_sent = False
        logger.info("%r: proposing ISR %s", self, new_isr)

    def take_alter_isr(self) -> AlterIsr | None:
        """The AlterIsr to send to the controller, once (None when there is none)."""
        if self.pending_isr is None or self._isr_request_sent:
            return None
        self._isr_request_sent = True
        return self.pending_isr

    def on_alter_isr_result(self, result: AlterIsrResult) -> None:
        """The controller applied (or refused) our AlterIsr."""
        pending = self.pending_isr
        if pending is None or not self.is_leader:
            return
        self.pending_isr, self._isr_request_sent = None, False
        state = result.state
        if result.error != ErrorCode.NO_ERROR or state is None:
            logger.info("%r: AlterIsr refused: %s", self, result.error.name)
            return  # a LeaderAndIsr with the controller's state is on its way
        if state.leader_epoch == self.leader_epoch and state.leader == self.broker_id:
            self.isr, self.version = state.isr, state.version
            for r in state.isr:
                if r not in self.remote and r != self.broker_id:  # pragma: no cover
                    raise AssertionError(f"ISR member {r} is not a replica")
            self._maybe_increment_high_watermark()

    # ------------------------------------------------------------------ follower
    def append_as_follower(self, records: bytes | memoryview) -> AppendInfo:
        """Append the leader's batches unchanged (REPL-7); learn their epochs."""
        if self.is_leader:
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.index}: the leader does not fetch")
        info = None
        for chunk in segment_sized_chunks(records, self.log.config.segment_bytes):
            info = self.log.append(chunk, assign_offsets=False)
            for base_offset, header in info.batches:
                if header.partition_leader_epoch >= 0:
                    self.cache.assign(header.partition_leader_epoch, base_offset)
        return info if info is not None else self.log.append(records, assign_offsets=False)

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        """A follower's HW = min(the leader's HW, own LEO) (REPL-7)."""
        self.update_high_watermark(
            max(min(leader_high_watermark, self.log_end_offset), self.log_start_offset)
        )

    def truncate_to(self, offset: int) -> None:
        """Cut the log (and the epochs and HW with it) back to `offset` (TRUNC-*)."""
        self.log.truncate_to(offset)
        self.cache.truncate_from_end(self.log_end_offset)
        self.update_high_watermark(min(self.high_watermark, self.log_end_offset))

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The leader's log starts past ours: start over, empty, at `offset`."""
        self.log.truncate_fully_and_start_at(offset)
        self.cache.clear()
        self.update_high_watermark(offset)


def write_high_watermarks(path: str, partitions: list[Partition]) -> None:
    """The `replication-offset-checkpoint` file (REPL-10): every partition's HW."""
    OffsetCheckpointFile(path).write({(p.topic, p.index): p.high_watermark for p in partitions})


def read_high_watermarks(path: str) -> dict[tuple[str, int], int]:
    return OffsetCheckpointFile(path).read()
