"""ListOffsets and DeleteRecords: finding offsets, and moving the log start offset.

**ListOffsets** (key 2) turns a *target* into an offset per partition (Kafka:
`KafkaApis.handleListOffsetRequest` -> `ReplicaManager.fetchOffset` ->
`Partition.fetchOffsetForTimestamp`, `UnifiedLog.fetchOffsetByTimestamp`):

* `-2` (EARLIEST) gives the log start offset: where `auto.offset.reset=earliest` starts;
* `-1` (LATEST) gives the high watermark (the last stable offset for read_committed,
  v2+), where `latest` starts: the next offset a consumer could read (BROKER-24);
* a timestamp T gives the first offset whose record timestamp is >= T, with that
  record's timestamp, found through the time index (`offsets_for_times`, KIP-79); if no
  record that recent exists below the high watermark the answer is offset -1, timestamp
  -1 (BROKER-25);
* newer versions add targets (BROKER-71), each refused with UNSUPPORTED_VERSION below its
  version, as is any other negative target: `-3` (v7, KIP-734) the first record with the
  largest timestamp; `-4` (v8) the start of the local log, `-5` (v9) the last offset in
  tiered storage, `-6` (v11) the earliest offset still to upload there (KIP-405,
  KIP-1005, KIP-1023). Without tiered storage, as here, the local log is the whole log
  (`-4` = `-2`) and nothing is tiered or pending (`-5`, `-6`: -1).

From v4 a partition carries the client's `current_leader_epoch`, fenced like a fetch's
(FENCED_LEADER_EPOCH when older than the leader's, UNKNOWN_LEADER_EPOCH when newer), and
the answer's `leader_epoch`: the epoch of the batch found, the leader's current epoch for
`-1`, the epoch that wrote the log start for `-2`/`-4`. A leader that has just been elected
and whose high watermark has not yet reached the start of its epoch does not know the
committed end yet: `-1`, and a timestamp with no record that recent below the high
watermark, are OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before), which the client
retries (BROKER-70). v10's `timeout_ms` bounds lookups in tiered storage; every answer here is
local and immediate.

A partition asked for a target its request's version does not know is refused before the
broker even looks for the partition, as Kafka's `ReplicaManager.fetchOffset` does: the
partitions are checked in Kafka's order, authorization, a partition named twice
(INVALID_REQUEST), the target's version, then the lookup (BROKER-71).

**DeleteRecords** (key 21) raises a partition's log start offset to the given offset
(-1 means the high watermark): records below it become unreadable at once, and segments
wholly below it are deleted (LOG-14). An offset above the high watermark is
OFFSET_OUT_OF_RANGE; a compacted topic refuses with POLICY_VIOLATION, as Kafka does. The
answer is the new low watermark (BROKER-26).

Rules: BROKER-24, BROKER-25, BROKER-26, BROKER-70, BROKER-71.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.log.file_records import TimestampAndOffset
from kafka_ref.log.log_read import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from kafka_ref.protocol.messages import DeleteRecordsResponse, ListOffsetsResponse
from kafka_ref.server.handlers.authz import Op, Res, authorized, require
from kafka_ref.server.replica_manager import Partition
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

READ_COMMITTED = 1
CONSUMER_REPLICA_ID = -1
EARLIEST_LOCAL_TIMESTAMP = -4  # KIP-405
LATEST_TIERED_TIMESTAMP = -5  # KIP-1005
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # KIP-1023
# The special targets and the first version that knows each (Kafka: `ReplicaManager`'s
# `timestampMinSupportedVersion`); any other negative target is unsupported.
MIN_VERSION_OF_TARGET = {
    LATEST_TIMESTAMP: 1,
    EARLIEST_TIMESTAMP: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11,
}
MIN_VERSION_WITH_OFFSET_NOT_AVAILABLE = 5
NOT_FOUND = TimestampAndOffset(-1, -1, -1)


class OffsetNotAvailableError(KafkaError):
    """A new leader's HW has not reached its epoch's start: the committed end is unknown."""

    code = ErrorCode.OFFSET_NOT_AVAILABLE


def offset_for_target(
    partition: Partition, target: int, *, read_committed: bool, replica_id: int
) -> TimestampAndOffset:
    """(timestamp, offset, leader epoch) for one ListOffsets target; NOT_FOUND (-1, -1, -1)
    when nothing qualifies."""
    consumer = replica_id == CONSUMER_REPLICA_ID
    if consumer:
        bound = partition.last_stable_offset if read_committed else partition.high_watermark
    else:  # a replica or a debugging tool may look up to the log end
        bound = partition.log.log_end_offset
    # Kafka's "lagging high watermark" after an election: consumers must wait (KIP-207).
    lagging = consumer and partition.leader_epoch_start_offset > partition.high_watermark
    if target == LATEST_TIMESTAMP:
        if lagging:
            raise OffsetNotAvailableError(
                f"the high watermark of {partition.topic}-{partition.index} has not reached"
                f" the start of leader epoch {partition.leader_epoch} yet"
            )
        return TimestampAndOffset(-1, bound, partition.leader_epoch)
    if target in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):  # the local log is all of it
        entries = partition.cache.entries
        start = partition.log_start_offset
        epoch = entries[0].epoch if entries and entries[0].start_offset <= start else -1
        return TimestampAndOffset(-1, start, epoch)
    if target in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
        return NOT_FOUND  # no tiered storage: nothing tiered, nothing waiting to be
    found = partition.log.offset_for_timestamp(target)  # a timestamp, or MAX_TIMESTAMP
    if found is None or found.offset >= bound:
        if lagging:
            raise OffsetNotAvailableError("no record that recent below the high watermark")
        return NOT_FOUND
    return TimestampAndOffset(found.timestamp, found.offset, max(found.leader_epoch, -1))


def handle_list_offsets(apis: ApiContext, request: Request) -> Any:
    body, version = request.body, request.api_version
    read_committed = version >= 2 and body.isolation_level == READ_COMMITTED
    seen = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            result = ListOffsetsResponse.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=0, timestamp=-1, offset=-1
            )
            try:
                if not authorized(apis, request, Op.DESCRIBE, Res.TOPIC, topic.name):
                    result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # SEC-17
                elif seen[(topic.name, p.partition_index)] > 1:
                    result.error_code = ErrorCode.INVALID_REQUEST
                elif p.timestamp < 0 and version < MIN_VERSION_OF_TARGET.get(p.timestamp, 99):
                    result.error_code = ErrorCode.UNSUPPORTED_VERSION  # BROKER-71
                else:
                    partition = apis.replica_manager.get_partition(topic.name, p.partition_index)
                    partition.check_leader_request(p.current_leader_epoch)  # v4+ (BROKER-70)
                    result.timestamp, result.offset, result.leader_epoch = offset_for_target(
                        partition,
                        p.timestamp,
                        read_committed=read_committed,
                        replica_id=body.replica_id,
                    )
            except OffsetNotAvailableError:
                result.error_code = (
                    ErrorCode.OFFSET_NOT_AVAILABLE
                    if version >= MIN_VERSION_WITH_OFFSET_NOT_AVAILABLE
                    else ErrorCode.LEADER_NOT_AVAILABLE
                )
            except KafkaError as err:
                result.error_code = err.code
            partitions.append(result)
        topics.append(
            ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=partitions)
        )
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def handle_delete_records(apis: ApiContext, request: Request) -> Any:
    topics = []
    for topic in request.body.topics:
        partitions = []
        for p in topic.partitions:
            result = DeleteRecordsResponse.DeleteRecordsPartitionResult(
                partition_index=p.partition_index, low_watermark=-1, error_code=0
            )
            try:
                require(apis, request, Op.DELETE, Res.TOPIC, topic.name)  # SEC-17
                partition = apis.replica_manager.get_partition(topic.name, p.partition_index)
                result.low_watermark = partition.delete_records_before(p.offset)
            except KafkaError as err:
                result.error_code = err.code
            partitions.append(result)
        topics.append(
            DeleteRecordsResponse.DeleteRecordsTopicResult(name=topic.name, partitions=partitions)
        )
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)
