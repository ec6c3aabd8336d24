"""The group membership protocol, client side: find the coordinator, join, sync, leave.

A consumer group is run by one broker, the group's **coordinator** (the leader of the
`__consumer_offsets` partition that the group id hashes to). A member talks to it in
four steps (Kafka's `AbstractCoordinator`, the part that knows nothing of partitions):

1. **FindCoordinator(group id)** to any broker -> the coordinator's node id, host, port.
   Requests to it travel on a connection of their own (node id `2**31 - 1 - id`, as the
   Java client does): the broker holds a JoinGroup for seconds, and a broker answers the
   requests of one connection in order, so sharing it would stall the Fetch requests.
2. **JoinGroup(member id, protocols)**: every member sends the assignors it supports, each
   with its metadata (its subscription). The coordinator waits until every known member has
   (re)joined or the rebalance timeout passes, then answers all of them: a new
   **generation id**, the chosen protocol, the **leader**'s member id, and - to the leader
   only - every member's metadata. A new member first gets MEMBER_ID_REQUIRED with its
   member id and joins again with it (KIP-394).
3. **SyncGroup(generation, assignments)**: the leader runs the assignor and sends every
   member's assignment; the others send none. Each member receives its own.
4. **Heartbeat(generation)** every `heartbeat.interval.ms` from a background thread
   (heartbeat.py). A member silent for `session.timeout.ms` is removed; a heartbeat
   answered REBALANCE_IN_PROGRESS means "join again". **LeaveGroup** ends membership at
   once, so a closing member's partitions move without waiting for its session to expire.

The state machine: UNJOINED -> PREPARING_REBALANCE (JoinGroup sent) -> COMPLETING_REBALANCE
(SyncGroup sent) -> STABLE; any error sends the member back to rejoin. Everything here is
non-blocking per step: `ensure_active_group(deadline)` advances the state machine as far as
the deadline allows and returns, so one thread can drive several consumers, and a consumer's
`poll(timeout)` never waits longer than its timeout for a rebalance.

Errors, as the Java client treats them: NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE ->
find the coordinator again; COORDINATOR_LOAD_IN_PROGRESS -> retry after `retry.backoff.ms`;
REBALANCE_IN_PROGRESS -> join again; UNKNOWN_MEMBER_ID -> forget the member id and join as a
new member; ILLEGAL_GENERATION -> forget the generation and join again; MEMBER_ID_REQUIRED
-> join again with the id given. The others (INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID,
GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID...) are raised to the application.

Spec rules: CLIENT-20, CLIENT-21, CLIENT-29, CLIENT-31 (spec/client.md).
"""

from __future__ import annotations

import enum
import logging
import threading
from dataclasses import dataclass
from typing import Any

from kafka_ref.client.cluster_view import Metadata, Node, error_code
from kafka_ref.client.connection import ClientRequest
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    FindCoordinatorRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)

log = logging.getLogger("kafka_ref.client")

COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class MemberState(enum.Enum):
    UNJOINED = "unjoined"  # no generation, or it was lost
    PREPARING_REBALANCE = "preparing"  # JoinGroup sent
    COMPLETING_REBALANCE = "completing"  # SyncGroup sent
    STABLE = "stable"  # an assignment for the current generation


@dataclass(frozen=True)
class Generation:
    """The member's identity in the group: valid until the next rebalance."""

    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None


NO_GENERATION = Generation()


class GroupError(KafkaError):
    """An error the group protocol cannot recover from (raised from poll)."""


class AbstractCoordinator:
    """Discovery, join/sync and leave; subclasses supply metadata and assignments."""

    protocol_type = "consumer"

    def __init__(
        self,
        client: NetworkClient,
        metadata: Metadata,
        *,
        group_id: str,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 300_000,
        heartbeat_interval_ms: int = 3000,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
    ) -> None:
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ValueError("heartbeat.interval.ms must be below session.timeout.ms")
        self.client, self.metadata = client, metadata
        self.group_id, self.group_instance_id = group_id, group_instance_id
        self.session_timeout_ms, self.rebalance_timeout_ms = (
            session_timeout_ms,
            rebalance_timeout_ms,
        )
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.retry_backoff_ms, self.request_timeout_ms = retry_backoff_ms, request_timeout_ms
        # The heartbeat thread reads and resets the generation and the coordinator; every
        # change to them happens under this lock (Java: `synchronized (AbstractCoordinator)`).
        self.lock = threading.RLock()
        self.coordinator: Node | None = None
        self.generation = NO_GENERATION
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.needs_join_prepare = True
        self._find_request: ClientRequest | None = None
        self._join_request: ClientRequest | None = None
        self._sync_request: ClientRequest | None = None
        self._retry_at_ms = 0
        self.heartbeat_thread = None  # started at the first join (heartbeat.py)

    # -- what a concrete group member supplies -----------------------------------------

    def join_metadata(self) -> list[tuple[str, bytes]]:
        raise NotImplementedError

    def on_join_prepare(self, generation: Generation) -> None:
        """Before (re)joining: the eager consumer commits and revokes here."""

    def perform_assignment(
        self, protocol: str, members: list[tuple[str, str | None, bytes]]
    ) -> dict[str, bytes]:
        raise NotImplementedError

    def on_join_complete(self, generation: Generation, assignment: bytes) -> None:
        raise NotImplementedError

    def start_heartbeat_thread(self) -> None:
        raise NotImplementedError

    # -- the coordinator -----------------------------------------------------------------

    def coordinator_unknown(self) -> bool:
        with self.lock:
            return self.coordinator is None

    def mark_coordinator_unknown(self, reason: str) -> None:
        with self.lock:
            if self.coordinator is not None:
                log.info(
                    "group %s: coordinator %s unusable (%s)",
                    self.group_id,
                    self.coordinator.address,
                    reason,
                )
                self.coordinator = None

    def ensure_coordinator_ready(self, deadline_ms: int) -> bool:
        """Find the coordinator (FindCoordinator to the least loaded broker) by the deadline."""
        while self.coordinator_unknown():
            if self._find_request is None and now_ms() >= self._retry_at_ms:
                node = self.client.least_loaded_node()
                if node is not None:
                    body = FindCoordinatorRequest(key=self.group_id, key_type=0)
                    self._find_request = self.client.send(node, ApiKey.FIND_COORDINATOR, body)
            if self._find_request is not None and self._find_request.done:
                self._handle_find_coordinator(self._find_request)
                self._find_request = None
                continue
            remaining = deadline_ms - now_ms()
            if remaining <= 0:
                return False
            self.client.poll(min(remaining, self.retry_backoff_ms))
        return True

    def _handle_find_coordinator(self, request: ClientRequest) -> None:
        if request.error is not None:
            self._retry_at_ms = now_ms() + self.retry_backoff_ms
            return
        response = request.response
        code = error_code(response.error_code)
        if code != ErrorCode.NO_ERROR:
            if not code.retriable:
                raise GroupError(f"FindCoordinator for group {self.group_id}", code=code)
            self._retry_at_ms = now_ms() + self.retry_backoff_ms
            return
        node = Node(2**31 - 1 - response.node_id, response.host, response.port)
        self.client.add_node(node)
        with self.lock:
            self.coordinator = node
        log.info(
            "group %s: coordinator is node %d at %s:%d",
            self.group_id,
            response.node_id,
            response.host,
            response.port,
        )

    # -- join and sync -------------------------------------------------------------------

    def request_rejoin(self, reason: str) -> None:
        with self.lock:
            if not self.rejoin_needed:
                log.info("group %s: rejoin needed (%s)", self.group_id, reason)
            self.rejoin_needed = True

    def reset_generation(self, reason: str, *, keep_member_id: bool = False) -> None:
        """Forget the generation (the partitions are lost) and rejoin."""
        with self.lock:
            member_id = self.generation.member_id if keep_member_id else ""
            self.generation = Generation(-1, member_id, None)
            self.state = MemberState.UNJOINED
            self.rejoin_needed = True
        log.info("group %s: generation reset (%s)", self.group_id, reason)

    def rejoin_needed_or_pending(self) -> bool:
        with self.lock:
            return self.rejoin_needed or self.state != MemberState.STABLE

    def ensure_active_group(self, deadline_ms: int) -> bool:
        """Advance join/sync until STABLE (True) or the deadline passes (False)."""
        self.start_heartbeat_thread()
        while True:
            if not self.ensure_coordinator_ready(deadline_ms):
                return False
            if self._join_request is not None and self._join_request.done:
                request, self._join_request = self._join_request, None
                self._handle_join(request)
            elif self._sync_request is not None and self._sync_request.done:
                request, self._sync_request = self._sync_request, None
                self._handle_sync(request)
            pending = self._join_request or self._sync_request
            if pending is None:
                if not self.rejoin_needed_or_pending():
                    return True
                if now_ms() >= self._retry_at_ms and not self.coordinator_unknown():
                    self._send_join()
                    continue
            remaining = deadline_ms - now_ms()
            if remaining <= 0:
                return False
            if pending is None:  # backing off before the next JoinGroup
                self.client.poll(min(remaining, max(self._retry_at_ms - now_ms(), 1)))
            elif not pending.done:
                self.client.poll(remaining)

    def _send_join(self) -> None:
        if self.needs_join_prepare:
            # Once per rebalance, even if the JoinGroup has to be retried (Java: the same)
            self.on_join_prepare(self.generation)
            self.needs_join_prepare = False
        with self.lock:
            self.state = MemberState.PREPARING_REBALANCE
            self.rejoin_needed = False
            member_id, node = self.generation.member_id, self.coordinator
        if node is None:
            return
        body = JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            member_id=member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type,
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                for name, metadata in self.join_metadata()
            ],
        )
        log.debug("group %s: JoinGroup as %r", self.group_id, member_id)
        self._join_request = self.client.send(node.node_id, ApiKey.JOIN_GROUP, body)

    def _failed(self, request: ClientRequest, what: str) -> ErrorCode | None:
        """Shared error handling of JoinGroup and SyncGroup: None when the answer is good."""
        if request.error is not None:  # the connection broke: the coordinator may have moved
            self.mark_coordinator_unknown(f"{what}: {request.error}")
            self.request_rejoin(f"{what} failed")
            self._retry_at_ms = now_ms() + self.retry_backoff_ms
            return request.error.code
        code = error_code(request.response.error_code)
        if code == ErrorCode.NO_ERROR:
            return None
        log.info("group %s: %s answered %s", self.group_id, what, code.name)
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.reset_generation(f"{what}: {code.name}")
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.reset_generation(f"{what}: {code.name}", keep_member_id=True)
        elif code in COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(code.name)
            self.request_rejoin(code.name)
        elif code in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            self.request_rejoin(code.name)
            if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                self._retry_at_ms = now_ms() + self.retry_backoff_ms
        elif code != ErrorCode.MEMBER_ID_REQUIRED:
            with self.lock:
                self.state = MemberState.UNJOINED
            raise GroupError(f"{what} for group {self.group_id}", code=code)
        return code

    def _handle_join(self, request: ClientRequest) -> None:
        code = self._failed(request, "JoinGroup")
        response = request.response
        if code == ErrorCode.MEMBER_ID_REQUIRED:  # KIP-394: join again, with this id
            with self.lock:
                self.generation = Generation(-1, response.member_id, None)
                self.rejoin_needed = True
            return
        if code is not None:
            return
        generation = Generation(response.generation_id, response.member_id, response.protocol_name)
        with self.lock:
            self.generation = generation
            self.state = MemberState.COMPLETING_REBALANCE
        if response.leader == response.member_id:
            members = [(m.member_id, m.group_instance_id, m.metadata) for m in response.members]
            log.info(
                "group %s: leader of generation %d with %d members, assigning (%s)",
                self.group_id,
                generation.generation_id,
                len(members),
                generation.protocol_name,
            )
            assignments = self.perform_assignment(generation.protocol_name, members)
        else:
            assignments = {}
        body = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type,
            protocol_name=generation.protocol_name,
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in assignments.items()
            ],
        )
        self._sync_request = self.client.send(request.node_id, ApiKey.SYNC_GROUP, body)

    def _handle_sync(self, request: ClientRequest) -> None:
        if self._failed(request, "SyncGroup") is not None:
            return
        with self.lock:
            if self.rejoin_needed or self.state != MemberState.COMPLETING_REBALANCE:
                return  # fenced meanwhile (heartbeat thread): this assignment is stale
            generation = self.generation
        self.on_join_complete(generation, request.response.assignment)
        with self.lock:
            if self.generation == generation and self.state == MemberState.COMPLETING_REBALANCE:
                self.state = MemberState.STABLE
        self.needs_join_prepare = True
        log.info(
            "group %s: joined generation %d as %s",
            self.group_id,
            generation.generation_id,
            generation.member_id,
        )

    # -- leave ---------------------------------------------------------------------------

    def is_dynamic_member(self) -> bool:
        return self.group_instance_id is None

    def leave_group_request(self) -> Any | None:
        """The LeaveGroup to send now, or None: static members never leave (KIP-345), so a
        restart within session.timeout.ms gets the same partitions back without a rebalance."""
        with self.lock:
            member_id = self.generation.member_id
            if not self.is_dynamic_member() or not member_id or self.coordinator is None:
                return None
        return LeaveGroupRequest(group_id=self.group_id, member_id=member_id)

    def maybe_leave_group(self, reason: str, timeout_ms: int) -> None:
        """LeaveGroup (best effort, from the application thread); forget the generation."""
        body = self.leave_group_request()
        node = self.coordinator
        self.cancel_pending()
        if body is not None and node is not None:
            log.info("group %s: member %s leaving (%s)", self.group_id, body.member_id, reason)
            try:
                self.client.send_and_wait(node.node_id, ApiKey.LEAVE_GROUP, body, timeout_ms)
            except KafkaError as err:
                log.debug("group %s: LeaveGroup failed: %s", self.group_id, err)
        self.reset_generation(reason)

    def cancel_pending(self) -> None:
        self._join_request = self._sync_request = None
