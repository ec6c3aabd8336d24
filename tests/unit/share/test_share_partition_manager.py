"""The share-partition manager's loading: from the persister, once per leader epoch, and
where a share-partition never started begins (`share.auto.offset.reset`).

The partition is a stand-in with the few attributes the manager reads when it loads (leader
epoch, log start, high watermark, the log's timestamp lookup); the log reads and the wire
are the broker test's (tests/unit/server/test_share_fetch.py).
"""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

import pytest

from kafka_ref.clock import ManualClock, ManualScheduler
from kafka_ref.errors import ErrorCode
from kafka_ref.share.persister import (
    NoOpPersister,
    RecordState,
    SharePartitionKey,
    ShareState,
    StateBatch,
)
from kafka_ref.share.share_partition import (
    AcknowledgementBatch,
    FetchedBatch,
    SharePartitionConfig,
)
from kafka_ref.share.share_partition_manager import (
    GroupShareConfig,
    SharePartitionManager,
    parse_duration_ms,
)

KEY = SharePartitionKey("g", uuid.uuid4(), 0)
HOUR_MS = 3_600_000


class CountingPersister(NoOpPersister):
    def __init__(self, state: ShareState) -> None:
        self.state, self.reads, self.writes, self.counts = state, [], [], []

    async def read_state(self, key, leader_epoch):
        self.reads.append(leader_epoch)
        return self.state

    async def write_state(self, key, state_epoch, leader_epoch, start_offset, batches, count=-1):
        self.writes.append(start_offset)
        self.counts.append(count)
        return ErrorCode.NO_ERROR


def manager(state: ShareState, reset: str = "latest"):
    clock = ManualClock()
    stamps = {clock.milliseconds() - HOUR_MS: 70}  # the first record at or after now - 1 h
    log = SimpleNamespace(
        offset_for_timestamp=lambda ts: SimpleNamespace(offset=stamps[ts]) if ts in stamps else None
    )
    partition = SimpleNamespace(leader_epoch=3, log_start_offset=10, high_watermark=100, log=log)
    replicas = SimpleNamespace(get_partition=lambda topic, index, require_leader: partition)
    persister = CountingPersister(state)
    made = SharePartitionManager(
        replicas,
        persister,
        clock,
        ManualScheduler(clock).schedule,
        SharePartitionConfig(5, 30_000, 2000),
        max_sessions=10,
        group_config=lambda group: GroupShareConfig(auto_offset_reset=reset),
    )
    return made, partition, persister


@pytest.mark.spec("SHARE-24")
def test_a_share_partition_is_read_once_per_leader_epoch():
    state = ShareState(start_offset=40, batches=(StateBatch(40, 41, RecordState.AVAILABLE, 2),))
    made, partition, persister = manager(state)

    async def scenario():
        first = await made.share_partition(KEY, "t")
        assert await made.share_partition(KEY, "t") is first
        assert persister.reads == [3]
        assert (first.start_offset, first.records[41].delivery_count) == (40, 2)
        partition.leader_epoch = 4  # leadership moved away and back: read again
        again = await made.share_partition(KEY, "t")
        assert again is not first and persister.reads == [3, 4]

    asyncio.run(scenario())


@pytest.mark.spec("SHARE-10")
@pytest.mark.parametrize(
    "reset, start",
    [("latest", 100), ("earliest", 10), ("by_duration:PT1H", 70), ("by_duration:P1D", 100)],
)
def test_a_state_never_started_begins_at_share_auto_offset_reset(reset, start):
    made, _, persister = manager(ShareState(), reset)

    async def scenario():
        share_partition = await made.share_partition(KEY, "t")
        assert share_partition.start_offset == start
        assert persister.writes == [start]  # the start is written at once

    asyncio.run(scenario())


@pytest.mark.spec("SHARE-51")
def test_a_write_carries_the_delivery_complete_count_with_the_start_offset():
    waiting = StateBatch(40, 40, RecordState.AVAILABLE, 1)
    done = StateBatch(41, 43, RecordState.ACKNOWLEDGED, 1)  # done behind 40, not yet passed
    state = ShareState(start_offset=40, batches=(waiting, done))
    made, _, persister = manager(state)

    async def scenario():
        sp = await made.share_partition(KEY, "t")
        sp.acquire("m1", [FetchedBatch(40, 43)], max_records=10, bound=100)
        await made.persist(KEY)
        sp.acknowledge("m1", [AcknowledgementBatch(40, 40, (1,))])  # accepted: all passed
        await made.persist(KEY)
        assert list(zip(persister.writes, persister.counts, strict=True)) == [(40, 3), (44, 0)]

    asyncio.run(scenario())


@pytest.mark.spec("SHARE-10")
def test_durations_are_iso_8601():
    assert parse_duration_ms("PT1H") == HOUR_MS
    assert parse_duration_ms("P1DT2M0.5S") == 86_400_000 + 120_000 + 500
    for bad in ("1H", "P", "PT", "PT-1S"):
        with pytest.raises(ValueError):
            parse_duration_ms(bad)


@pytest.mark.spec("SHARE-24")
def test_a_failed_read_is_the_partitions_error():
    made, _, _ = manager(ShareState(error=ErrorCode.FENCED_LEADER_EPOCH))

    async def scenario():
        with pytest.raises(Exception) as caught:
            await made.share_partition(KEY, "t")
        assert caught.value.code == ErrorCode.FENCED_LEADER_EPOCH
        assert KEY not in made.entries

    asyncio.run(scenario())


@pytest.mark.spec("CONFIG-14")
def test_a_groups_record_lock_duration_replaces_the_brokers():
    made, _, _ = manager(ShareState())
    assert made.partition_config(KEY.group_id).record_lock_duration_ms == 30_000  # the broker's
    made.group_config = lambda group: GroupShareConfig(record_lock_duration_ms=16_000)

    async def scenario():
        share_partition = await made.share_partition(KEY, "t")
        assert share_partition.config.record_lock_duration_ms == 16_000
        assert share_partition.config.delivery_count_limit == 5  # the rest stays the broker's

    asyncio.run(scenario())
