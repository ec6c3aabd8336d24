"""A follower's reads for consumers are bounded by its own high watermark (REPL-17).

Hypothesis builds a leader's log of batches, lets a follower copy a prefix of it and hear
some leader high watermark, then reads at every offset: nothing at or past the follower's
HW comes out, though the follower holds it, and past its log end is out of range.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.conformance.wire import decode_batches
from kafka_ref.errors import OffsetOutOfRangeError
from kafka_ref.log.log import Log
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.replication.leader_epoch import LeaderEpochFileCache
from kafka_ref.replication.messages import LeaderAndIsr
from kafka_ref.replication.partition import Partition
from kafka_ref.replication.reads import ConsumerReads

T0 = 1_700_000_000_000


def follower(directory) -> Partition:
    clock = ManualClock(T0)
    log = Log.open(directory, LogConfig(), clock)
    partition = Partition(
        "t", 0, 1, log, LeaderEpochFileCache.load(directory), clock, replica_lag_time_max_ms=1
    )
    partition.make_follower(LeaderAndIsr("t", 0, 0, 1, (0, 1), (0, 1)))
    return partition


def read_offsets(partition: ConsumerReads, offset: int) -> list[int]:
    info = partition.read(offset, 1 << 20, min_one_batch=True)
    return [
        b.base_offset + i for b in decode_batches(info.read_bytes()) for i in range(len(b.records))
    ]


@pytest.mark.spec("REPL-17")
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=6),
    copied=st.integers(0, 6),
    committed=st.integers(0, 6),
)
def test_a_follower_never_shows_what_its_high_watermark_has_not_passed(
    tmp_path_factory, sizes, copied, committed
):
    # The leader's HW is the LEO of some ISR member: a batch boundary of its log.
    leader_hw = sum(sizes[:committed])
    partition = follower(tmp_path_factory.mktemp("follower") / "t-0")
    base = 0
    for size in sizes[:copied]:  # the prefix of the leader's log the follower fetched
        records = [Record(None, b"v%d" % (base + i), timestamp=T0) for i in range(size)]
        partition.append_as_follower(
            build_batch(records, base_offset=base, partition_leader_epoch=1)
        )
        base += size
    partition.update_follower_high_watermark(leader_hw)
    hw, leo = partition.high_watermark, partition.log_end_offset
    assert hw == min(leader_hw, leo)  # min(leader's HW, own LEO): REPL-7
    for offset in range(leo + 1):
        served = read_offsets(partition, offset)
        assert all(o < hw for o in served), (offset, hw, served)  # never past the HW
        assert bool(served) == (offset < hw)  # and everything below it is readable
        if served:
            assert served[0] <= offset <= served[-1]  # from the batch holding the offset
    with pytest.raises(OffsetOutOfRangeError):
        partition.read(leo + 1, 1 << 20, min_one_batch=True)
