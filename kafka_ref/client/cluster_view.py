"""The client's view of the cluster: brokers, partitions and their leaders.

A Kafka client starts knowing only a few *bootstrap servers*. It asks any of them for
**Metadata** and learns the whole cluster: every broker (node id, host, port), the
controller, and for each topic it cares about the partitions with their leader, replicas
and in-sync replicas. Produce and Fetch must go to a partition's *leader*, so this view
decides where every request is sent.

The view goes stale: leaders move when brokers fail, topics are created and deleted,
partitions are added. A client therefore refreshes it

* when an answer says the view is wrong - NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
  LEADER_NOT_AVAILABLE (a topic still being created), a lost connection - by calling
  `request_update()` (Kafka: `Metadata.requestUpdate`);
* when it needs a topic it has not seen (`add_topic`);
* and every `metadata.max.age.ms` (5 minutes) in any case.

Refreshes are spaced by `retry.backoff.ms` so that a broken topic does not turn into a
storm of Metadata requests. The network client sends the request; this module only keeps
the state: `Cluster` is an immutable snapshot (Kafka's `Cluster`), `Metadata` the
thread-safe holder that decides when the next refresh is due (Kafka's `Metadata`). A
producer's application thread waits on it (`await_update`) while its sender thread fetches.

Spec rules: CLIENT-10 (spec/client.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError

# Errors in an answer that mean "your metadata is stale": refresh, then retry.
INVALIDATES_METADATA = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_CONTROLLER,
    }
)


def error_code(code: int) -> ErrorCode:
    """An error code off the wire; an unknown number is UNKNOWN_SERVER_ERROR."""
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


class Node(NamedTuple):
    """A broker. Bootstrap servers get negative ids until Metadata names them."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
    """One partition as Metadata describes it; `leader` is -1 when it has none."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()


def partitions_of(topic: Any) -> tuple[PartitionInfo, ...]:
    """A Metadata response topic's partitions as PartitionInfo, by partition number."""
    infos = (
        PartitionInfo(
            topic.name,
            p.partition_index,
            p.leader_id,
            tuple(p.replica_nodes),
            tuple(p.isr_nodes),
            tuple(p.offline_replicas),
        )
        for p in topic.partitions
    )
    return tuple(sorted(infos, key=lambda info: info.partition))


@dataclass(frozen=True)
class Cluster:
    """An immutable snapshot of the cluster, as of one Metadata response."""

    nodes: tuple[Node, ...] = ()
    partitions: dict[str, tuple[PartitionInfo, ...]] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None
    topic_errors: dict[str, ErrorCode] = field(default_factory=dict)
    internal_topics: frozenset[str] = frozenset()
    is_bootstrap: bool = False

    @classmethod
    def bootstrap(cls, addresses: Iterable[tuple[str, int]]) -> Cluster:
        """The cluster before the first Metadata: only the configured servers, ids -1, -2..."""
        nodes = tuple(Node(-1 - i, host, port) for i, (host, port) in enumerate(addresses))
        return cls(nodes=nodes, is_bootstrap=True)

    @classmethod
    def from_metadata_response(cls, response: Any) -> Cluster:
        nodes = tuple(Node(b.node_id, b.host, b.port, b.rack) for b in response.brokers)
        partitions, errors, internal = {}, {}, set()
        for topic in response.topics:
            code = error_code(topic.error_code)
            if code != ErrorCode.NO_ERROR:
                errors[topic.name] = code
                continue
            if topic.is_internal:
                internal.add(topic.name)
            partitions[topic.name] = partitions_of(topic)
        return cls(
            nodes=nodes,
            partitions=partitions,
            controller_id=response.controller_id,
            cluster_id=response.cluster_id,
            topic_errors=errors,
            internal_topics=frozenset(internal),
        )

    def node(self, node_id: int) -> Node | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    @property
    def controller(self) -> Node | None:
        return self.node(self.controller_id)

    @property
    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def partitions_for_topic(self, topic: str) -> tuple[PartitionInfo, ...]:
        return self.partitions.get(topic, ())

    def partition_count(self, topic: str) -> int | None:
        """The number of partitions, or None when the topic is unknown."""
        infos = self.partitions.get(topic)
        return len(infos) if infos else None

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions that have a leader right now (the sticky partitioner's choice)."""
        return [p.partition for p in self.partitions_for_topic(topic) if p.leader >= 0]

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The node id of the partition's leader, or None when unknown or leaderless."""
        infos = self.partitions.get(tp.topic, ())
        if 0 <= tp.partition < len(infos) and infos[tp.partition].leader >= 0:
            return infos[tp.partition].leader
        return None

    def partitions_for_node(self, node_id: int) -> list[TopicPartition]:
        """Every partition this node leads (the sender drains them together)."""
        return [
            TopicPartition(info.topic, info.partition)
            for infos in self.partitions.values()
            for info in infos
            if info.leader == node_id
        ]


class Metadata:
    """The shared, refreshable cluster view of one client (Kafka's `Metadata`).

    Times are milliseconds on a monotonic clock, passed in by the caller.
    """

    def __init__(
        self,
        bootstrap: Iterable[tuple[str, int]],
        *,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        allow_auto_topic_creation: bool = True,
    ) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.need_all_topics = False
        self._cluster = Cluster.bootstrap(bootstrap)
        self._topics: set[str] = set()
        self._need_update = True  # the bootstrap view must be replaced at once
        self._last_refresh_ms = -(10**12)  # the last attempt, successful or not
        self._last_success_ms = -(10**12)
        self._version = 0
        self._changed = threading.Condition()
        self.auth_error: KafkaError | None = None  # the broker refused our credentials

    def fetch(self) -> Cluster:
        """The current snapshot (never None: before the first answer, the bootstrap view)."""
        return self._cluster

    @property
    def version(self) -> int:
        """Bumped by every successful update: what `await_update` waits on."""
        return self._version

    @property
    def topics(self) -> frozenset[str]:
        with self._changed:
            return frozenset(self._topics)

    def add_topic(self, topic: str) -> None:
        """Track `topic`; a topic we have never described is an immediate reason to refresh."""
        with self._changed:
            if topic not in self._topics:
                self._topics.add(topic)
                if topic not in self._cluster.partitions:
                    self._need_update = True

    def set_topics(self, topics: Iterable[str]) -> None:
        with self._changed:
            self._topics = set(topics)
            if any(t not in self._cluster.partitions for t in self._topics):
                self._need_update = True

    def request_update(self) -> int:
        """Ask for a refresh as soon as the backoff allows; returns the version to wait past."""
        with self._changed:
            self._need_update = True
            return self._version

    @property
    def update_requested(self) -> bool:
        return self._need_update

    def time_to_next_update(self, now_ms: int) -> int:
        """Milliseconds until a Metadata request is due (0: send one now)."""
        if self._need_update:
            expires = 0
        else:
            expires = max(self._last_success_ms + self.metadata_max_age_ms - now_ms, 0)
        backoff = max(self._last_refresh_ms + self.retry_backoff_ms - now_ms, 0)
        return max(expires, backoff)

    def build_request_topics(self) -> list[str] | None:
        """The topics to ask for: None for all topics, else the tracked ones."""
        with self._changed:  # the producer's send() may add a topic meanwhile
            return None if self.need_all_topics else sorted(self._topics)

    def update(self, response: Any, now_ms: int) -> Cluster:
        """Install a Metadata response as the new view and wake everybody waiting."""
        cluster = Cluster.from_metadata_response(response)
        with self._changed:
            self._cluster = cluster
            self._last_refresh_ms = self._last_success_ms = now_ms
            # A tracked topic that is still being created, or a partition without a leader,
            # needs another look after the backoff (Kafka: the retriable topic errors).
            self._need_update = any(
                cluster.topic_errors.get(topic, ErrorCode.NO_ERROR).retriable
                or any(p.leader < 0 for p in cluster.partitions_for_topic(topic))
                for topic in self._topics
            )
            self._version += 1
            self._changed.notify_all()
        return cluster

    def failed_update(self, now_ms: int) -> None:
        """A Metadata request failed: try again after the backoff."""
        with self._changed:
            self._last_refresh_ms = now_ms
            self._need_update = True

    def set_auth_error(self, error: KafkaError | None) -> None:
        """The broker refused our credentials (None: a later login worked). Waiters wake up
        to raise it: waiting cannot help (Kafka: `Metadata.fatalError`, SEC-24)."""
        with self._changed:
            self.auth_error = error
            self._changed.notify_all()

    def maybe_throw_auth_failure(self) -> None:
        """Raise the broker's refusal of our credentials, if there was one."""
        if self.auth_error is not None:
            raise self.auth_error

    def await_update(self, last_version: int, timeout_s: float) -> bool:
        """Block until an update newer than `last_version` arrives; False on timeout;
        the authentication error if the broker refused our credentials meanwhile."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._version <= last_version:
                self.maybe_throw_auth_failure()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True
