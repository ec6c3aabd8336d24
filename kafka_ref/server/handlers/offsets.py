"""ListOffsets and DeleteRecords: finding offsets, and moving the log start offset.

**ListOffsets** (key 2) turns a *target* into an offset per partition (Kafka:
`KafkaApis.handleListOffsetRequest` -> `Partition.fetchOffsetForTimestamp`):

* `-2` (EARLIEST) gives the log start offset: where `auto.offset.reset=earliest` starts;
* `-1` (LATEST) gives the high watermark (the last stable offset for read_committed,
  v2+), where `latest` starts: the next offset a consumer could read (BROKER-24);
* a timestamp T gives the first offset whose record timestamp is >= T, with that
  record's batch timestamp, found through the time index (`offsets_for_times`, KIP-79);
  if no record that recent exists below the high watermark the answer is offset -1,
  timestamp -1 (BROKER-25).

A negative target is a selector, and each selector came with a version of the request: a
partition asked for one its request's version does not know (-3, the max timestamp, below
v7; any other negative value) answers UNSUPPORTED_VERSION, before the broker even looks
for the partition, as Kafka's `ReplicaManager.fetchOffset` does (BROKER-61). The
partitions are checked in Kafka's order: authorization, a partition named twice
(INVALID_REQUEST), the selector's version, then the lookup.

**DeleteRecords** (key 21) raises a partition's log start offset to the given offset
(-1 means the high watermark): records below it become unreadable at once, and segments
wholly below it are deleted (LOG-14). An offset above the high watermark is
OFFSET_OUT_OF_RANGE; a compacted topic refuses with POLICY_VIOLATION, as Kafka does. The
answer is the new low watermark (BROKER-26).

Rules: BROKER-24, BROKER-25, BROKER-26, BROKER-61.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.log.log_read import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafka_ref.protocol.messages import DeleteRecordsResponse, ListOffsetsResponse
from kafka_ref.server.handlers.authz import Op, Res, authorized, require
from kafka_ref.server.replica_manager import Partition
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

READ_COMMITTED = 1
CONSUMER_REPLICA_ID = -1
# The first ListOffsets version of each selector (Kafka: `timestampMinSupportedVersion`):
# latest and earliest, max timestamp (KIP-734), earliest local and latest tiered (KIP-405),
# earliest pending upload (KIP-1023).
SELECTOR_MIN_VERSION = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}


def selector_unsupported(target: int, version: int) -> bool:
    """A negative target this request's version does not know (BROKER-61)."""
    return target < 0 and version < SELECTOR_MIN_VERSION.get(target, 1 << 15)


def offset_for_target(partition: Partition, target: int, *, read_committed: bool, replica_id: int):
    """(timestamp, offset) for one ListOffsets target; (-1, -1) when nothing qualifies."""
    if replica_id == CONSUMER_REPLICA_ID:
        bound = partition.last_stable_offset if read_committed else partition.high_watermark
    else:  # a replica or a debugging tool may look up to the log end
        bound = partition.log.log_end_offset
    if target == EARLIEST_TIMESTAMP:
        return -1, partition.log_start_offset
    if target == LATEST_TIMESTAMP:
        return -1, bound
    found = partition.log.offset_for_timestamp(target)
    if found is None or found.offset >= bound:
        return -1, -1
    return found.timestamp, found.offset


def handle_list_offsets(apis: ApiContext, request: Request) -> Any:
    body = request.body
    read_committed = request.api_version >= 2 and body.isolation_level == READ_COMMITTED
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
                elif selector_unsupported(p.timestamp, request.api_version):
                    result.error_code = ErrorCode.UNSUPPORTED_VERSION  # BROKER-61
                else:
                    partition = apis.replica_manager.get_partition(topic.name, p.partition_index)
                    result.timestamp, result.offset = offset_for_target(
                        partition,
                        p.timestamp,
                        read_committed=read_committed,
                        replica_id=body.replica_id,
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
