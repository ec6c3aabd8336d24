"""A KRaft broker's life as the active controller sees it: registration, heartbeats,
unfencing, controlled shutdown (Kafka: `BrokerLifecycleManager`).

Where a ZooKeeper-mode broker creates its ephemeral znode, a KRaft broker **registers**
(KBROKER-7): a BrokerRegistration to the active controller (server/node_to_controller.py)
with its id, the cluster id, an *incarnation id* new at every start (the controller tells
two processes of one broker id apart by it), its listeners, the range of each feature level
it supports, its rack. The controller answers with the broker's epoch, and the broker is
registered *fenced*: it leads nothing and is in no ISR. A registration refused (another
incarnation still has a live session, a quick restart after a kill -9, say) is tried again
every `broker.heartbeat.interval.ms`.

Then it **heartbeats**, every `broker.heartbeat.interval.ms` (2000): its broker epoch, the
offset of the last metadata record its published image holds, `want_fence` while it is not
ready to serve (it has not yet published an image holding its own registration),
`want_shut_down` once it is shutting down, and the ids of its failed log directories
(`OfflineLogDirs`, KIP-858: a directory that fails triggers a heartbeat at once,
KBROKER-21). The controller's answers move it along Kafka's
`BrokerState`s (KBROKER-9):

```
  STARTING --caught up--> RECOVERY --unfenced--> RUNNING --stop--> PENDING_CONTROLLED_SHUTDOWN
                                                                        | should shut down
                                                                        v
                                                                   SHUTTING_DOWN
```

A broker serves clients only once RUNNING: `Broker.start` waits for `unfenced` before it
opens its listeners, as Kafka's `BrokerServer` waits for `initialUnfenceFuture`. A heartbeat
that fails (no controller, an error) is sent again an interval later.

**Controlled shutdown** (KBROKER-13): at stop the broker heartbeats with `want_shut_down`;
the controller moves its leaderships to other brokers first and answers `should_shut_down`
once it leads nothing and the others have replayed that (KCTRL-5). The broker waits for that
answer at most `timeout_s` (kraft_mode.py: twice `broker.session.timeout.ms`; Kafka: until
its shutdown deadline, five minutes by default), then stops anyway (Kafka:
`beginControlledShutdown`, `controlledShutdownFuture`).

The decisions are a pure function, `next_state`, of the state and an answer.

Rules: KBROKER-7, KBROKER-9, KBROKER-13, KBROKER-21.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata.controller.features import BOOTSTRAP_FEATURES
from kafka_ref.metadata.image import METADATA_VERSION
from kafka_ref.protocol.messages import (
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from kafka_ref.security.listeners import SECURITY_PROTOCOLS, EndPoint
from kafka_ref.server.node_to_controller import ControllerUnavailableError

logger = logging.getLogger("kafka_ref.server.broker_lifecycle")

REGISTRATION_VERSION = 4  # a feature's minimum may be 0 (earlier versions leave those out)
HEARTBEAT_VERSION = 2
HEARTBEAT_INTERVAL_MS = 2000  # broker.heartbeat.interval.ms
STARTING_DELAY_S = 0.01  # Kafka: the next heartbeat 10 ms after one that found us catching up
MINIMUM_METADATA_VERSION = 7  # Kafka 4's oldest metadata.version, 3.3-IV3

# What this broker supports: every level Kafka 4.4 formats a cluster with, back to off (0),
# and metadata.version from Kafka 4's oldest. The controller refuses a broker that does not
# support a finalized level (KCTRL-2).
SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {
    name: (MINIMUM_METADATA_VERSION if name == METADATA_VERSION else 0, level)
    for name, level in BOOTSTRAP_FEATURES.items()
}


class BrokerState(enum.Enum):
    """Kafka's `BrokerState`, as far as the lifecycle manager moves it."""

    STARTING = "starting"
    RECOVERY = "recovery"
    RUNNING = "running"
    PENDING_CONTROLLED_SHUTDOWN = "pending controlled shutdown"
    SHUTTING_DOWN = "shutting down"


@dataclass(frozen=True)
class HeartbeatReply:
    """What `next_state` reads of a BrokerHeartbeat response."""

    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool


def next_state(state: BrokerState, reply: HeartbeatReply) -> BrokerState:
    """The broker's state after a successful heartbeat (KBROKER-9, KBROKER-13; Kafka:
    `BrokerHeartbeatResponseEvent`)."""
    if state == BrokerState.STARTING and reply.is_caught_up:
        return BrokerState.RECOVERY
    if state == BrokerState.RECOVERY and not reply.is_fenced:
        return BrokerState.RUNNING
    if state == BrokerState.PENDING_CONTROLLED_SHUTDOWN and reply.should_shut_down:
        return BrokerState.SHUTTING_DOWN
    return state


def registration_body(
    broker_id: int,
    cluster_id: str,
    incarnation_id: uuid.UUID,
    endpoints: Sequence[EndPoint],
    rack: str | None,
    features: Mapping[str, tuple[int, int]] = SUPPORTED_FEATURES,
    previous_broker_epoch: int = -1,
    log_dirs: Sequence[uuid.UUID] = (),
) -> Any:
    """The BrokerRegistration this broker sends (KBROKER-7), with the epoch its last run
    shut down cleanly with, -1 after a crash (KBROKER-20), and the ids of its online log
    directories (KBROKER-21)."""
    return BrokerRegistrationRequest(
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation_id,
        listeners=[
            BrokerRegistrationRequest.Listener(
                name=e.listener,
                host=e.host,
                port=e.port,
                security_protocol=SECURITY_PROTOCOLS.index(e.protocol),
            )
            for e in endpoints
        ],
        features=[
            BrokerRegistrationRequest.Feature(
                name=name, min_supported_version=low, max_supported_version=high
            )
            for name, (low, high) in sorted(features.items())
        ],
        rack=rack,
        log_dirs=list(log_dirs),
        previous_broker_epoch=previous_broker_epoch,
    )


class BrokerLifecycleManager:
    """Registers this broker, heartbeats, and shuts it down under the controller's eye."""

    def __init__(
        self,
        broker_id: int,
        cluster_id: str,
        incarnation_id: uuid.UUID,
        channel: Any,  # a NodeToControllerChannel: `await request(api_key, version, body)`
        metadata_offset: Callable[[], int],
        ready_to_unfence: Callable[[], bool],
        *,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
        offline_dirs: Callable[[], Sequence[uuid.UUID]] = tuple,
    ) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.incarnation_id = incarnation_id
        self.channel = channel
        self.metadata_offset = metadata_offset  # the published image's last offset
        self.ready_to_unfence = ready_to_unfence  # the image holds our own registration
        self.offline_dirs = offline_dirs  # the ids of the log directories that failed
        self.interval_s = heartbeat_interval_ms / 1000
        self.state = BrokerState.STARTING
        self.broker_epoch = -1
        self.unfenced = asyncio.Event()  # RUNNING: the broker may serve clients
        self.shut_down = asyncio.Event()  # the controller let it go (or it gave up waiting)
        self._wake = asyncio.Event()  # heartbeat now, not at the next interval
        self._task: asyncio.Task | None = None

    def start(self, registration: Any) -> None:
        """Register with `registration` (a BrokerRegistration body), then heartbeat."""
        self._task = asyncio.get_running_loop().create_task(self._run(registration))

    def wake(self) -> None:
        """Heartbeat now (the image has just published the broker's own registration)."""
        self._wake.set()

    def propagate_directory_failure(self, directory: uuid.UUID) -> None:
        """A log directory failed: tell the controller at once, by the next heartbeat's
        OfflineLogDirs, which every later one repeats (KBROKER-21; Kafka:
        `BrokerLifecycleManager.propagateDirectoryFailure`)."""
        logger.warning("broker %d: log directory %s failed", self.broker_id, directory)
        self.wake()

    async def _run(self, registration: Any) -> None:
        while self.broker_epoch < 0:
            await self._register(registration)
        while self.state != BrokerState.SHUTTING_DOWN:
            self._wake.clear()  # before: a wake while this one is in flight sends another
            delay = await self._heartbeat()
            if self.state != BrokerState.SHUTTING_DOWN:
                with contextlib.suppress(TimeoutError):  # the interval passed
                    await asyncio.wait_for(self._wake.wait(), delay)

    async def _register(self, registration: Any) -> None:
        try:
            response = await self.channel.request(
                ApiKey.BROKER_REGISTRATION, REGISTRATION_VERSION, registration
            )
        except ControllerUnavailableError as err:
            logger.info("broker %d: not registered yet: %s", self.broker_id, err)
            return
        error = ErrorCode(response.error_code)
        if error != ErrorCode.NO_ERROR:
            logger.info("broker %d: registration refused: %s", self.broker_id, error.name)
            await asyncio.sleep(self.interval_s)
            return
        self.broker_epoch = response.broker_epoch
        logger.info("registered broker %d with broker epoch %d", self.broker_id, self.broker_epoch)

    async def _heartbeat(self) -> float:
        """One heartbeat and its answer; how long until the next."""
        body = BrokerHeartbeatRequest(
            broker_id=self.broker_id,
            broker_epoch=self.broker_epoch,
            current_metadata_offset=self.metadata_offset(),
            want_fence=not self.ready_to_unfence(),
            want_shut_down=self.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN,
            offline_log_dirs=list(self.offline_dirs()),
        )
        try:
            response = await self.channel.request(ApiKey.BROKER_HEARTBEAT, HEARTBEAT_VERSION, body)
        except ControllerUnavailableError as err:
            logger.info("broker %d: heartbeat not answered: %s", self.broker_id, err)
            return self.interval_s
        error = ErrorCode(response.error_code)
        if error != ErrorCode.NO_ERROR:
            logger.warning("broker %d: heartbeat answered %s", self.broker_id, error.name)
            return self.interval_s
        before = self.state
        reply = HeartbeatReply(response.is_caught_up, response.is_fenced, response.should_shut_down)
        self.state = next_state(before, reply)
        if self.state != before:
            logger.info("broker %d: %s -> %s", self.broker_id, before.name, self.state.name)
        if self.state == BrokerState.RUNNING:
            self.unfenced.set()
        if self.state == BrokerState.SHUTTING_DOWN:
            self.shut_down.set()
        return STARTING_DELAY_S if self.state == BrokerState.STARTING else self.interval_s

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Heartbeat with want_shut_down until the controller lets the broker go, at most
        `timeout_s`; whether it did (KBROKER-13)."""
        if self.broker_epoch < 0 or self._task is None or self._task.done():
            return False
        self.state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
        self.wake()
        try:
            await asyncio.wait_for(self.shut_down.wait(), timeout_s)
        except TimeoutError:
            logger.warning(
                "broker %d: no leave from the controller within %.1f s: stopping anyway",
                self.broker_id,
                timeout_s,
            )
            return False
        return True

    async def close(self) -> None:
        self.state = BrokerState.SHUTTING_DOWN
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
