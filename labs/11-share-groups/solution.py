"""Lab 11, share groups: your acknowledgement, lock timeout and start offset rules, in the
share-partition (KIP-932).

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 11

Each function takes the place of kafka-ref's own of the same name whenever
KAFKA_REF_SOLUTION names this file (the grader sets it): `acknowledge_record`,
`release_on_lock_timeout` and `next_start_offset` in kafka_ref/share/share_partition.py,
which the share-partition (`SharePartition`, one per share group and partition on the
partition's leader) asks for every acknowledged offset, every record a member holds when
the lock timer runs, and after every change. They run wherever a share-partition does: in
the grader's histories and in a real broker serving librdkafka's ShareConsumer. From
kafka_ref you may import anything but the module that holds these functions (beyond the
names this file imports from it): `kafka-ref lab check` refuses a solution that reaches
kafka-ref's own code of them (LAB-5).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_ref.errors import ErrorCode  # noqa: F401  (the error your acknowledge_record answers)
from kafka_ref.share.persister import RecordState
from kafka_ref.share.share_partition import AcknowledgeType, InFlightState, Transition


def acknowledge_record(
    record: InFlightState,
    member_id: str,
    ack_type: AcknowledgeType,
    delivery_count_limit: int,
) -> Transition:
    """What the acknowledgement `ack_type` of the member `member_id` does to one in-flight
    record (SHARE-4, SHARE-5, SHARE-12; Kafka `SharePartition.acknowledgePerOffsetBatchRecords`
    and `InFlightState.startStateTransition`).

    `record` is an InFlightState (a NamedTuple): `state`, a RecordState (AVAILABLE,
    ACQUIRED, ACKNOWLEDGED, ARCHIVED); `delivery_count`, how many times the record has been
    acquired; and while it is ACQUIRED `member_id`, its holder, and `lock_deadline_ms`, when
    its acquisition lock expires (None otherwise). `ack_type` is an AcknowledgeType: GAP,
    ACCEPT, RELEASE, REJECT or RENEW. `delivery_count_limit` is
    `group.share.delivery.count.limit`.

    Return a Transition(error, state, delivery_count, renew_lock):

    - Only the holder acknowledges: if the record is not ACQUIRED by `member_id` (it is
      available, done, or another member holds it), the error is INVALID_RECORD_STATE
      (the state and count you return then do not matter: the whole acknowledgement is
      refused and nothing changes).
    - Else NO_ERROR and the record's state after: ACCEPT makes it ACKNOWLEDGED; REJECT, and
      GAP (an offset of a fetched batch that holds no record), make it ARCHIVED; RELEASE
      gives it back, AVAILABLE for another delivery, unless it has been delivered
      `delivery_count_limit` times already: then ARCHIVED, never delivered again; RENEW
      keeps it ACQUIRED, with `renew_lock=True` (its lock starts again).
    - The delivery count counts acquisitions, which the share-partition makes: an
      acknowledgement returns it unchanged.

    Decide only: the share-partition applies the transitions of a whole acknowledgement
    together, or none of them.
    """
    raise NotImplementedError


def release_on_lock_timeout(
    record: InFlightState, now_ms: int, delivery_count_limit: int
) -> RecordState:
    """The state of `record`, a record some member holds (ACQUIRED), when the acquisition
    lock timer looks at it at `now_ms` (SHARE-6, SHARE-5; Kafka `AcquisitionLockTimerTask`,
    `SharePartition.releaseAcquisitionLockOnTimeout`).

    The lock was set when the record was acquired, or renewed, until
    `record.lock_deadline_ms`. Until that deadline the record stays ACQUIRED: its member
    may still be working on it. At the deadline or after it, the record is released as a
    RELEASE would: AVAILABLE for another delivery, unless it has been delivered
    `delivery_count_limit` times, then ARCHIVED.

    The timer runs whenever the broker's timer fires and before every fetch, so it looks at
    records whose lock has not expired too.
    """
    raise NotImplementedError


def next_start_offset(start_offset: int, end_offset: int, states: Mapping[int, RecordState]) -> int:
    """Where the share-partition start offset (SPSO) moves after a change (SHARE-7; Kafka
    `SharePartition.findLastOffsetAcknowledged` and `maybeUpdateCachedStateAndOffsets`).

    `start_offset` is the SPSO: every record below it is done. `end_offset` is the SPEO: no
    record at or past it was ever delivered. `states` maps the offset of each in-flight
    record between them to its RecordState; an offset between the two that is not in
    `states` holds no record (compacted away, say): nothing waits on it.

    Return the new SPSO: move it over every done record (ACKNOWLEDGED or ARCHIVED) and
    every offset without a record, and stop at the first record that is AVAILABLE or
    ACQUIRED, or at the SPEO. It never moves back. The share-partition forgets the records
    below it, and writes it to the share coordinator: it is where the group is in the
    partition.
    """
    raise NotImplementedError
