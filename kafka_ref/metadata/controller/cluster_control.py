"""The brokers of a KRaft cluster: registration, heartbeats, fencing, controlled shutdown.

A broker joins by sending BrokerRegistration to the active controller (KIP-631). A new
*incarnation* (a new process: a new incarnation id) gets a RegisterBrokerRecord with a new
**broker epoch**, the offset the record gets in the metadata log (Kafka:
`ClusterControlManager.registerBroker`), so every later registration of the same id has a
larger one. The same incarnation registering again keeps its epoch. A broker id whose other
incarnation is unfenced with a live session is refused (DUPLICATE_BROKER_REGISTRATION), and so is
one that does not support every finalized feature level (UNSUPPORTED_VERSION) or names
another cluster (INCONSISTENT_CLUSTER_ID).

A registered broker starts **fenced**: it leads nothing and joins no ISR. It then sends a
BrokerHeartbeat every `broker.heartbeat.interval.ms` carrying the metadata offset it has
replayed; once that reaches the offset of its own registration it has *caught up* and is
unfenced (Kafka: `BrokerHeartbeatManager.calculateNextBrokerState`):

```
            caught up                         wantShutDown, still leads
  FENCED ------------------> UNFENCED ----------------------------> CONTROLLED_SHUTDOWN
    ^  ^   session timeout /     |  wantShutDown, leads nothing            |
    |  +---- wantFence ----------+-------------------> SHUTDOWN_NOW <------+ leads nothing,
    +--------------------------------------------------(fenced)           every broker past
                                                                           its shutdown offset
```

A broker that sends no heartbeat for `broker.session.timeout.ms` (9 s) is fenced by the
controller (Kafka: `maybeFenceOneStaleBroker`), and the partitions it led get new leaders.

The heartbeat times are the controller's only state outside the log (Kafka keeps them in
`BrokerHeartbeatManager`, in memory): a newly elected controller starts every broker with a
fresh session. Everything else, fenced or not, in controlled shutdown or not, is in the
image, changed by records.

Rules: KCTRL-2..KCTRL-5.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.features import unsupported_feature
from kafka_ref.metadata.controller.result import ApiError
from kafka_ref.metadata.image import BrokerRegistration, Endpoint, MetadataImage


class BrokerControlState(enum.Enum):
    """Where a broker is in its life (Kafka: `BrokerControlState`)."""

    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled shutdown"
    SHUTDOWN_NOW = "shutdown now"

    @property
    def fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)


def current_state(broker: BrokerRegistration) -> BrokerControlState:
    if broker.fenced:
        return BrokerControlState.FENCED
    if broker.in_controlled_shutdown:
        return BrokerControlState.CONTROLLED_SHUTDOWN
    return BrokerControlState.UNFENCED


@dataclass(frozen=True)
class BrokerRegistrationRequest:
    """What a broker registers with (Kafka: `BrokerRegistrationRequestData`)."""

    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    listeners: tuple[Endpoint, ...] = ()
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # name -> (min, max)
    rack: str | None = None
    log_dirs: tuple[uuid.UUID, ...] = ()
    previous_broker_epoch: int = -1  # the epoch it had when it last shut down cleanly


@dataclass(frozen=True)
class BrokerHeartbeatRequest:
    """A broker's heartbeat (Kafka: `BrokerHeartbeatRequestData`)."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False
    want_shut_down: bool = False
    offline_log_dirs: tuple[uuid.UUID, ...] = ()  # its failed log directories (KIP-858)


@dataclass
class BrokerSession:
    """What the controller remembers of a broker's heartbeats."""

    last_contact_ms: int
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1  # the log end offset when it began shutting down


class BrokerHeartbeats:
    """The brokers' sessions (Kafka: `BrokerHeartbeatManager`): in memory, not in the log."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.sessions: dict[int, BrokerSession] = {}

    def touch(self, broker_id: int, now_ms: int, metadata_offset: int = -1) -> None:
        session = self.sessions.setdefault(broker_id, BrokerSession(now_ms))
        session.last_contact_ms = now_ms
        session.metadata_offset = metadata_offset

    def remove(self, broker_id: int) -> None:
        self.sessions.pop(broker_id, None)

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        session = self.sessions.get(broker_id)
        return session is not None and now_ms <= session.last_contact_ms + self.session_timeout_ms

    def stale_broker(self, image: MetadataImage, now_ms: int) -> int | None:
        """The unfenced broker whose session expired longest ago, or None (Kafka:
        `findOneStaleBroker`). A broker without a session (registered before this
        controller became active) gets one now: its heartbeats have a full timeout to
        arrive."""
        stale = []
        for broker in image.brokers.values():
            if broker.fenced:
                continue
            session = self.sessions.setdefault(broker.id, BrokerSession(now_ms))
            if now_ms > session.last_contact_ms + self.session_timeout_ms:
                stale.append((session.last_contact_ms, broker.id))
        return min(stale)[1] if stale else None

    def lowest_active_offset(self, image: MetadataImage) -> int:
        """The lowest metadata offset an unfenced broker reported: every active broker has
        replayed the log that far (Kafka: `lowestActiveOffset`)."""
        offsets = [
            self.sessions[b.id].metadata_offset
            for b in image.brokers.values()
            if not b.fenced and b.id in self.sessions
        ]
        return min(offsets, default=2**63 - 1)


class StaleBrokerEpochError(KafkaError):
    code = ErrorCode.STALE_BROKER_EPOCH


def check_broker_epoch(image: MetadataImage, broker_id: int, epoch: int) -> BrokerRegistration:
    """The broker's registration if `epoch` is its current one (Kafka: `checkBrokerEpoch`)."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        raise StaleBrokerEpochError(f"No broker registration found for broker id {broker_id}")
    if broker.epoch != epoch:
        raise StaleBrokerEpochError(
            f"Expected broker epoch {broker.epoch}, but got broker epoch {epoch}"
        )
    return broker


def registration_record(
    image: MetadataImage,
    heartbeats: BrokerHeartbeats,
    cluster_id: str,
    request: BrokerRegistrationRequest,
    new_epoch: int,
    now_ms: int,
) -> r.RegisterBrokerRecord:
    """The RegisterBrokerRecord for `request`, or a KafkaError saying why not (KCTRL-2)."""
    if request.cluster_id != cluster_id:
        raise KafkaError(
            f"Expected cluster ID {cluster_id}, but got cluster ID {request.cluster_id}",
            code=ErrorCode.INCONSISTENT_CLUSTER_ID,
        )
    existing = image.brokers.get(request.broker_id)
    if (
        existing is not None
        and existing.incarnation_id != request.incarnation_id
        and not existing.fenced  # a fenced broker has no session to protect
        and heartbeats.has_valid_session(request.broker_id, now_ms)
    ):
        raise KafkaError(
            "Another broker is registered with that broker id.",
            code=ErrorCode.DUPLICATE_BROKER_REGISTRATION,
        )
    why = unsupported_feature(image.features, request.features)
    if why is not None:
        raise KafkaError(why, code=ErrorCode.UNSUPPORTED_VERSION)
    record = r.RegisterBrokerRecord(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id,
        end_points=[
            r.RegisterBrokerRecord.BrokerEndpoint(
                name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
            )
            for e in request.listeners
        ],
        features=[
            r.RegisterBrokerRecord.BrokerFeature(
                name=name, min_supported_version=low, max_supported_version=high
            )
            for name, (low, high) in sorted(request.features.items())
        ],
        rack=request.rack,
        log_dirs=list(request.log_dirs),
        broker_epoch=new_epoch,
        fenced=True,
    )
    if existing is not None and existing.incarnation_id == request.incarnation_id:
        # The same process registering again: it keeps its epoch and its state.
        record.broker_epoch = existing.epoch
        record.fenced = existing.fenced
        record.in_controlled_shutdown = existing.in_controlled_shutdown
    return record


def is_new_incarnation(image: MetadataImage, request: BrokerRegistrationRequest) -> bool:
    existing = image.brokers.get(request.broker_id)
    return existing is None or existing.incarnation_id != request.incarnation_id


def shut_down_uncleanly(image: MetadataImage, request: BrokerRegistrationRequest) -> bool:
    """A new incarnation of a registered broker whose previous one did not shut down
    cleanly: it does not name the epoch it had, so its unflushed records may be lost
    (KIP-966; Kafka: `ClusterControlManager.registerBroker`, previousBrokerEpoch)."""
    existing = image.brokers.get(request.broker_id)
    return (
        existing is not None
        and existing.incarnation_id != request.incarnation_id
        and request.previous_broker_epoch != existing.epoch
    )


def next_state(
    broker: BrokerRegistration,
    request: BrokerHeartbeatRequest,
    registration_offset: int,
    has_leaderships: bool,
    session: BrokerSession | None,
    lowest_active_offset: int,
) -> BrokerControlState:
    """The broker's next state after this heartbeat (KCTRL-3, KCTRL-5; Kafka:
    `BrokerHeartbeatManager.calculateNextBrokerState`)."""
    state = current_state(broker)
    if state == BrokerControlState.FENCED:
        if request.want_shut_down:
            return BrokerControlState.SHUTDOWN_NOW
        if broker.in_controlled_shutdown:
            # It was let go after a controlled shutdown: only a new registration (a new
            # RegisterBrokerRecord clears the flag) brings it back. kafka-ref's guard: Kafka
            # would unfence it, and elect it, while its registration says it is shutting down.
            return BrokerControlState.FENCED
        if not request.want_fence and request.current_metadata_offset >= registration_offset:
            return BrokerControlState.UNFENCED
        return BrokerControlState.FENCED
    if state == BrokerControlState.UNFENCED:
        if request.want_fence:
            if request.want_shut_down:
                return BrokerControlState.SHUTDOWN_NOW
            return BrokerControlState.FENCED
        if request.want_shut_down:
            if has_leaderships:
                return BrokerControlState.CONTROLLED_SHUTDOWN
            return BrokerControlState.SHUTDOWN_NOW
        return BrokerControlState.UNFENCED
    # CONTROLLED_SHUTDOWN: leave once it leads nothing and every active broker has replayed
    # the records that moved its leaderships away.
    if has_leaderships:
        return BrokerControlState.CONTROLLED_SHUTDOWN
    shutdown_offset = -1 if session is None else session.controlled_shutdown_offset
    if shutdown_offset <= lowest_active_offset:
        return BrokerControlState.SHUTDOWN_NOW
    return BrokerControlState.CONTROLLED_SHUTDOWN


def fencing_record(broker: BrokerRegistration, fenced: bool) -> r.BrokerRegistrationChangeRecord:
    """Fence or unfence a broker (Kafka 3.3+ writes a BrokerRegistrationChangeRecord, not
    the older FenceBrokerRecord / UnfenceBrokerRecord)."""
    return r.BrokerRegistrationChangeRecord(
        broker_id=broker.id, broker_epoch=broker.epoch, fenced=1 if fenced else -1
    )


def controlled_shutdown_record(broker: BrokerRegistration) -> r.BrokerRegistrationChangeRecord:
    return r.BrokerRegistrationChangeRecord(
        broker_id=broker.id, broker_epoch=broker.epoch, in_controlled_shutdown=1
    )


def active_brokers(image: MetadataImage) -> set[int]:
    """The brokers that may lead and be in an ISR: registered, unfenced, not shutting down
    (Kafka: `ClusterControlManager.isActive`)."""
    return {b.id for b in image.brokers.values() if not b.fenced and not b.in_controlled_shutdown}


@dataclass(frozen=True)
class BrokerRegistrationReply:
    error: ApiError
    broker_epoch: int = -1


@dataclass(frozen=True)
class BrokerHeartbeatReply:
    """Kafka's `BrokerHeartbeatReply`: caught up, fenced, shutting down, may shut down."""

    error: ApiError
    is_caught_up: bool = False
    is_fenced: bool = True
    in_controlled_shutdown: bool = False
    should_shut_down: bool = False
