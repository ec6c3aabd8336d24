"""The broker side of the transaction coordinator: its topic, its writes, its markers.

The transaction coordinator (kafka_ref/txn/coordinator.py) is pure: it decides, and says
what to write and which markers to send. This adapter connects it to the broker, where
Kafka's `BrokerServer` wires its `TransactionCoordinator`:

* **The transaction log.** `ensure_transaction_topic` creates `__transaction_state` the first
  time a producer looks for its coordinator (FindCoordinator key type 1, TXN-9):
  `transaction.state.log.num.partitions` partitions (50), `cleanup.policy=compact`,
  `segment.bytes=transaction.state.log.segment.bytes`, replication factor
  `transaction.state.log.replication.factor` (3) capped at the live brokers, as the offsets
  topic is (group_adapter.py), and `min.insync.replicas=transaction.state.log.min.isr` (2)
  capped at that factor: a decision is durable only on that many replicas (TXN-20). In
  ZooKeeper mode the topic is created through the controller like any other.
* **Writes.** `append` writes the coordinator's batch to `__transaction_state-<p>` with
  acks=all and calls back once the ISR has it, exactly as the group coordinator's writes
  (`DelayedCoordinatorAppend`).
* **Leadership.** When this broker leads a partition of the topic (at start, at creation;
  in ZooKeeper mode whenever the controller makes it leader, server/zk_mode.py) the
  coordinator loads it with the partition's leader epoch as *coordinator epoch*; the
  markers it sends carry that epoch, so a leader can refuse a stale coordinator (TXN-3).
  Losing the leadership resigns the partition: its answers still in flight become
  NOT_COORDINATOR and its marker retries stop; the new leader replays the log (TXN-21).
* **Markers, over the wire.** `send_markers` groups a transaction's partitions by their
  leader and sends each leader a WriteTxnMarkers request (v2, with the transaction's
  version, TXN-96) on a connection of its own
  (Kafka: `TransactionMarkerChannelManager`, its `InterBrokerSendThread`;
  server/inter_broker_channel.py). To this very broker the request goes through the
  broker's own handlers without a socket, and is answered at once when the markers need no
  follower: on one broker CompleteCommit is then logged right after EndTxn's answer is
  written, before another request is read (server/loopback.py, TXN-24). Partitions without
  a leader, and leaders that cannot be reached, answer a retriable error, and the
  coordinator tries again after a backoff, looking the leader up again: a marker follows
  its partition to a new leader (TXN-22).
* **Timeouts.** Every `transaction.abort.timed.out.transaction.cleanup.interval.ms` the
  coordinator aborts the transactions open past their timeout (TXN-15).

Rules: TXN-9, TXN-12, TXN-14, TXN-15, TXN-20..TXN-22, TXN-24, TXN-96.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.cluster.metadata import BrokerEndpoint, ClusterMetadataApi, TopicExistsError
from kafka_ref.common import TopicPartition
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import ApiKey, WriteTxnMarkersRequest
from kafka_ref.security.inter_broker import InterBrokerSecurity
from kafka_ref.server.group_adapter import DelayedCoordinatorAppend, read_records
from kafka_ref.server.inter_broker_channel import (
    BrokerUnavailableError,
    InterBrokerChannel,
    live_broker,
)
from kafka_ref.server.kafka_config import KafkaConfig
from kafka_ref.server.loopback import Loopback
from kafka_ref.server.replica_manager import ReplicaManager
from kafka_ref.txn.coordinator import (
    MarkerCallback,
    MarkerRequest,
    TransactionCoordinator,
    TxnConfig,
)
from kafka_ref.txn.transaction_log import TRANSACTION_STATE_TOPIC

logger = logging.getLogger("kafka_ref.server.txn_adapter")

REQUIRED_ACKS = -1
WRITE_TXN_MARKERS_VERSION = 2  # v2 carries the transaction version (KIP-1228, Kafka 4.2+)
APPEND_TIMEOUT_MS = 5000


def txn_config(config: KafkaConfig) -> TxnConfig:
    return TxnConfig(
        num_partitions=config["transaction.state.log.num.partitions"],
        max_timeout_ms=config["transaction.max.timeout.ms"],
        abort_timed_out_interval_ms=config[
            "transaction.abort.timed.out.transaction.cleanup.interval.ms"
        ],
        transactional_id_expiration_ms=config["transactional.id.expiration.ms"],
        remove_expired_interval_ms=config[
            "transaction.remove.expired.transaction.cleanup.interval.ms"
        ],
    )


def ensure_transaction_topic(controller: ClusterMetadataApi, config: KafkaConfig) -> ErrorCode:
    """Create `__transaction_state` if it does not exist (TXN-9)."""
    if controller.topic(TRANSACTION_STATE_TOPIC) is not None:
        return ErrorCode.NO_ERROR
    factor = min(config["transaction.state.log.replication.factor"], len(controller.brokers()))
    configs = {
        "min.insync.replicas": str(min(config["transaction.state.log.min.isr"], factor)),
        "cleanup.policy": "compact",
        "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
        "compression.type": "uncompressed",
    }
    try:
        controller.create_topic(
            TRANSACTION_STATE_TOPIC,
            config["transaction.state.log.num.partitions"],
            factor,
            configs,
        )
    except TopicExistsError:
        pass
    except (KafkaError, OSError) as err:
        logger.error("cannot create %s: %s", TRANSACTION_STATE_TOPIC, err)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NO_ERROR


def _marker(request: MarkerRequest, tps: set[TopicPartition]) -> Any:
    """The `WritableTxnMarker` of a transaction's partitions led by one broker."""
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(tps):
        by_topic.setdefault(topic, []).append(index)
    return WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=request.producer_id,
        producer_epoch=request.producer_epoch,
        transaction_result=request.commit,
        topics=[
            WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
            for t, ps in by_topic.items()
        ],
        coordinator_epoch=request.coordinator_epoch,
        transaction_version=request.transaction_version,
    )


def _marker_errors(
    leader: int, tps: set[TopicPartition], response: Any
) -> dict[TopicPartition, ErrorCode]:
    """Each partition's error in a WriteTxnMarkers response, NETWORK_EXCEPTION if none."""
    out = dict.fromkeys(tps, ErrorCode.NETWORK_EXCEPTION)  # unless answered
    if isinstance(response, BrokerUnavailableError):
        logger.warning("cannot send markers to broker %d: %s", leader, response)
        return out
    for result in response.markers:
        for topic in result.topics:
            for p in topic.partitions:
                out[(topic.name, p.partition_index)] = ErrorCode(p.error_code)
    return out


def coordinator_of(
    controller: ClusterMetadataApi, coordinator: TransactionCoordinator, transactional_id: str
) -> BrokerEndpoint | None:
    """The live broker leading the id's `__transaction_state` partition, or None."""
    state = controller.partition_state(
        TRANSACTION_STATE_TOPIC, coordinator.partition_for(transactional_id)
    )
    return live_broker(controller, state.leader) if state is not None else None


class TxnCoordinatorAdapter:
    """Builds the `TransactionCoordinator` and feeds it `__transaction_state` (a
    `MetadataListener`); sends its markers to partition leaders."""

    def __init__(
        self,
        config: KafkaConfig,
        controller: ClusterMetadataApi,
        replica_manager: ReplicaManager,
        clock,
        schedule: Callable,
        generate_producer_id: Callable[[], int],
        loopback: Loopback | None = None,
    ) -> None:
        self.controller, self.replica_manager, self.schedule = controller, replica_manager, schedule
        self.coordinator = TransactionCoordinator(
            txn_config(config),
            clock,
            schedule,
            self.append,
            self.send_markers,
            generate_producer_id,
        )
        self.channel = InterBrokerChannel(
            controller,
            "txn-marker-sender",
            InterBrokerSecurity.from_config(config),
            loopback=loopback,
        )
        self._timers: dict[str, object] = {}  # job name -> its scheduled handle
        self._closed = False

    # ------------------------------------------------------------------ writes
    def append(self, partition: int, batch: bytes, on_done: Callable[[ErrorCode], None]) -> None:
        tp = (TRANSACTION_STATE_TOPIC, partition)
        result = self.replica_manager.append_records({tp: memoryview(batch)}, REQUIRED_ACKS)[tp]
        if result.error != ErrorCode.NO_ERROR or result.info is None:
            logger.warning("append to %s-%d failed: %s", *tp, result.error.name)
            on_done(result.error)
            return
        delayed = DelayedCoordinatorAppend(
            self.replica_manager, tp, result.info.last_offset + 1, APPEND_TIMEOUT_MS, on_done
        )
        self.replica_manager.produce_purgatory.try_complete_else_watch(delayed, [tp])

    # ------------------------------------------------------------------ markers
    def send_markers(self, request: MarkerRequest, on_done: MarkerCallback) -> None:
        """Send the markers in the event loop's next turn (TXN-24). The coordinator answers
        EndTxn just before it asks for them, so that answer is written first; and the loop
        reads no socket between the two, so on one broker CompleteCommit is logged before
        the producer's next request is read, without holding the answer back meanwhile."""
        asyncio.get_running_loop().call_soon(self._send_markers, request, on_done)

    def _send_markers(self, request: MarkerRequest, on_done: MarkerCallback) -> None:
        """Group the partitions by leader; one WriteTxnMarkers per leader (TXN-12)."""
        if self._closed:
            return
        by_leader: dict[int, set[TopicPartition]] = {}
        errors: dict[TopicPartition, ErrorCode] = {}
        for tp in request.partitions:
            state = self.controller.partition_state(*tp)
            if state is None:  # deleted with its topic: no marker to write (as Kafka skips it)
                logger.warning(
                    "%s: %s-%d no longer exists; no marker", request.transactional_id, *tp
                )
                errors[tp] = ErrorCode.NO_ERROR
            elif live_broker(self.controller, state.leader) is None:
                errors[tp] = ErrorCode.LEADER_NOT_AVAILABLE
            else:
                by_leader.setdefault(state.leader, set()).add(tp)
        waiting = set(by_leader)

        def answered(leader: int, tps: set[TopicPartition], response: Any) -> None:
            errors.update(_marker_errors(leader, tps, response))
            waiting.discard(leader)
            if not waiting and not self._closed:
                on_done(errors)

        if not by_leader:
            on_done(errors)
        for leader, tps in by_leader.items():
            self.channel.send(
                leader,
                ApiKey.WRITE_TXN_MARKERS,
                WRITE_TXN_MARKERS_VERSION,
                WriteTxnMarkersRequest(markers=[_marker(request, tps)]),
                lambda response, leader=leader, tps=tps: answered(leader, tps, response),
            )

    # ------------------------------------------------------------------ leadership
    def start(self) -> None:
        """Load the partitions of `__transaction_state` this broker leads; start the timers."""
        for (topic, index), partition in sorted(self.replica_manager.partitions.items()):
            if topic == TRANSACTION_STATE_TOPIC and partition.is_leader:
                self.elect(index)
        config, txns = self.coordinator.config, self.coordinator
        self._repeat(config.abort_timed_out_interval_ms, txns.abort_timed_out_transactions)
        self._repeat(config.remove_expired_interval_ms, txns.remove_expired_transactional_ids)

    def elect(self, index: int) -> None:
        """Load the partition up to its log end (as group_adapter's `elect` explains) with
        its leader epoch as the coordinator epoch, and finish the decisions in it."""
        partition = self.replica_manager.get_partition(TRANSACTION_STATE_TOPIC, index)
        records = read_records(partition.log, partition.log_end_offset)
        self.coordinator.on_elected(index, partition.leader_epoch, records)

    def resign(self, index: int) -> None:
        self.coordinator.on_resigned(index)

    def on_partitions_created(self, topic: str, partitions: range) -> None:
        if topic == TRANSACTION_STATE_TOPIC:
            for index in partitions:
                self.elect(index)

    def on_topic_deleted(self, topic: str, partitions: int) -> None:
        if topic == TRANSACTION_STATE_TOPIC:
            for index in range(partitions):
                self.coordinator.on_resigned(index)

    def on_topic_config(self, topic: str, config: LogConfig) -> None:
        """The coordinator's logs follow their config through the ReplicaManager."""

    # ------------------------------------------------------------------ housekeeping
    def _repeat(self, interval_ms: int, job: Callable[[], object]) -> None:
        """Run `job` every `interval_ms` until shutdown (timeouts TXN-15, expiry TXN-81)."""
        if self._closed:
            return

        def run() -> None:
            try:
                job()
            finally:
                self._repeat(interval_ms, job)

        self._timers[job.__name__] = self.schedule(interval_ms / 1000, run)

    async def shutdown(self) -> None:
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        self.channel.close()
