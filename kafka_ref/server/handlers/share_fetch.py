"""ShareFetch (78) and ShareAcknowledge (79): a share group's members fetch and acknowledge.

Each handler checks READ on the group (else GROUP_AUTHORIZATION_FAILED for the whole
request), steps the member's share session (kafka_ref/share/share_session.py: SHARE-13),
and hands the rest to the broker's `SharePartitionManager` on the event loop, answering
once it is done (the handler returns `DEFERRED`). Kafka: `KafkaApis.handleShareFetchRequest`,
`handleShareAcknowledgeRequest`, `SharePartitionManager.fetchMessages`, `acknowledge`.

A ShareFetch, in this order:

1. applies the acknowledgements piggybacked on its partitions (an error is the partition's
   `AcknowledgeErrorCode`: INVALID_RECORD_STATE for records the member does not hold);
   epoch -1 also releases what the member still holds, and the session is gone;
2. writes the changed state and waits for the write (SHARE-21);
3. unless the epoch is -1, acquires records on every partition of the session, within
   `MaxRecords` and `MaxBytes` (`ShareAcquireMode` 1, v2: never past MaxRecords);
4. when it acquired nothing, waits up to `MaxWaitMs` in the fetch purgatory, woken by an
   append to one of its partitions or a lock expiry there, then tries once more (a long
   poll: any acquirable record satisfies `MinBytes`). A session that ended meanwhile (its
   connection closed: SHARE-25) acquires nothing more.

A partition is answered UNKNOWN_TOPIC_ID for a topic id the broker does not know,
TOPIC_AUTHORIZATION_FAILED without READ on the topic, NOT_LEADER_OR_FOLLOWER with its
`CurrentLeader` and the leaders' `NodeEndpoints` when this broker does not lead it (as
Fetch v16+, leader_hints.py). A ShareAcknowledge does steps 1 and 2 only; it cannot open a
session (epoch 0: INVALID_SHARE_SESSION_EPOCH).

Rules: SHARE-13, SHARE-19 .. SHARE-25.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import ShareAcknowledgeResponse, ShareFetchResponse
from kafka_ref.protocol.messages.api_78_share_fetch import LEADER_ID_AND_EPOCH, NODE_ENDPOINT
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.handlers.leader_hints import LeaderHints
from kafka_ref.server.purgatory import DelayedOperation
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED
from kafka_ref.share.persister import SharePartitionKey
from kafka_ref.share.share_partition import AcknowledgementBatch, AcquireMode
from kafka_ref.share.share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSession

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

logger = logging.getLogger("kafka_ref.server.handlers")
TopicIdPartition = tuple[uuid.UUID, int]


class DelayedShareFetch(DelayedOperation):
    """A ShareFetch that acquired nothing, waiting for records (Kafka `DelayedShareFetch`).
    It reuses the fetch purgatory: appends to a watched partition and lock expiries there
    check it; it completes when one of its share-partitions can acquire, or at MaxWaitMs."""

    def __init__(self, delay_ms: int, keys: list[SharePartitionKey], apis: ApiContext) -> None:
        super().__init__(delay_ms)
        self.keys, self.apis = keys, apis
        self.done = asyncio.get_running_loop().create_future()

    def try_complete(self) -> bool:
        manager = self.apis.share_partitions
        if any(manager.can_acquire(key) for key in self.keys):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


def _acknowledgements(partition: Any) -> list[AcknowledgementBatch]:
    return [
        AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
        for b in partition.acknowledgement_batches
    ]


class _Outcome:
    """Per partition: the errors and the acquisition, then the answer's leader hints."""

    def __init__(self, apis: ApiContext, request: Request) -> None:
        self.apis, self.request = apis, request
        self.hints = LeaderHints(apis, request)
        self.error: dict[TopicIdPartition, ErrorCode] = {}
        self.ack_error: dict[TopicIdPartition, ErrorCode] = {}
        self.acquired: dict[TopicIdPartition, Any] = {}
        self.names: dict[uuid.UUID, str | None] = {}

    def topic(self, tp: TopicIdPartition) -> str:
        """The topic's name; raises UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED."""
        if tp[0] not in self.names:
            meta = self.apis.controller.topic_by_id(tp[0])
            self.names[tp[0]] = meta.name if meta is not None else None
        name = self.names[tp[0]]
        if name is None:
            raise KafkaError(code=ErrorCode.UNKNOWN_TOPIC_ID)
        if not authorized(self.apis, self.request, Op.READ, Res.TOPIC, name):
            raise KafkaError(code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return name

    def leader(self, tp: TopicIdPartition) -> Any:
        """CurrentLeader: named only for NOT_LEADER_OR_FOLLOWER, as Kafka does."""
        errors = (self.error.get(tp), self.ack_error.get(tp))
        name = self.names.get(tp[0])
        if ErrorCode.NOT_LEADER_OR_FOLLOWER not in errors or name is None:
            return LEADER_ID_AND_EPOCH.cls()  # left at its defaults (0, 0), as Kafka does
        leader_id, leader_epoch = self.hints.current_leader(name, tp[1])
        return LEADER_ID_AND_EPOCH.cls(leader_id=leader_id, leader_epoch=leader_epoch)


async def _acknowledge(
    apis: ApiContext,
    session: ShareSession,
    acks: dict[TopicIdPartition, list[AcknowledgementBatch]],
    closing: bool,
    out: _Outcome,
) -> None:
    """Apply the acknowledgements, release a closing session's records, write, wait."""
    manager = apis.share_partitions
    changed: set[SharePartitionKey] = set()
    for tp, batches in acks.items():
        key = SharePartitionKey(session.group_id, *tp)
        try:
            share_partition = await manager.share_partition(key, out.topic(tp))
        except KafkaError as err:
            out.ack_error[tp] = err.code
            continue
        out.ack_error[tp] = share_partition.acknowledge(session.member_id, batches)
        changed.add(key)
    if closing:
        changed.update(manager.release_session(session))
    keys = sorted(changed, key=lambda k: (str(k.topic_id), k.partition))
    written = await asyncio.gather(*(manager.persist(key) for key in keys))
    for key, error in zip(keys, written, strict=True):
        tp = (key.topic_id, key.partition)
        if error != ErrorCode.NO_ERROR and out.ack_error.get(tp) == ErrorCode.NO_ERROR:
            out.ack_error[tp] = error
        # A release makes records acquirable again, and an acceptance that moves the start
        # offset widens the in-flight window: other members' waiting fetches try again.
        manager.wake(key)


async def _acquire_all(
    apis: ApiContext, request: Request, session: ShareSession, out: _Outcome
) -> None:
    body = request.body
    manager = apis.share_partitions
    mode = AcquireMode.RECORD_LIMIT if body.share_acquire_mode == 1 else AcquireMode.BATCH_OPTIMIZED
    records_left, bytes_left = body.max_records, body.max_bytes
    for tp in sorted(session.partitions, key=lambda p: (str(p[0]), p[1])):
        if records_left <= 0 or bytes_left <= 0:
            break
        if manager.sessions.get(session.group_id, session.member_id) is not session:
            break  # the session ended while this fetch waited (its connection closed)
        key = SharePartitionKey(session.group_id, *tp)
        try:
            got = await manager.acquire(
                key, out.topic(tp), session.member_id, records_left, bytes_left, mode
            )
        except KafkaError as err:
            out.error[tp] = err.code
            continue
        if got.acquired:
            out.acquired[tp] = got
            records_left -= sum(a.last_offset - a.first_offset + 1 for a in got.acquired)
            bytes_left -= len(got.records)


async def _share_fetch(
    apis: ApiContext,
    request: Request,
    session: ShareSession,
    acks: dict[TopicIdPartition, list[AcknowledgementBatch]],
    requested: list[TopicIdPartition],
) -> Any:
    body = request.body
    out = _Outcome(apis, request)
    closing = body.share_session_epoch == FINAL_EPOCH
    await _acknowledge(apis, session, acks, closing, out)
    if not closing and body.max_records > 0:
        await _acquire_all(apis, request, session, out)
        if not out.acquired and not out.error and body.max_wait_ms > 0:
            await _wait(apis, session, out, body.max_wait_ms)
            await _acquire_all(apis, request, session, out)
    shown = sorted(
        set(requested) | out.error.keys() | out.acquired.keys() | out.ack_error.keys(),
        key=lambda p: (str(p[0]), p[1]),
    )
    topics: dict[uuid.UUID, Any] = {}
    for tp in shown:
        got = out.acquired.get(tp)
        entry = topics.setdefault(
            tp[0], ShareFetchResponse.ShareFetchableTopicResponse(topic_id=tp[0], partitions=[])
        )
        entry.partitions.append(
            ShareFetchResponse.PartitionData(
                partition_index=tp[1],
                error_code=out.error.get(tp, ErrorCode.NO_ERROR),
                acknowledge_error_code=out.ack_error.get(tp, ErrorCode.NO_ERROR),
                current_leader=out.leader(tp),
                records=got.records if got else b"",
                acquired_records=[
                    ShareFetchResponse.AcquiredRecords(
                        first_offset=a.first_offset,
                        last_offset=a.last_offset,
                        delivery_count=a.delivery_count,
                    )
                    for a in (got.acquired if got else [])
                ],
            )
        )
    return ShareFetchResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        acquisition_lock_timeout_ms=_lock_duration_ms(apis, body.group_id),
        responses=list(topics.values()),
        node_endpoints=out.hints.node_endpoints(NODE_ENDPOINT.cls),
    )


async def _wait(apis: ApiContext, session: ShareSession, out: _Outcome, max_wait_ms: int) -> None:
    """Long poll: until a partition of the session can acquire, or `max_wait_ms`."""
    keys, watched = [], set()
    for tp in session.partitions:
        name = out.names.get(tp[0])
        if name is not None:
            keys.append(SharePartitionKey(session.group_id, *tp))
            watched.add((name, tp[1]))
    delayed = DelayedShareFetch(max_wait_ms, keys, apis)
    apis.fetch_purgatory.try_complete_else_watch(delayed, watched)
    await delayed.done


def _session(
    apis: ApiContext, request: Request, epoch: int, may_open: bool
) -> tuple[ShareSession | None, ErrorCode, str | None]:
    """Check READ on the group and step the member's share session: (session, error,
    message)."""
    body = request.body
    if not body.group_id or not body.member_id:
        return None, ErrorCode.INVALID_REQUEST, "a group id and a member id are required"
    if not authorized(apis, request, Op.READ, Res.GROUP, body.group_id):
        return None, ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    manager = apis.share_partitions
    if epoch != INITIAL_EPOCH:
        session, error = manager.sessions.step(body.group_id, body.member_id, epoch)
        return session, error, None
    if not may_open:
        return None, ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open"
    session, replaced, error = manager.sessions.open(
        body.group_id, body.member_id, request.connection_id
    )
    if replaced is not None:  # the member started over: what it held goes back
        manager.end_session(replaced)
    return session, error, None


def _lock_duration_ms(apis: ApiContext, group_id: str) -> int:
    """How long the group's acquisitions are locked (its `share.record.lock.duration.ms`)."""
    return apis.share_partitions.partition_config(group_id).record_lock_duration_ms


def _acks_of(topics: list[Any]) -> dict[TopicIdPartition, list[AcknowledgementBatch]]:
    return {
        (t.topic_id, p.partition_index): _acknowledgements(p)
        for t in topics
        for p in t.partitions
        if p.acknowledgement_batches
    }


def handle_share_fetch(apis: ApiContext, request: Request) -> Any:
    body = request.body
    epoch = body.share_session_epoch
    session, error, message = _session(apis, request, epoch, may_open=True)
    if session is None or error != ErrorCode.NO_ERROR:
        return ShareFetchResponse(error_code=error, error_message=message)
    requested = [(t.topic_id, p.partition_index) for t in body.topics for p in t.partitions]
    if epoch != FINAL_EPOCH:
        forgotten = {(t.topic_id, p) for t in body.forgotten_topics_data for p in t.partitions}
        session.update(set(requested), forgotten)

    work = _share_fetch(apis, request, session, _acks_of(body.topics), requested)
    apis.share_partitions.spawn(_answer_later(apis, request, work))
    return DEFERRED


def handle_share_acknowledge(apis: ApiContext, request: Request) -> Any:
    body = request.body
    epoch = body.share_session_epoch
    session, error, message = _session(apis, request, epoch, may_open=False)
    if session is None or error != ErrorCode.NO_ERROR:
        return ShareAcknowledgeResponse(error_code=error, error_message=message)

    async def run() -> Any:
        out = _Outcome(apis, request)
        acks = _acks_of(body.topics)
        await _acknowledge(apis, session, acks, epoch == FINAL_EPOCH, out)
        topics: dict[uuid.UUID, Any] = {}
        for tp in sorted(acks, key=lambda p: (str(p[0]), p[1])):
            entry = topics.setdefault(
                tp[0],
                ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse(
                    topic_id=tp[0], partitions=[]
                ),
            )
            entry.partitions.append(
                ShareAcknowledgeResponse.PartitionData(
                    partition_index=tp[1],
                    error_code=out.ack_error[tp],
                    current_leader=out.leader(tp),
                )
            )
        return ShareAcknowledgeResponse(
            error_code=ErrorCode.NO_ERROR,
            acquisition_lock_timeout_ms=_lock_duration_ms(apis, body.group_id),
            responses=list(topics.values()),
            node_endpoints=out.hints.node_endpoints(NODE_ENDPOINT.cls),
        )

    apis.share_partitions.spawn(_answer_later(apis, request, run()))
    return DEFERRED


async def _answer_later(apis: ApiContext, request: Request, work: Any) -> None:
    """Await the answer and send it; a failure closes the connection, as a handler's
    exception does (handlers/__init__.py), so the client never waits forever."""
    try:
        answer = await work
    except Exception as err:
        logger.exception("error handling %r", request)
        request.close_connection(f"error handling request: {err}")
        return
    apis.send(request, answer)
