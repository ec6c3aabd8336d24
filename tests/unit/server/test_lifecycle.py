"""Restarts, crashes, configuration and the periodic tasks (BROKER-36, BROKER-39..BROKER-42)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from kafka_ref.cli import main
from kafka_ref.cluster.embedded import METADATA_FILE
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig, parse_properties
from tests.unit.server.conftest import Wire, batch, wait_until

pytestmark = pytest.mark.timeout(90)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hw(wire: Wire, topic: str, partition: int = 0) -> int:
    return wire.fetch_many([(topic, partition, 0)]).responses[0].partitions[0].high_watermark


@pytest.mark.spec("BROKER-36")
def test_topics_and_data_survive_a_restart(make_broker, tmp_path):
    data = tmp_path / "d"
    first = make_broker(data)
    wire = Wire(first.port)
    wire.create_topic("keep", partitions=3, **{"cleanup.policy": "compact"})
    wire.produce("keep", 2, batch(4))
    topic_id = first.broker.controller.topic("keep").topic_id
    cluster_id = first.broker.controller.cluster_id
    first.stop()
    second = make_broker(data)
    wire = Wire(second.port)
    meta = second.broker.controller.topic("keep")
    assert (meta.topic_id, meta.partitions) == (topic_id, 3)
    assert meta.configs == {"cleanup.policy": "compact"}
    assert second.broker.controller.cluster_id == cluster_id
    assert len(wire.metadata(["keep"], auto=False).topics[0].partitions) == 3
    assert hw(wire, "keep", 2) == 4
    assert second.broker.replica_manager.get_partition("keep", 0).log.config.compact


@pytest.mark.spec("BROKER-36")
def test_an_interrupted_deletion_is_finished_and_orphans_are_adopted(make_broker, tmp_path):
    data = tmp_path / "d"
    first = make_broker(data)
    wire = Wire(first.port)
    wire.create_topic("doomed", partitions=2)
    wire.create_topic("orphan")
    wire.produce("orphan", 0, batch(2))
    first.stop()
    path = data / METADATA_FILE
    state = json.loads(path.read_text())
    state["deleting"] = {"doomed": state["topics"].pop("doomed")["partitions"]}
    del state["topics"]["orphan"]  # logs on disk without metadata
    path.write_text(json.dumps(state))
    second = make_broker(data)
    wire = Wire(second.port)
    assert not [n for n in os.listdir(data) if n.startswith("doomed-")]
    assert json.loads(path.read_text())["deleting"] == {}
    assert [t.name for t in wire.metadata(None).topics] == ["orphan"]
    assert hw(wire, "orphan") == 2


@pytest.mark.spec("BROKER-36")
def test_corrupt_metadata_refuses_to_start(tmp_path):
    from kafka_ref.cluster.embedded import EmbeddedController, MetadataLoadError
    from kafka_ref.cluster.metadata import BrokerEndpoint

    (tmp_path / METADATA_FILE).write_text("{not json")
    with pytest.raises(MetadataLoadError, match="cannot read topic metadata"):
        EmbeddedController(tmp_path, BrokerEndpoint(0, "h", 1))
    (tmp_path / METADATA_FILE).unlink()
    EmbeddedController(tmp_path, BrokerEndpoint(0, "h", 1))
    with pytest.raises(MetadataLoadError, match=r"node\.id"):
        EmbeddedController(tmp_path, BrokerEndpoint(1, "h", 1))


@pytest.mark.spec("BROKER-39")
def test_a_clean_stop_writes_the_marker(make_broker, tmp_path):
    data = tmp_path / "d"
    broker = make_broker(data)
    Wire(broker.port).create_topic("m")
    assert not (data / ".kafka_cleanshutdown").exists()
    broker.stop()
    assert (data / ".kafka_cleanshutdown").exists()


def start_process(data, port, preexec_fn=None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "kafka_ref.cli", "broker", "--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        [*cmd, "--data-dir", str(data)], stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn
    )

    def accepting() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False

    assert wait_until(accepting, timeout=20), "broker did not start"
    return proc


@pytest.mark.spec("BROKER-39")
def test_sigterm_is_clean_and_kill_9_recovers(tmp_path):
    data, port = tmp_path / "d", free_port()
    proc = start_process(data, port)
    wire = Wire(port)
    wire.create_topic("crash", partitions=2)
    for i in range(20):
        assert wire.produce("crash", i % 2, batch(3)).error_code == 0
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert not (data / ".kafka_cleanshutdown").exists()
    proc = start_process(data, port)
    wire = Wire(port)
    assert [hw(wire, "crash", p) for p in (0, 1)] == [30, 30]
    wire.produce("crash", 0, batch(1))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    log = proc.stderr.read()
    assert "shut down cleanly" in log and "unclean shutdown" in log  # it had recovered
    assert (data / ".kafka_cleanshutdown").exists()


@pytest.mark.spec("BROKER-40")
@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--config", "num.partition=3"], "unknown broker config 'num.partition'"),
        (["--config", "num.partitions=abc"], "num.partitions"),
        (["--config", "num.partitions=0"], "below the minimum"),
        (["--config", "log.segment.bytes=1"], "segment.bytes"),
        (["--config", "novalue"], "KEY=VALUE"),
        (["--listen", "nohostport"], "HOST:PORT"),
        (["--config", "listeners=SSL://h:1"], "is not among the listeners"),  # SEC-2
        (["--config", "listeners=FOO://h:1"], "listener.security.protocol.map"),
        (["/no/such/server.properties"], "cannot read"),
    ],
)
def test_a_bad_config_is_one_line_and_exit_2(capsys, tmp_path, args, fragment):
    code = main(["broker", "--data-dir", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert fragment in err and len(err.strip().splitlines()) == 1


@pytest.mark.spec("DUR-14")
def test_a_log_dir_that_cannot_be_created_stops_the_start(tmp_path, caplog):
    (tmp_path / "plain-file").write_text("not a directory")
    dirs = f"{tmp_path / 'a'},{tmp_path / 'plain-file' / 'b'}"
    args = ["broker", "--config", f"log.dirs={dirs}", "--listen", "127.0.0.1:0"]
    assert main(args) == 1
    assert f"Failed to create data directory {tmp_path / 'plain-file' / 'b'}" in caplog.text
    assert os.listdir(tmp_path / "a") == []  # checked before anything was written


@pytest.mark.spec("DUR-14")
def test_log_dirs_of_different_clusters_stop_the_start(tmp_path, caplog):
    for name, cluster in (("a", "AAAAAAAAAAAAAAAAAAAAAA"), ("b", "BBBBBBBBBBBBBBBBBBBBBB")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "meta.properties").write_text(f"version=1\ncluster.id={cluster}\n")
    dirs = f"{tmp_path / 'a'},{tmp_path / 'b'}"
    assert main(["broker", "--config", f"log.dirs={dirs}", "--listen", "127.0.0.1:0"]) == 1
    assert "the log dirs belong to different clusters" in caplog.text


@pytest.mark.spec("BROKER-41")
def test_properties_files():
    text = """
# a comment
! another
broker.id=3
num.partitions : 4
log.dirs /tmp/x
listeners=PLAINTEXT://0.0.0.0:9\\
092
process.roles=broker,controller
"""
    props = parse_properties(text)
    assert props == {
        "broker.id": "3",
        "num.partitions": "4",
        "log.dirs": "/tmp/x",
        "listeners": "PLAINTEXT://0.0.0.0:9092",
        "process.roles": "broker,controller",
    }
    config = KafkaConfig.from_props(props, {"num.partitions": "6"})
    assert (config.broker_id, config["num.partitions"], config.data_dir) == (3, 6, "/tmp/x")
    assert [e.uri() for e in config.endpoints()] == ["PLAINTEXT://0.0.0.0:9092"]
    assert [e.uri() for e in config.advertised_endpoints()] == ["PLAINTEXT://127.0.0.1:9092"]
    assert config.ignored == ["process.roles"]


@pytest.mark.spec("BROKER-41")
def test_broker_defaults_of_topic_configs():
    config = KafkaConfig.from_props({"log.retention.hours": "2", "log.segment.bytes": "1024"})
    log = config.log_config()
    assert (log.retention_ms, log.segment_bytes) == (7_200_000, 1024)
    both = KafkaConfig.from_props({"log.retention.hours": "2", "log.retention.ms": "5"})
    assert both.log_config().retention_ms == 5
    minutes = KafkaConfig.from_props({"log.retention.minutes": "3"})
    assert minutes.log_config().retention_ms == 180_000
    assert KafkaConfig.from_props({"message.max.bytes": "99"}).log_config().max_message_bytes == 99
    with pytest.raises(ConfigError):
        KafkaConfig.from_props({"log.cleanup.policy": "shred"})


@pytest.mark.spec("BROKER-41")
def test_the_cli_reads_a_properties_file(tmp_path):
    from kafka_ref.tools.broker import build_config

    props = tmp_path / "server.properties"
    props.write_text("num.partitions=5\nlog.dirs=/ignored\nlisteners=PLAINTEXT://127.0.0.1:1\n")
    import argparse

    args = argparse.Namespace(
        properties=str(props),
        listen="127.0.0.1:2",
        data_dir=str(tmp_path),
        config=["num.partitions=7"],
    )
    config = build_config(args)
    assert (config["num.partitions"], config.data_dir, config.endpoints()[0].uri()) == (
        7,
        str(tmp_path),
        "PLAINTEXT://127.0.0.1:2",
    )


@pytest.mark.spec("BROKER-42")
def test_retention_and_cleaner_run_periodically(make_broker):
    broker = make_broker(
        props={"log.retention.check.interval.ms": 100, "log.cleaner.backoff.ms": 100}
    )
    wire = Wire(broker.port)
    wire.create_topic("old", **{"segment.bytes": "300", "retention.ms": "1000"})
    compacted = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
    wire.create_topic("cmp", **{"segment.bytes": "300", **compacted})
    for _ in range(5):
        wire.produce("old", 0, batch(1, ts=1000, value_size=150))  # long expired
        wire.produce("cmp", 0, batch(1, value_size=150, key_prefix=b"same"))
    old = broker.broker.replica_manager.get_partition("old", 0)
    assert wait_until(lambda: old.log_start_offset == 4, timeout=10)  # only the active stays
    cmp = broker.broker.replica_manager.get_partition("cmp", 0)
    one = len(batch(1, value_size=150, key_prefix=b"same"))
    assert wait_until(lambda: broker.call(lambda: cmp.log.size_in_bytes) == 2 * one, timeout=10)
    records = wire.fetch_many([("cmp", 0, 0)]).responses[0].partitions[0].records
    assert len(records) == 2 * one  # offsets 3 and 4: the last of the cleaned part, the active


@pytest.mark.spec("BROKER-42")
def test_retention_is_bounded_by_the_high_watermark(make_broker, monkeypatch):
    from kafka_ref.server.replica_manager import Partition

    broker = make_broker()
    wire = Wire(broker.port)
    wire.create_topic("hw", **{"segment.bytes": "300", "retention.ms": "1000"})
    for _ in range(5):
        wire.produce("hw", 0, batch(1, ts=1000, value_size=150))
    monkeypatch.setattr(Partition, "high_watermark", property(lambda self: 2), raising=False)
    broker.call(broker.broker.tasks.run_retention)
    assert broker.broker.replica_manager.get_partition("hw", 0).log_start_offset == 2  # not 4


@pytest.mark.spec("BROKER-39")
def test_a_taken_port_fails_cleanly(tmp_path, caplog):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["broker", "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path)])
    assert code == 1
    assert "cannot run the broker" in caplog.text
    assert (tmp_path / ".kafka_cleanshutdown").exists()  # the logs were closed, not crashed


STOCK_KRAFT_PROPERTIES = """\
# Kafka 4.0 config/server.properties (combined mode), comments shortened
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:0,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
#log.flush.interval.messages=10000
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


@pytest.mark.spec("BROKER-41")
def test_kafkas_own_server_properties_work(tmp_path):
    from kafka_ref.server.broker_process import BrokerThread

    path = tmp_path / "server.properties"
    path.write_text(STOCK_KRAFT_PROPERTIES)
    config = KafkaConfig.from_file(path, {"log.dirs": str(tmp_path / "data")})
    assert (config.broker_id, [e.uri() for e in config.endpoints()]) == (1, ["PLAINTEXT://:0"])
    advertised = [e.uri() for e in config.advertised_endpoints()]
    assert advertised == ["PLAINTEXT://localhost:9092"]  # the CONTROLLER listener is not ours
    assert "process.roles" in config.ignored and config.log_config().retention_ms == 604_800_000
    with BrokerThread(config) as broker:
        response = Wire(broker.port).metadata([])
        assert response.controller_id == 1
        assert [(b.host, b.port) for b in response.brokers] == [("localhost", 9092)]


def _open_files_limits(pid: int) -> tuple[int, int]:
    """(soft, hard) of "Max open files" in /proc/PID/limits."""
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no Max open files line")


@pytest.mark.spec("BROKER-60")
def test_a_broker_process_raises_its_open_files_limit_to_the_hard_one(tmp_path):
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(256, hard)

    def lower() -> None:  # the child starts with a low soft limit, as many shells give
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))

    proc = start_process(tmp_path / "d", free_port(), preexec_fn=lower)
    try:
        assert _open_files_limits(proc.pid) == (hard, hard)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
