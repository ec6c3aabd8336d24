"""The consumer's side of a group: subscriptions in, partitions out, rebalance callbacks.

`AbstractCoordinator` (abstract_coordinator.py) runs the membership protocol with opaque
bytes. This module gives the bytes their consumer meaning (Kafka's `ConsumerCoordinator`):

* **JoinGroup metadata** - one entry per configured assignor
  (`partition.assignment.strategy`, Kafka's default `["range", "cooperative-sticky"]`),
  each a `ConsumerProtocolSubscription`: the subscribed topics and the partitions owned now.
* **The leader's work** - decode every member's subscription, make sure the metadata knows
  every topic any member wants, run the assignor the coordinator chose, encode one
  `ConsumerProtocolAssignment` per member for SyncGroup.
* **Eager versus cooperative** (KIP-429) - the rebalance protocol is COOPERATIVE only when
  every configured assignor supports it (so the default list, with "range", is EAGER, as in
  Kafka 3.x). Eager: before joining, the member commits (auto-commit), calls
  `on_partitions_revoked(all)` and gives everything up. Cooperative: it keeps its
  partitions through the join; after SyncGroup it revokes only what it lost, and if it lost
  any, joins again at once so they can be reassigned.
* **The rebalance listener** - `on_partitions_revoked` (before a partition is given up: the
  last chance to commit it), `on_partitions_assigned` (after the new assignment is in
  place), `on_partitions_lost` (the generation is gone, so committing is impossible: the
  partitions may already belong to someone else). Callbacks run on the application thread,
  inside `poll()`, revoked always before assigned.

Offsets (commit, committed, auto-commit, starting positions) are in offset_committer.py.

Spec rules: CLIENT-20, CLIENT-21, CLIENT-22, CLIENT-23 (spec/client.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kafka_ref.client import assignors as assignor_registry
from kafka_ref.client.abstract_coordinator import (
    AbstractCoordinator,
    Generation,
    MemberState,
)
from kafka_ref.client.assignors import RebalanceProtocol, Subscription
from kafka_ref.client.cluster_view import Metadata
from kafka_ref.client.heartbeat import Heartbeat, HeartbeatThread
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.client.offset_committer import OffsetCommitter
from kafka_ref.client.subscription_state import SubscriptionState
from kafka_ref.common import TopicPartition
from kafka_ref.errors import KafkaError
from kafka_ref.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

log = logging.getLogger("kafka_ref.client")

DEFAULT_ASSIGNMENT_STRATEGY = ("range", "cooperative-sticky")


class ConsumerRebalanceListener:
    """Subclass and pass to `subscribe(topics, listener=...)` (Kafka's interface)."""

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        """Before giving partitions up: commit what was processed of them."""

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        """The new partitions are ours; positions come from the committed offsets."""

    def on_partitions_lost(self, lost: list[TopicPartition]) -> None:
        """The generation is gone and the partitions with it; committing is too late.
        Kafka's default calls on_partitions_revoked."""
        self.on_partitions_revoked(lost)


class ConsumerCoordinator(AbstractCoordinator):
    """Group membership for a consumer: assignment, callbacks, commits (ConsumerCoordinator)."""

    def __init__(
        self,
        client: NetworkClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        fetcher,
        *,
        group_id: str,
        client_id: str,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 3000,
        max_poll_interval_ms: int = 300_000,
        assignment_strategy: Iterable[str] = DEFAULT_ASSIGNMENT_STRATEGY,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
    ) -> None:
        super().__init__(
            client,
            metadata,
            group_id=group_id,
            group_instance_id=group_instance_id,
            session_timeout_ms=session_timeout_ms,
            # The leader needs every member back within the rebalance timeout; a member
            # rejoins from poll(), so the longest it may take is max.poll.interval.ms.
            rebalance_timeout_ms=max_poll_interval_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            retry_backoff_ms=retry_backoff_ms,
            request_timeout_ms=request_timeout_ms,
        )
        if isinstance(assignment_strategy, str):
            assignment_strategy = [assignment_strategy]
        self.assignors = [assignor_registry.get(name) for name in assignment_strategy]
        if not self.assignors:
            raise ValueError("partition.assignment.strategy must name at least one assignor")
        cooperative = all(
            RebalanceProtocol.COOPERATIVE in a.supported_protocols for a in self.assignors
        )
        self.protocol = RebalanceProtocol.COOPERATIVE if cooperative else RebalanceProtocol.EAGER
        self.subscriptions, self.fetcher, self.client_id = subscriptions, fetcher, client_id
        self.heartbeat = Heartbeat(session_timeout_ms, heartbeat_interval_ms, max_poll_interval_ms)
        self.offsets = OffsetCommitter(
            self, enable_auto_commit=enable_auto_commit, interval_ms=auto_commit_interval_ms
        )
        self._snapshot: dict[str, int] = {}  # partition counts the last assignment was made on
        self._previous: tuple[int, list[TopicPartition]] = (-1, [])  # generation, partitions
        self._listener_error: BaseException | None = None

    def start_heartbeat_thread(self) -> None:
        if self.heartbeat_thread is None:
            self.heartbeat_thread = HeartbeatThread(self, self.heartbeat, self.client_id)
            self.heartbeat_thread.start()

    # -- the application's poll ----------------------------------------------------------

    def poll(self, deadline_ms: int) -> bool:
        """Called by every Consumer.poll: liveness, (re)join, auto-commit. True when the
        consumer may fetch (it holds a current assignment, or assigns partitions itself)."""
        now = now_ms()
        self.heartbeat.poll(now)
        ready = True
        if self.subscriptions.is_subscribed:
            self._check_subscription_metadata()
            if self.rejoin_needed_or_pending():
                ready = self.ensure_active_group(deadline_ms)
        elif self.coordinator_unknown():
            self.ensure_coordinator_ready(now)  # start looking; commits need it later
        self.offsets.maybe_auto_commit_async(now_ms())
        self._raise_listener_error()
        return ready

    def _check_subscription_metadata(self) -> None:
        """A pattern may match new topics; partitions may be added: both mean a rebalance."""
        cluster = self.metadata.fetch()
        if self.subscriptions.pattern is not None and not cluster.is_bootstrap:
            matched = {t for t in cluster.topics if self.subscriptions.pattern.fullmatch(t)}
            matched -= set(cluster.internal_topics)
            if matched != set(self.subscriptions.subscription):
                self.subscriptions.change_subscription(matched)
                self.request_rejoin("the pattern matches other topics now")
        with self.lock:
            stable = self.state == MemberState.STABLE
        if stable and self._snapshot:
            for topic, count in self._snapshot.items():
                now_count = cluster.partition_count(topic)
                if now_count is not None and now_count != count:
                    self.request_rejoin(f"{topic} has {now_count} partitions now")
                    break

    # -- join ----------------------------------------------------------------------------

    def join_metadata(self) -> list[tuple[str, bytes]]:
        topics = sorted(self.subscriptions.subscription)
        owned = self.subscriptions.assigned_partitions()
        out = []
        for assignor in self.assignors:
            generation, owned_now = self.generation.generation_id, owned
            if self.protocol == RebalanceProtocol.EAGER and assignor.name == "sticky":
                # Eager members own nothing while they join; the sticky assignor still needs
                # what they had (Kafka carries it in StickyAssignor user data).
                generation, owned_now = self._previous
            sub = Subscription(tuple(topics), tuple(owned_now), b"", generation)
            out.append((assignor.name, encode_subscription(sub)))
        return out

    def on_join_prepare(self, generation: Generation) -> None:
        """Eager: commit, then revoke everything. A lost generation: partitions are lost."""
        owned = self.subscriptions.assigned_partitions()
        self._previous = (generation.generation_id, owned)
        if generation.generation_id < 0:
            if owned:
                self._invoke("on_partitions_lost", owned)
                self._give_up(owned)
            return
        self.offsets.maybe_auto_commit_sync(self.request_timeout_ms)
        if self.protocol == RebalanceProtocol.EAGER:
            if owned:
                self._invoke("on_partitions_revoked", owned)
            self._give_up(owned)
        else:  # cooperative: only partitions of topics no longer subscribed
            gone = [tp for tp in owned if tp.topic not in self.subscriptions.subscription]
            if gone:
                self._invoke("on_partitions_revoked", gone)
                self._give_up(gone)

    def _give_up(self, partitions: list[TopicPartition]) -> None:
        keep = [tp for tp in self.subscriptions.assigned_partitions() if tp not in partitions]
        self.subscriptions.assign_from_subscribed(keep)
        for tp in partitions:
            self.fetcher.clear_buffered(tp)

    def perform_assignment(
        self, protocol: str, members: list[tuple[str, str | None, bytes]]
    ) -> dict[str, bytes]:
        """The leader: run the chosen assignor over every member's subscription."""
        assignor = next((a for a in self.assignors if a.name == protocol), None)
        if assignor is None:
            raise KafkaError(f"the coordinator chose assignor {protocol!r}, not one of ours")
        subscriptions = {}
        for member_id, instance_id, metadata in members:
            _, sub = decode_subscription(metadata)
            subscriptions[member_id] = Subscription(
                sub.topics, sub.owned_partitions, sub.user_data, sub.generation_id, instance_id
            )
        topics = {t for sub in subscriptions.values() for t in sub.topics}
        cluster = self._await_topics(topics)
        self._snapshot = dict(cluster)
        assignment = assignor.assign(cluster, subscriptions)
        for member_id, tps in sorted(assignment.items()):
            log.info(
                "group %s: assigning %s to %s",
                self.group_id,
                ", ".join(map(str, (TopicPartition(*tp) for tp in tps))) or "nothing",
                member_id,
            )
        return {m: encode_assignment(tps) for m, tps in assignment.items()}

    def _await_topics(self, topics: set[str]) -> dict[str, int]:
        """Partition counts of `topics`: the leader tracks the whole group's topics."""
        if not topics <= set(self.metadata.fetch().partitions):
            self.metadata.set_topics(self.metadata.topics | topics)
            try:
                self.client.await_metadata(self.request_timeout_ms)
            except KafkaError as err:  # assign what is known; a later change rebalances
                log.warning("group %s: metadata for the assignment: %s", self.group_id, err)
        cluster = self.metadata.fetch()
        return {t: n for t in sorted(topics) if (n := cluster.partition_count(t))}

    def on_join_complete(self, generation: Generation, assignment: bytes) -> None:
        _, partitions, _ = decode_assignment(assignment)
        new = sorted({TopicPartition(*tp) for tp in partitions})
        foreign = [tp for tp in new if tp.topic not in self.subscriptions.subscription]
        if foreign:  # the subscription changed while we joined: join again
            self.request_rejoin(f"assigned unsubscribed {', '.join(map(str, foreign))}")
        owned = self.subscriptions.assigned_partitions()
        revoked = [tp for tp in owned if tp not in new]
        added = [tp for tp in new if tp not in owned]
        if revoked:  # only in cooperative mode: eager members own nothing by now
            self._invoke("on_partitions_revoked", revoked)
            self._give_up(revoked)
            self.request_rejoin("revoked partitions must be reassigned (KIP-429)")
        self.subscriptions.assign_from_subscribed(new)
        self.heartbeat.reset(now_ms())
        self._invoke("on_partitions_assigned", added)

    # -- leaving -------------------------------------------------------------------------

    def on_leave_prepare(self) -> None:
        """Before LeaveGroup (close, unsubscribe): revoked, or lost without a generation."""
        owned = self.subscriptions.assigned_partitions()
        if owned and self.subscriptions.is_subscribed:
            with self.lock:
                lost = self.generation.generation_id < 0 or self.state != MemberState.STABLE
            self._invoke("on_partitions_lost" if lost else "on_partitions_revoked", owned)
            self._give_up(owned)

    def close(self, timeout_ms: int) -> None:
        """Commit (auto-commit), revoke, leave the group, stop heartbeating."""
        try:
            if self.subscriptions.is_subscribed or self.subscriptions.assigned_partitions():
                self.offsets.maybe_auto_commit_sync(timeout_ms)
            if self.subscriptions.is_subscribed:
                self.on_leave_prepare()
                self.maybe_leave_group("the consumer is being closed", timeout_ms)
        finally:
            if self.heartbeat_thread is not None:
                self.heartbeat_thread.close()
                self.heartbeat_thread = None

    # -- callbacks -----------------------------------------------------------------------

    def _invoke(self, method: str, partitions: list[TopicPartition]) -> None:
        """Run a listener callback; an exception is raised from poll after the rebalance
        step completes, so the member's state stays consistent (as the Java client)."""
        listener = self.subscriptions.listener
        if listener is None:
            return
        try:
            getattr(listener, method)(list(partitions))
        except Exception as err:
            log.error("group %s: %s raised %r", self.group_id, method, err)
            self._listener_error = self._listener_error or err

    def _raise_listener_error(self) -> None:
        if self._listener_error is not None:
            err, self._listener_error = self._listener_error, None
            raise err
