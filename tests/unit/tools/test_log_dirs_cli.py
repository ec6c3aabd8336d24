"""`kafka-ref log-dirs --describe`, as a user drives kafka-log-dirs.sh (TOOLS-25)."""

from __future__ import annotations

import json

import pytest

from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.unit.tools.test_tools_at_the_edges import assert_ends_with_one_line, tool

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("logdirs-cli")
    dirs = [str(base / "a"), str(base / "b")]
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "broker.id": "3", "log.dirs": ",".join(dirs)}
    thread = BrokerThread(KafkaConfig.from_props(props)).start()
    thread.dirs = dirs
    yield thread
    thread.stop()


def log_dirs(broker, *argv: str):
    return tool("log-dirs", "--bootstrap-server", broker.bootstrap, *argv)


@pytest.mark.spec("TOOLS-25")
def test_describe_prints_kafka_log_dirs_json(broker):
    for topic in ("left", "right"):
        assert (
            tool(
                "topics",
                "--bootstrap-server",
                broker.bootstrap,
                "--create",
                "--topic",
                topic,
                "--partitions",
                "2",
            )[0]
            == 0
        )
    code, out, err, _ = log_dirs(broker, "--describe", "--topic-list", "left")
    assert (code, err) == (0, ""), err
    first, second, report = out.splitlines()
    assert first == "Querying brokers for log directories information"
    assert second == "Received log directory information from brokers 3"
    report = json.loads(report)
    assert report["version"] == 1 and [b["broker"] for b in report["brokers"]] == [3]
    dirs = report["brokers"][0]["logDirs"]
    assert [d["logDir"] for d in dirs] == broker.dirs and [d["error"] for d in dirs] == [None] * 2
    partitions = sorted(p["partition"] for d in dirs for p in d["partitions"])
    assert partitions == ["left-0", "left-1"], "--topic-list keeps only left's"
    assert all(
        p["size"] == 0 and p["offsetLag"] == 0 and p["isFuture"] is False
        for d in dirs
        for p in d["partitions"]
    )


@pytest.mark.spec("TOOLS-25", "TOOLS-3")
@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [
        (["--describe", "--broker-list", "7"], 1),
        (["--describe", "--broker-list", "x"], 2),
        ([], 2),
    ],
)
def test_bad_requests_and_flags_are_one_line(broker, argv, exit_code):
    code, _, err, _ = log_dirs(broker, *argv)
    assert code == exit_code, err
    assert_ends_with_one_line("log-dirs", code, err)
