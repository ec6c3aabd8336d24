"""DescribeLogDirs with kafka-python's admin client, on a broker with two log.dirs (BROKER-52).

Partitions go to the directory holding the fewest (DUR-13), so a topic of four partitions
has two in each; the answer must say which, with each partition's size equal to its
segment files on disk.
"""

from __future__ import annotations

import glob
import os

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from kafka_ref.conformance.wire import Wire, batch
from kafka_ref.tools.server_process import free_port
from tests.interop.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("logdirs")
    dirs = [str(base / "a"), str(base / "b")]
    process = BrokerProcess(str(base / "a"), free_port(), {"log.dirs": ",".join(dirs)})
    process.start()
    process.dirs = dirs
    yield process
    process.stop()


def on_disk(log_dir: str, topic: str, partition: int) -> int:
    return sum(os.path.getsize(f) for f in glob.glob(f"{log_dir}/{topic}-{partition}/*.log"))


@pytest.mark.spec("BROKER-52")
def test_each_directory_lists_its_partitions_with_their_sizes(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("spread", 4, 1)])
        with Wire("127.0.0.1", broker.port) as wire:
            wire.wait_for_leader("spread", 4)
            for partition, count in ((0, 3), (1, 1), (3, 2)):
                for _ in range(count):
                    assert wire.produce("spread", partition, batch([b"x" * 100])).error_code == 0
        (answer,) = admin.describe_log_dirs()
        assert answer["broker"] == 0
        dirs = answer["log_dirs"]
        assert [d["log_dir"] for d in dirs] == broker.dirs and {d["error_code"] for d in dirs} == {
            0
        }
        placed = {}
        for d in dirs:
            assert d["total_bytes"] > 0 and 0 <= d["usable_bytes"] <= d["total_bytes"]
            for topic in d["topics"]:
                for p in topic["partitions"]:
                    placed[(topic["name"], p["partition_index"])] = d["log_dir"]
                    assert p["partition_size"] == on_disk(
                        d["log_dir"], topic["name"], p["partition_index"]
                    )
                    assert (p["offset_lag"], p["is_future_key"]) == (0, False)
        spread = {p: where for (t, p), where in placed.items() if t == "spread"}
        assert sorted(spread) == [0, 1, 2, 3]
        assert sorted(spread.values()) == sorted(broker.dirs * 2), "two in each directory"
        assert all(os.path.isdir(f"{spread[p]}/spread-{p}") for p in spread)
        assert on_disk(spread[0], "spread", 0) > on_disk(spread[1], "spread", 1) > 0

        (only,) = admin.describe_log_dirs(topic_partitions={"spread": [1]})
        listed = [
            (t["name"], p["partition_index"], d["log_dir"])
            for d in only["log_dirs"]
            for t in d["topics"]
            for p in t["partitions"]
        ]
        assert listed == [("spread", 1, spread[1])]
        assert len(only["log_dirs"]) == 2, "every directory is listed, even without a match"
    finally:
        admin.close()
