"""A deterministic, in-process Kafka cluster for labs and tests.

    cluster = SimCluster(brokers=3, seed=1, truncation="leader-epoch")
    write = cluster.produce(b"hello", acks="all")
    cluster.run(100)                    # 100 simulated milliseconds
    assert write.acked
    cluster.crash(cluster.leader())     # kill -9; crash(..., lose_unflushed=True): power loss
    cluster.run(1000)                   # the controller notices, a follower takes over
    cluster.restart(...); cluster.isolate(2); cluster.heal()
    print(cluster.describe()); cluster.lost_writes(); cluster.divergence()

N `SimBroker`s (broker.py), each with real `Log`s in a temporary directory, replicate
through the replication core over a `SimNetwork` (network.py) on a `ManualClock`; a
`SimController` (controller.py) elects leaders with kafka_ref/cluster/election.py. Time
moves only inside `run`, and every random choice (message delays, drops) comes from one
`random.Random(seed)`: the same seed and the same calls give the same history, event for
event (`cluster.history`).

The checks are replication's safety properties: `lost_writes` (an acks=all write that
the current leader does not hold at its offset: KIP-101's lost write), `divergence` (two
replicas with different records at one offset below both their HWs: Raft's Log Matching,
KIP-101's divergence) and `logs_identical` (Kafka's leader-epoch acceptance tests).
"""

from __future__ import annotations

import itertools
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.config import TOPIC_CONFIGS, LogConfig
from kafka_ref.errors import ErrorCode
from kafka_ref.record.batch import RecordBatch, build_batch, iter_batch_headers
from kafka_ref.record.record import Record
from kafka_ref.replication.truncation import TruncationRule
from kafka_ref.sim.broker import Produce, ProduceResponse, SimBroker
from kafka_ref.sim.controller import SimController
from kafka_ref.sim.network import SimNetwork

CLIENT = "client"
T0 = 1_700_000_000_000
_ACKS = {"all": -1, -1: -1, 1: 1, "1": 1, 0: 0, "0": 0}
RETRIES, RETRY_BACKOFF_MS = 10, 50
_RETRIABLE = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
}


@dataclass(frozen=True)
class SimConfig:
    """Broker settings of the simulation (Kafka's names, small defaults for speed)."""

    truncation: TruncationRule = TruncationRule.LEADER_EPOCH  # replica.truncation
    replica_lag_time_max_ms: int = 1_000  # Kafka: 30000
    session_timeout_ms: int = 300  # zookeeper.session.timeout.ms; Kafka: 18000
    request_timeout_ms: int = 1_000  # produce (acks=all) timeout
    hw_checkpoint_interval_ms: int = 5_000  # replica.high.watermark.checkpoint.interval.ms
    # log.flush.offset.checkpoint.interval.ms; Kafka: 60000
    recovery_point_checkpoint_interval_ms: int = 1_000
    replica_fetch_max_bytes: int = 1 << 20  # replica.fetch.max.bytes
    replica_fetch_backoff_ms: int = 20  # an empty answer: wait before fetching again
    fetch_timeout_ms: int = 200  # no answer: send again
    tick_ms: int = 10  # how often fetchers send and logs flush
    # Followers send the epoch of their last batch and truncate on a diverging epoch in the
    # answer (Kafka 2.7+, KIP-595's check); False: only on OffsetsForLeaderEpoch answers, as
    # Kafka 2.0 to 2.6 did (inter.broker.protocol.version below 2.7).
    truncate_on_fetch: bool = True


@dataclass
class Write:
    """One produced value and what became of it (ack, error, or still unknown)."""

    value: bytes
    acks: int
    tp: tuple[str, int]
    broker: int | None
    error: ErrorCode | None = None
    attempts: int = 0
    offset: int = -1
    done: bool = False

    @property
    def acked(self) -> bool:
        return self.done and self.error == ErrorCode.NO_ERROR


@dataclass(frozen=True)
class StoredRecord:
    offset: int
    value: bytes | None
    epoch: int


@dataclass
class Divergence:
    tp: tuple[str, int]
    offset: int
    replicas: dict[int, Any] = field(default_factory=dict)


class SimCluster:
    """N brokers, one controller, one client; see the module docstring."""

    def __init__(
        self,
        brokers: int = 3,
        *,
        seed: int = 0,
        truncation: str = "leader-epoch",
        topic: str = "t",
        partitions: int = 1,
        replication_factor: int | None = None,
        min_insync_replicas: int = TOPIC_CONFIGS["min.insync.replicas"].default,
        unclean_leader_election: bool = False,
        eligible_leader_replicas: bool = False,
        flush_messages: int | None = None,
        data_dir: str | None = None,
        network_delay_ms: tuple[int, int] = (1, 5),
        drop_rate: float = 0.0,
        **config: Any,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = ManualClock(T0)
        self.scheduler = ManualScheduler(self.clock)
        self.network = SimNetwork(
            self.scheduler,
            self.rng,
            min_delay_ms=network_delay_ms[0],
            max_delay_ms=network_delay_ms[1],
            drop_rate=drop_rate,
        )
        self.config = SimConfig(truncation=TruncationRule.parse(truncation), **config)
        log_options: dict[str, Any] = {
            "min_insync_replicas": min_insync_replicas,
            "unclean_leader_election_enable": unclean_leader_election,
            "segment_bytes": 4096,
        }
        if flush_messages is not None:
            log_options["flush_messages"] = flush_messages
        self.log_config = LogConfig(**log_options)
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="kafka-ref-sim-")
        self.history: list[str] = []
        self.writes: list[Write] = []
        self._requests: dict[int, Write] = {}
        self._request_ids = itertools.count()
        self.topic = topic
        rf = replication_factor or brokers
        self.assignment = {
            (topic, p): tuple((p + i) % brokers for i in range(rf)) for p in range(partitions)
        }
        self.controller = SimController(self, eligible_leader_replicas=eligible_leader_replicas)
        for tp, replicas in self.assignment.items():
            self.controller.create_partition(tp, replicas)
        self.brokers = {b: SimBroker(b, self) for b in range(brokers)}
        self.network.attach(CLIENT, self._on_client_message)
        for b in self.brokers:
            self.start(b)
        self.run(self.network.max_delay_ms + 1)  # every broker has its LeaderAndIsr

    # ------------------------------------------------------------------ plumbing
    def replicas_of(self, broker_id: int) -> list[tuple[str, int]]:
        return sorted(tp for tp, rs in self.assignment.items() if broker_id in rs)

    def record(self, what: str, *args: Any) -> None:
        self.history.append(f"{self.now:>6} {what} " + " ".join(map(str, args)))

    @property
    def now(self) -> int:
        """Simulated milliseconds since the start."""
        return self.clock.milliseconds() - T0

    def run(self, ms: int) -> None:
        """Let `ms` simulated milliseconds pass: deliveries, fetches, timeouts."""
        self.scheduler.advance(ms)

    def close(self) -> None:
        for broker in self.brokers.values():
            if broker.alive:
                broker.crash(lose_unflushed=False)
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> SimCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ client
    def produce(self, value: bytes, *, acks: int | str = "all", partition: int = 0) -> Write:
        """Send one record to the partition's leader (as the controller knows it now).

        Like a Kafka producer with retries, a write refused before anything was appended
        (NOT_LEADER_OR_FOLLOWER, no leader yet) is sent again after `RETRY_BACKOFF_MS`, up
        to `RETRIES` times. Timeouts are not retried: the write may be in the log.
        """
        write = Write(value, _ACKS[acks], (self.topic, partition), None)
        self.writes.append(write)
        self._send_write(write)
        return write

    def _send_write(self, write: Write) -> None:
        write.attempts += 1
        leader = write.broker = self.controller.state[write.tp].leader
        self.record("produce", write.value, f"acks={write.acks}", "->", leader)
        if leader is None:
            self._failed(write, ErrorCode.LEADER_NOT_AVAILABLE)
            return
        request_id = next(self._request_ids)
        self._requests[request_id] = write
        records = build_batch([Record(None, write.value, timestamp=self.clock.milliseconds())])
        tp = write.tp
        self.network.send(CLIENT, leader, Produce(request_id, tp[0], tp[1], records, write.acks))
        if write.acks == 0:
            write.done, write.error = True, ErrorCode.NO_ERROR

    def _failed(self, write: Write, error: ErrorCode) -> None:
        if error in _RETRIABLE and write.attempts <= RETRIES:
            self.scheduler.schedule(RETRY_BACKOFF_MS / 1000, lambda: self._send_write(write))
            return
        write.done, write.error = True, error
        self.record("error", write.value, error.name)

    def _on_client_message(self, src: Any, message: Any) -> None:
        if isinstance(message, ProduceResponse):
            write = self._requests.pop(message.request_id, None)
            if write is None:
                return
            if message.error != ErrorCode.NO_ERROR:
                self._failed(write, message.error)
                return
            write.done, write.error, write.offset = True, message.error, message.base_offset
            self.record("ack", write.value, f"offset={message.base_offset}")

    @property
    def acked_writes(self) -> list[Write]:
        """Writes acknowledged with acks=all: these must never be lost."""
        return [w for w in self.writes if w.acked and w.acks == -1]

    # ------------------------------------------------------------------ faults
    def crash(self, broker_id: int, *, lose_unflushed: bool = False, torn_bytes: int = 0) -> None:
        """kill -9 the broker; `lose_unflushed`: the machine loses its page cache too."""
        lost = self.brokers[broker_id].crash(lose_unflushed=lose_unflushed, torn_bytes=torn_bytes)
        self.record("crash", broker_id, f"lost {lost} unflushed bytes" if lose_unflushed else "")
        self.controller.broker_crashed(broker_id)

    def stop(self, broker_id: int) -> None:
        """Clean shutdown: flush, checkpoint; its ZooKeeper session closes at once."""
        self.brokers[broker_id].stop()
        self.record("stop", broker_id)
        self.controller.session_expired(broker_id)

    def start(self, broker_id: int) -> None:
        """Start (or restart) a broker: recover its logs and register with the controller."""
        self.brokers[broker_id].start()
        self.record("start", broker_id)
        self.controller.broker_started(broker_id)

    def restart(self, broker_id: int, *, lose_unflushed: bool = False) -> None:
        self.crash(broker_id, lose_unflushed=lose_unflushed)
        self.start(broker_id)

    def isolate(self, broker_id: int) -> None:
        """Cut the broker off from the other brokers and the client (not from ZooKeeper)."""
        for other in [*self.brokers, CLIENT]:
            if other != broker_id:
                self.network.cut(broker_id, other)
        self.record("isolate", broker_id)

    def heal(self) -> None:
        self.network.heal()
        self.record("heal")

    # ------------------------------------------------------------------ inspection
    def leader(self, partition: int = 0) -> int | None:
        return self.controller.state[(self.topic, partition)].leader

    def partition(self, broker_id: int, partition: int = 0):
        return self.brokers[broker_id].partitions.get((self.topic, partition))

    def records(self, broker_id: int, partition: int = 0) -> list[StoredRecord]:
        """Every record in a live broker's log of the partition, with the epoch of its
        batch (a restarted broker's logs are open before its LeaderAndIsr hosts them)."""
        log_manager = self.brokers[broker_id].log_manager
        log = log_manager.get_log(self.topic, partition) if log_manager is not None else None
        if log is None:
            return []
        data = log.read(log.log_start_offset, 1 << 30).read_bytes()
        out = []
        for pos, header in iter_batch_headers(data):
            for record in RecordBatch(data, pos).records():
                out.append(StoredRecord(record.offset, record.value, header.partition_leader_epoch))
        return out

    def describe(self) -> str:
        lines = [f"t={self.now}ms seed={self.seed} truncation={self.config.truncation.value}"]
        for tp, state in sorted(self.controller.state.items()):
            lines.append(
                f"  {tp}: leader={state.leader} epoch={state.leader_epoch} isr={state.isr}"
            )
            for b in state.replicas:
                p = self.partition(b, tp[1])
                if p is None:
                    lines.append(f"    broker {b}: down")
                    continue
                values = [r.value.decode() if r.value else None for r in self.records(b, tp[1])]
                lines.append(
                    f"    broker {b}: hw={p.high_watermark} leo={p.log_end_offset} "
                    f"epochs={[tuple(e) for e in p.cache.entries]} {values}"
                )
        return "\n".join(lines)

    def lost_writes(self, partition: int = 0) -> list[Write]:
        """acks=all writes the current (live) leader does not hold at their offset."""
        tp = (self.topic, partition)
        leader = self.leader(partition)
        if leader is None or self.partition(leader, partition) is None:
            return []
        held = {r.offset: r.value for r in self.records(leader, partition)}
        return [w for w in self.acked_writes if w.tp == tp and held.get(w.offset) != w.value]

    def divergence(self, partition: int = 0) -> list[Divergence]:
        """Offsets below two live replicas' HWs where their records differ (LogMatching)."""
        live = [b for b in self.brokers if self.partition(b, partition) is not None]
        logs = {b: {r.offset: r for r in self.records(b, partition)} for b in live}
        found = []
        for a, b in itertools.combinations(live, 2):
            hw = min(
                self.partition(a, partition).high_watermark,
                self.partition(b, partition).high_watermark,
            )
            for offset in range(hw):
                ra, rb = logs[a].get(offset), logs[b].get(offset)
                if ra is not None and rb is not None and ra.value != rb.value:
                    found.append(Divergence((self.topic, partition), offset, {a: ra, b: rb}))
                    break
        return found

    def logs_identical(self, partition: int = 0) -> bool:
        """Every live replica holds the same records with the same epochs."""
        logs = [
            self.records(b, partition)
            for b in self.brokers
            if self.partition(b, partition) is not None
        ]
        return all(log == logs[0] for log in logs)
