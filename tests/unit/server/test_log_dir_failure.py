"""One broker, two log dirs, one fails while it runs: its partitions answer
KAFKA_STORAGE_ERROR, the other directory's serve on, DescribeLogDirs says which failed,
and the broker gives up only when both have failed (DUR-16).

The failure is real: the directory is replaced by a file, so the broker's next checkpoint
in it fails with ENOTDIR (the cluster test, tests/cluster/test_log_dir_failure.py, shows
the controller's side)."""

from __future__ import annotations

import os

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, DescribeLogDirsRequest
from tests.unit.server.conftest import Wire, batch, fetch_body, wait_until

pytestmark = pytest.mark.timeout(60)


def fail_dir(log_dir: str) -> None:
    os.rename(log_dir, log_dir + ".failed")
    with open(log_dir, "w") as f:
        f.write("a failed disk\n")


@pytest.mark.spec("DUR-16", "BROKER-52")
def test_a_failed_dir_answers_storage_errors_and_the_other_dir_serves_on(make_broker, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    broker = make_broker(props={"log.dirs": f"{a},{b}"})
    with Wire(broker.port) as wire:
        assert wire.create_topic("t", partitions=2) == 0  # t-0 in a, t-1 in b (DUR-13)
        assert os.path.isdir(os.path.join(b, "t-1"))
        for p in (0, 1):
            assert wire.produce("t", p, batch(1)).error_code == 0
        fail_dir(b)
        broker.call(broker.broker.log_manager.checkpoint)  # its checkpoint fails: b is offline
        assert wait_until(
            lambda: wire.produce("t", 1, batch(1)).error_code == ErrorCode.KAFKA_STORAGE_ERROR
        )
        assert wire.fetch("t", 1, 0).error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert wire.list_offset("t", 1, -1).error_code == ErrorCode.KAFKA_STORAGE_ERROR
        follower = fetch_body([("t", 1, 0)])
        follower.replica_id = 2  # a follower's fetch (handlers/follower_fetch.py)
        (answer,) = wire.request(ApiKey.FETCH, 10, follower).responses
        assert answer.partitions[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert wire.produce("t", 0, batch(1)).error_code == 0  # a serves on
        assert wire.fetch("t", 0, 0).high_watermark == 2
        answer = wire.request(ApiKey.DESCRIBE_LOG_DIRS, 4, DescribeLogDirsRequest(topics=None))
        dirs = {r.log_dir: r for r in answer.results}
        assert dirs[b].error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert (dirs[b].topics, dirs[b].total_bytes, dirs[b].usable_bytes) == ([], -1, -1)
        assert dirs[a].error_code == 0
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in dirs[a].topics] == [
            ("t", [0])
        ]
        assert wire.create_topic("u", partitions=1) == 0  # new partitions: only in a
        assert os.path.isdir(os.path.join(a, "u-0"))
        assert not broker.broker.all_log_dirs_failed.is_set()
        fail_dir(a)
        broker.call(broker.broker.log_manager.checkpoint)
        assert wait_until(broker.broker.all_log_dirs_failed.is_set)  # serve() stops it
