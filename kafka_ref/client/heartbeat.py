"""Heartbeats: how a group member proves it is alive, and how it learns of a rebalance.

The coordinator knows a member is alive only from its requests. A member that sends
nothing for `session.timeout.ms` (default 45 s) is removed from the group and its
partitions go to the others. So every member sends a **Heartbeat(group, generation,
member id)** every `heartbeat.interval.ms` (default 3 s; keep it under a third of the
session timeout, so that two lost heartbeats are not fatal). The answer is also the
coordinator's only way to reach a member: REBALANCE_IN_PROGRESS means "a member joined or
left: join again", UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION mean "you were removed: your
partitions are gone".

Heartbeats must not depend on the application: a `poll()` loop that spends ten seconds on
one batch of records must not lose its partitions. The Java client therefore heartbeats
from a background thread (`AbstractCoordinator.HeartbeatThread`), and so does this one.
Liveness of the *application* is a separate timer: if `poll()` is not called for
`max.poll.interval.ms` (default 5 min), the thread assumes the application is stuck and
leaves the group (LeaveGroup), so that its partitions move to members that make progress;
the next `poll()` joins again (KIP-62).

**One connection per thread.** `NetworkClient` is not thread-safe, and the application
thread may sit inside `NetworkClient.poll` waiting for a long-polling Fetch. The Java
client shares its network client under a lock; here that lock would hold heartbeats back
behind every Fetch wait. So the heartbeat thread owns a `BrokerConnection` of its own to the
coordinator, and the two threads share only the small coordinator state (generation,
member state, coordinator address) under `AbstractCoordinator.lock`. The thread never runs
user code: what it learns it records (rejoin needed, generation reset), and the application
thread acts on it - rebalance callbacks included - in its next `poll()`.

Spec rules: CLIENT-24, CLIENT-25 (spec/client.md).
"""

from __future__ import annotations

import logging
import threading

from kafka_ref.client.cluster_view import Node, error_code
from kafka_ref.client.connection import BrokerConnection
from kafka_ref.client.network_client import now_ms
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import HeartbeatRequest

log = logging.getLogger("kafka_ref.client")


class Heartbeat:
    """The member's timers (Kafka's `Heartbeat`): when to heartbeat, when to give up."""

    def __init__(
        self, session_timeout_ms: int, heartbeat_interval_ms: int, max_poll_interval_ms: int
    ) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        now = now_ms()
        self.last_sent = self.last_received = self.last_poll = now

    def poll(self, now: int) -> None:
        """The application called poll(): it is alive."""
        self.last_poll = now

    def reset(self, now: int) -> None:
        """A new generation: the session starts over."""
        self.last_sent = self.last_received = now

    def time_to_next_heartbeat(self, now: int) -> int:
        return max(self.last_sent + self.heartbeat_interval_ms - now, 0)

    def session_timeout_expired(self, now: int) -> bool:
        return now - self.last_received > self.session_timeout_ms

    def poll_timeout_expired(self, now: int) -> bool:
        return now - self.last_poll > self.max_poll_interval_ms


class HeartbeatThread(threading.Thread):
    """Heartbeats for one coordinator while the member is in a generation."""

    def __init__(self, coordinator, heartbeat: Heartbeat, client_id: str) -> None:
        super().__init__(name=f"kafka-ref-heartbeat-{coordinator.group_id}", daemon=True)
        self.coordinator, self.heartbeat, self.client_id = coordinator, heartbeat, client_id
        self.wake = threading.Condition(coordinator.lock)
        self.closed = False
        self._conn: BrokerConnection | None = None

    def close(self) -> None:
        with self.wake:
            self.closed = True
            self.wake.notify_all()
        if self is not threading.current_thread():
            self.join(5.0)
        if self._conn is not None:
            self._conn.close()

    def run(self) -> None:
        from kafka_ref.client.abstract_coordinator import MemberState

        coord = self.coordinator
        while True:
            with self.wake:
                if self.closed:
                    return
                now = now_ms()
                # Only a member with a generation heartbeats; during a JoinGroup the broker
                # keeps the member alive itself.
                if (
                    coord.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)
                    or coord.coordinator is None
                ):
                    self.heartbeat.reset(now)
                    self.wake.wait(coord.retry_backoff_ms / 1000)
                    continue
                if self.heartbeat.poll_timeout_expired(now):
                    body = coord.leave_group_request()
                    node = coord.coordinator
                    coord.reset_generation("max.poll.interval.ms expired: poll() was not called")
                    leave = (node, body)
                elif self.heartbeat.session_timeout_expired(now):
                    coord.mark_coordinator_unknown("no heartbeat answer within the session")
                    continue
                else:
                    wait_ms = self.heartbeat.time_to_next_heartbeat(now)
                    if wait_ms > 0:
                        self.wake.wait(wait_ms / 1000)
                        continue
                    leave = None
                    generation, node = coord.generation, coord.coordinator
                    self.heartbeat.last_sent = now
            # Network I/O outside the lock: the application thread never waits on it.
            if leave is not None:
                node, body = leave
                if body is not None:
                    log.warning(
                        "group %s: poll() not called within max.poll.interval.ms; "
                        "leaving the group",
                        coord.group_id,
                    )
                    self._request(node, ApiKey.LEAVE_GROUP, body)
                continue
            body = HeartbeatRequest(
                group_id=coord.group_id,
                generation_id=generation.generation_id,
                member_id=generation.member_id,
                group_instance_id=coord.group_instance_id,
            )
            response = self._request(node, ApiKey.HEARTBEAT, body)
            with self.wake:
                self._handle(response, generation, node)

    def _request(self, node: Node, api_key: ApiKey, body):
        """Send on the thread's own connection; None if the coordinator cannot be reached."""
        try:
            if self._conn is None or (self._conn.host, self._conn.port) != (node.host, node.port):
                if self._conn is not None:
                    self._conn.close()
                self._conn = BrokerConnection(
                    node.host,
                    node.port,
                    client_id=self.client_id,
                    request_timeout_ms=self.coordinator.request_timeout_ms,
                    security=self.coordinator.client.security,
                )
            if not self._conn.connected:
                self._conn.connect()
            return self._conn.request(api_key, body)
        except KafkaError as err:
            log.debug("group %s: %s failed: %s", self.coordinator.group_id, api_key.name, err)
            if self._conn is not None:
                self._conn.close()
            return None

    def _handle(self, response, generation, node: Node) -> None:
        """Record what the answer says (under the lock); the application thread acts on it."""
        from kafka_ref.client.abstract_coordinator import MemberState

        coord = self.coordinator
        if coord.generation != generation:
            return  # the member rejoined meanwhile: this answer is about the past
        if response is None:
            coord.mark_coordinator_unknown("heartbeat failed")
            return
        code = error_code(response.error_code)
        if code == ErrorCode.NO_ERROR:
            self.heartbeat.last_received = now_ms()
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.heartbeat.last_received = now_ms()
            if coord.state == MemberState.STABLE:  # during our own sync it is expected
                coord.request_rejoin("heartbeat: the group is rebalancing")
        elif code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            coord.mark_coordinator_unknown(f"heartbeat: {code.name}")
        elif code == ErrorCode.ILLEGAL_GENERATION:
            coord.reset_generation(f"heartbeat: {code.name}", keep_member_id=True)
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            coord.reset_generation(f"heartbeat: {code.name}")
        else:
            log.warning("group %s: heartbeat answered %s", coord.group_id, code.name)
