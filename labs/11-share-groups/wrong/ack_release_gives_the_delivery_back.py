"""Takes the delivery back on RELEASE ("the member did not process it, so it does not
count"): a record released at every delivery goes out with delivery count 1 forever, and
the delivery limit never archives it (SHARE-5: the count counts acquisitions)."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_ref.errors import ErrorCode
from kafka_ref.share.persister import RecordState
from kafka_ref.share.share_partition import AcknowledgeType, InFlightState, Transition

DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


def released(delivery_count: int, delivery_count_limit: int) -> RecordState:
    if delivery_count >= delivery_count_limit:
        return RecordState.ARCHIVED
    return RecordState.AVAILABLE


def acknowledge_record(
    record: InFlightState,
    member_id: str,
    ack_type: AcknowledgeType,
    delivery_count_limit: int,
) -> Transition:
    if record.state is not RecordState.ACQUIRED or record.member_id != member_id:
        return Transition(ErrorCode.INVALID_RECORD_STATE, record.state, record.delivery_count)
    count = record.delivery_count
    if ack_type is AcknowledgeType.ACCEPT:
        return Transition(ErrorCode.NO_ERROR, RecordState.ACKNOWLEDGED, count)
    if ack_type is AcknowledgeType.RELEASE:
        return Transition(ErrorCode.NO_ERROR, released(count, delivery_count_limit), count - 1)
    if ack_type is AcknowledgeType.RENEW:
        return Transition(ErrorCode.NO_ERROR, RecordState.ACQUIRED, count, renew_lock=True)
    return Transition(ErrorCode.NO_ERROR, RecordState.ARCHIVED, count)


def release_on_lock_timeout(
    record: InFlightState, now_ms: int, delivery_count_limit: int
) -> RecordState:
    if now_ms < record.lock_deadline_ms:
        return record.state
    return released(record.delivery_count, delivery_count_limit)


def next_start_offset(start_offset: int, end_offset: int, states: Mapping[int, RecordState]) -> int:
    offset = start_offset
    while offset < end_offset and states.get(offset, RecordState.ARCHIVED) in DONE:
        offset += 1
    return offset
