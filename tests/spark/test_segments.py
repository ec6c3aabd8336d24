"""`format("kafka_ref_segments")`: segment files as rows, checked against dump-log."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from pyspark.errors import PythonException

from tests.spark.conftest import T0, produce

FIELD = re.compile(r"(\w+): (\S+)")
BATCH_COLUMNS = (
    "segment",
    "baseOffset",
    "lastOffset",
    "position",
    "batchSize",
    "recordCount",
    "compression",
    "producerId",
    "producerEpoch",
    "baseSequence",
    "partitionLeaderEpoch",
    "isTransactional",
    "isControl",
)


def segments(spark, path: str, **options):
    return spark.read.format("kafka_ref_segments").options(**options).load(path)


def dump_log(path: str) -> list[tuple]:
    """(record fields..., batch fields...) per record, from `kafka-ref dump-log --print-data`."""
    out = subprocess.run(
        [sys.executable, "-m", "kafka_ref.cli", "dump-log", "--print-data", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    segment = int(os.path.basename(path).split(".")[0])
    rows, batch = [], None
    for line in out.splitlines():
        fields = dict(FIELD.findall(line))
        if line.startswith("baseOffset:"):
            batch = (
                segment,
                int(fields["baseOffset"]),
                int(fields["lastOffset"]),
                int(fields["position"]),
                int(fields["size"]),
                int(fields["count"]),
                fields["compresscodec"],
                int(fields["producerId"]),
                int(fields["producerEpoch"]),
                int(fields["baseSequence"]),
                int(fields["partitionLeaderEpoch"]),
                fields["isTransactional"] == "true",
                fields["isControl"] == "true",
            )
        elif line.startswith("| offset:"):
            record = (
                int(fields["offset"]),
                int(fields["CreateTime"]),
                fields.get("key", "").encode(),
                fields.get("payload", "").encode(),
            )
            rows.append(record + batch)
    return rows


@pytest.fixture(scope="module")
def rolled_topic(kafka_broker, bootstrap):
    """A topic whose partition 0 has several segments, some batches gzip'ed."""
    admin_topic = f"segments-{os.getpid()}"
    from kafka_ref.client.admin import Admin, NewTopic

    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(admin_topic, 2, 1, {"segment.bytes": "4096"})])
    pad = b"-" + b"x" * 40
    produce(
        bootstrap,
        admin_topic,
        [(0, b"k%d" % i, b"plain-%d" % i + pad) for i in range(150)],
        batch_size=1024,
    )
    produce(
        bootstrap,
        admin_topic,
        [(0, b"z%d" % i, b"gzipped-%d" % i + pad, T0 + 1000 + i) for i in range(150)],
        compression_type="gzip",
        batch_size=1024,
    )
    produce(bootstrap, admin_topic, [(1, b"p1", b"other-partition")])
    return admin_topic, os.path.join(kafka_broker.data_dir, f"{admin_topic}-0")


@pytest.mark.spec("SPARK-12", "SPARK-13")
def test_segment_rows_agree_with_dump_log(spark, rolled_topic):
    topic, partition_dir = rolled_topic
    logs = sorted(f for f in os.listdir(partition_dir) if f.endswith(".log"))
    assert len(logs) > 2, "segment.bytes=4096 should have rolled the log"
    expected = sorted(row for f in logs for row in dump_log(os.path.join(partition_dir, f)))

    df = segments(spark, partition_dir)
    assert df.rdd.getNumPartitions() == len(logs)  # one input partition per segment file
    columns = ("offset", "unix_millis(timestamp)", "key", "value", *BATCH_COLUMNS)
    got = sorted(tuple(r) for r in df.selectExpr(*columns).collect())
    assert got == expected
    assert {r[10] for r in got} == {"none", "gzip"}
    assert all(r[11] >= 0 for r in got)  # our producer is idempotent: every batch has an id
    assert {tuple(r) for r in df.select("topic", "partition").distinct().collect()} == {(topic, 0)}


@pytest.mark.spec("SPARK-12")
def test_a_data_dir_or_a_single_file_can_be_loaded(spark, kafka_broker, rolled_topic):
    topic, partition_dir = rolled_topic
    everything = segments(spark, kafka_broker.data_dir).where(f"topic = '{topic}'")
    assert sorted(tuple(r) for r in everything.select("partition", "offset").collect()) == [
        (0, o) for o in range(300)
    ] + [(1, 0)]
    first = os.path.join(partition_dir, "00000000000000000000.log")
    one_file = segments(spark, first)
    assert one_file.rdd.getNumPartitions() == 1
    assert [r.offset for r in one_file.orderBy("offset").collect()] == [
        r[0] for r in dump_log(first)
    ]


@pytest.mark.spec("SPARK-13")
def test_a_torn_tail_ends_the_file_and_a_bad_crc_fails(spark, rolled_topic, tmp_path):
    _, partition_dir = rolled_topic
    source = os.path.join(partition_dir, "00000000000000000000.log")
    complete = len(dump_log(source))
    torn_dir = tmp_path / "torn-0"
    torn_dir.mkdir()
    torn = torn_dir / "00000000000000000000.log"
    shutil.copy(source, torn)
    data = torn.read_bytes()
    torn.write_bytes(data + data[:100])  # the first 100 bytes of a batch: a cut write
    assert segments(spark, str(torn)).count() == complete

    bad_dir = tmp_path / "bad-0"
    bad_dir.mkdir()
    bad = bytearray(data)
    bad[-3] ^= 0xFF  # inside the last batch's records: covered by its CRC
    (bad_dir / "00000000000000000000.log").write_bytes(bytes(bad))
    with pytest.raises(PythonException, match=r"00000000000000000000\.log at position \d+"):
        segments(spark, str(bad_dir)).count()


@pytest.mark.spec("SPARK-13")
def test_segment_options_are_checked(spark, tmp_path):
    with pytest.raises(Exception, match="Unknown option 'subscribe' for the kafka_ref_segments"):
        segments(spark, str(tmp_path), subscribe="t").count()
    with pytest.raises(Exception, match="no segment files under"):
        segments(spark, str(tmp_path)).count()
