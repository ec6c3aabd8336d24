"""Checking and numbering the batches of an append, without decoding a record.

Before a leader appends what a producer sent, it must be sure of three things: the bytes
are whole v2 batches that are not corrupt, each batch is within the size limits, and each
batch gets the right offsets. Kafka does this in `UnifiedLog.analyzeAndValidateRecords` and
`LogValidator`; kafka-ref does it here, for the fast path Kafka takes when the producer's
batches need no conversion:

* **validate** each batch: the header is whole, the magic byte (position 16) is 2, the
  batch fits in the buffer, the CRC-32C over [attributes, end) matches, and a producer's
  batch has recordsCount == lastOffsetDelta + 1 (LOG-8) and baseOffset 0 (BATCH-4: the
  broker numbers it). Any failure rejects the whole append before a byte is written:
  CORRUPT_MESSAGE for damage, INVALID_RECORD for a wrong magic, count or base offset;
* **limit** each batch to `max.message.bytes` (MESSAGE_TOO_LARGE, LOG-9) and the whole
  append to `segment.bytes` (RECORD_LIST_TOO_LARGE, SEG-6): no segment could hold it;
* **assign** offsets: batch after batch, base offset = the log end offset so far, written
  with the partition leader epoch into bytes 0-8 and 12-16, which the CRC does not cover
  (LOG-1, LOG-10). With `message.timestamp.type=LogAppendTime` the batch is marked
  LogAppendTime with the broker's clock as its max timestamp, and only then is its CRC
  recomputed (LOG-11).

A follower (`assign_offsets=False`) keeps the leader's offsets: they must not go below its
log end offset and must increase from batch to batch (LOG-12). Like Kafka, a follower does
not apply `max.message.bytes`: the leader already accepted the batch.

Who appends is an `AppendOrigin` (Kafka's): a producer's batches on the leader, the
coordinators' (transaction markers, group records), or a follower copying its leader. Only a
producer's batches get the checks above that a follower skips.

The result lists each batch's header with its base offset (`AppendInfo.batches`), for
whatever the log's producer state checks before it writes (log.py, LOG-19).

On a compacted topic (cleanup.policy contains compact) each record is also decoded, once,
to check that it parses and has a key (LOG-17): compaction works by key. Elsewhere the
records stay opaque bytes, a deliberate departure from Kafka, which walks every record of
every produced batch: on the hot path kafka-ref moves bytes and reads only headers.

A CreateTime batch must also carry timestamps within the topic's bounds (INVALID_TIMESTAMP,
LOG-18): its header's first and largest timestamps are checked, and only a batch outside
them is decoded, to name its records.

Rules: LOG-1, LOG-8..LOG-12, LOG-17, LOG-18, SEG-6.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kafka_ref.config import LogConfig
from kafka_ref.errors import (
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
)
from kafka_ref.record.batch import (
    MAGIC_OFFSET,
    MAGIC_V2,
    BatchHeader,
    RecordBatch,
    set_log_append_time,
    stamp_batch,
    validate_batch,
)


class AppendOrigin(Enum):
    """Who appends, which decides what is checked (Kafka: `AppendOrigin`)."""

    CLIENT = "client"  # a producer's batch on the leader: every check (IDEM-2..IDEM-8)
    COORDINATOR = "coordinator"  # transaction markers: epochs only, no sequences
    REPLICATION = "replication"  # a follower copying the leader: nothing is checked


class RecordBatchTooLargeError(MessageTooLargeError):
    """An append larger than a whole segment (Kafka: RecordBatchTooLargeException)."""

    code = ErrorCode.RECORD_LIST_TOO_LARGE


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What an append did (Kafka: `LogAppendInfo`); offsets are -1 for an empty append."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int  # last offset of the first batch holding max_timestamp
    record_count: int
    batch_count: int
    size: int
    log_append_time: int  # the broker's timestamp under LogAppendTime, else -1
    log_start_offset: int
    # (base offset, header as received) of each batch: the producer state reads them
    batches: tuple[tuple[int, BatchHeader], ...] = ()


def _check_records(
    view: memoryview, pos: int, header: BatchHeader, config: LogConfig, now: int
) -> None:
    """The record-level checks of a producer's batch (Kafka: `LogValidator.validateRecord`):
    on a compacted topic every record needs a key (LOG-17: compaction works by key, and a
    record that does not parse would stop the cleaner for good); with CreateTime, every
    timestamp must lie within [now - message.timestamp.before.max.ms, now +
    message.timestamp.after.max.ms] (LOG-18).

    This is the one place the append path decodes records, and only when it must: always on
    a compacted topic, else only for a batch whose header's first and largest timestamps
    fall outside the range (they bound the records of a well-formed batch). Each record at
    fault is named by its index in the batch (KIP-467), its key checked before its
    timestamp; the append fails with INVALID_TIMESTAMP if any timestamp is out of range,
    else INVALID_RECORD, as Kafka's `processRecordErrors` decides."""
    check_time = config.message_timestamp_type == "CreateTime"
    low = now - config.message_timestamp_before_max_ms
    high = now + config.message_timestamp_after_max_ms
    in_range = low <= header.base_timestamp and header.max_timestamp <= high
    if not (config.compact or (check_time and not in_range)):
        return
    keyless, out_of_range = [], []
    for index, record in enumerate(RecordBatch(view, pos).records()):
        if config.compact and record.key is None:
            keyless.append((index, "Compacted topic cannot accept message without key."))
        elif check_time and record.timestamp != -1 and not low <= record.timestamp <= high:
            out_of_range.append((index, f"Timestamp {record.timestamp} is out of [{low}, {high}]"))
    errors = tuple(sorted(keyless + out_of_range))
    if not errors:
        return
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    message = (
        f"One or more records have been rejected due to {len(errors)} record errors in "
        f"total, and only showing the first three errors at most: [{shown}]"
    )
    error = InvalidTimestampError if out_of_range else InvalidRecordError
    raise error(message, record_errors=errors)


def validate_and_assign(
    view: memoryview,
    config: LogConfig,
    *,
    log_end_offset: int,
    log_start_offset: int,
    leader_epoch: int,
    now: int,
    assign_offsets: bool,
    from_client: bool = False,
) -> AppendInfo:
    """Validate every batch in `view`, then stamp offsets in place (if `assign_offsets`).

    `from_client`: a producer's append, whose batches must start at base offset 0 (Kafka
    `UnifiedLog.analyzeAndValidateRecords`, for AppendOrigin.CLIENT only).

    `view` must be writable when `assign_offsets` is set. Raises CorruptRecordError,
    InvalidRecordError or MessageTooLargeError without having changed `view`.
    """
    size = view.nbytes
    batches = []
    pos = 0
    while pos < size:
        if size - pos > MAGIC_OFFSET and view[pos + MAGIC_OFFSET] != MAGIC_V2:
            magic = view[pos + MAGIC_OFFSET]
            raise InvalidRecordError(f"batch at byte {pos} has magic {magic}; this log takes 2")
        header = validate_batch(view, pos, check_count=assign_offsets)
        if from_client and header.base_offset != 0:
            raise InvalidRecordError(
                f"the baseOffset of a produced record batch should be 0, but it is "
                f"{header.base_offset}"
            )
        if assign_offsets and header.size > config.max_message_bytes:
            raise MessageTooLargeError(
                f"batch of {header.size} bytes exceeds max.message.bytes {config.max_message_bytes}"
            )
        if assign_offsets and not header.is_control:
            _check_records(view, pos, header, config, now)
        batches.append((pos, header))
        pos += header.size
    log_append_time = -1
    if assign_offsets:
        _check_segment_room(size, config)
        if config.message_timestamp_type == "LogAppendTime":
            log_append_time = now
        first = offset = log_end_offset
        lasts, stamped = [], []
        for pos, header in batches:
            stamp_batch(view, pos, offset, leader_epoch)
            if log_append_time >= 0:
                set_log_append_time(view, pos, now)
            stamped.append((offset, header))
            lasts.append(offset + header.last_offset_delta)
            offset += header.last_offset_delta + 1
    else:
        expected = log_end_offset
        for _, header in batches:
            if header.base_offset < expected:
                raise InvalidRecordError(
                    f"batch base offset {header.base_offset} is below the expected {expected}"
                )
            expected = header.next_offset
        # A follower's batches are checked against the log end before their size, in
        # Kafka's order (UnifiedLog.append): a stale batch is refused as stale.
        _check_segment_room(size, config)
        first, lasts = batches[0][1].base_offset, [h.last_offset for _, h in batches]
        stamped = [(h.base_offset, h) for _, h in batches]

    # The append's largest timestamp and where it is (the time index records both).
    max_ts, offset_of_max = -1, lasts[0]
    for (_, header), batch_last in zip(batches, lasts, strict=True):
        ts = log_append_time if log_append_time >= 0 else header.max_timestamp
        if ts > max_ts:
            max_ts, offset_of_max = ts, batch_last
    return AppendInfo(
        first_offset=first,
        last_offset=lasts[-1],
        max_timestamp=max_ts,
        offset_of_max_timestamp=offset_of_max,
        record_count=sum(h.records_count for _, h in batches),
        batch_count=len(batches),
        size=size,
        log_append_time=log_append_time,
        log_start_offset=log_start_offset,
        batches=tuple(stamped),
    )


def _check_segment_room(size: int, config) -> None:
    """An append larger than a whole segment can never be written (SEG-6)."""
    if size > config.segment_bytes:
        raise RecordBatchTooLargeError(
            f"append of {size} bytes exceeds segment.bytes {config.segment_bytes}"
        )
