"""`kafka-ref configs --entity-type brokers`, as a user drives kafka-configs.sh (CONFIG-7)."""

from __future__ import annotations

import pytest

from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.unit.tools.test_tools_at_the_edges import assert_ends_with_one_line, tool

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker of its own: these tests change its dynamic configs."""
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "broker.id": "1",
        "log.dirs": str(tmp_path_factory.mktemp("brokercfg")),
        "log.retention.hours": "5",
    }
    thread = BrokerThread(KafkaConfig.from_props(props)).start()
    yield thread
    thread.stop()


def configs(broker, *argv: str):
    return tool(
        "configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "brokers", *argv
    )


@pytest.mark.spec("CONFIG-7")
def test_alter_and_describe_a_brokers_and_the_clusters_configs(broker):
    code, out, err, _ = configs(
        broker, "--entity-default", "--alter", "--add-config", "log.retention.ms=7000"
    )
    assert (code, out, err) == (
        0,
        "Completed updating default config for brokers in the cluster.\n",
        "",
    )
    code, out, err, _ = configs(
        broker, "--entity-name", "1", "--alter", "--add-config", "log.retention.ms=1000"
    )
    assert (code, out, err) == (0, "Completed updating config for broker 1.\n", "")
    code, out, _, _ = configs(broker, "--entity-name", "1", "--describe")
    assert out.splitlines() == [
        "Dynamic configs for broker 1 are:",
        "  log.retention.ms=1000 sensitive=false synonyms={"
        "DYNAMIC_BROKER_CONFIG:log.retention.ms=1000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7000, "
        "STATIC_BROKER_CONFIG:log.retention.hours=5, "
        "DEFAULT_CONFIG:log.retention.ms=604800000, DEFAULT_CONFIG:log.retention.hours=168}",
    ]
    code, out, _, _ = configs(broker, "--entity-default", "--describe")
    assert out.splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  log.retention.ms=7000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7000}",
    ]
    assert (
        configs(broker, "--entity-name", "1", "--alter", "--delete-config", "log.retention.ms")[0]
        == 0
    )
    code, out, _, _ = configs(broker, "--entity-name", "1", "--describe")
    assert out == "Dynamic configs for broker 1 are:\n"


@pytest.mark.spec("CONFIG-7", "TOOLS-3")
@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [
        (["--entity-name", "1", "--alter", "--add-config", "num.partitions=3"], 1),
        (["--entity-name", "1", "--alter", "--add-config", "log.retention.ms=soon"], 1),
        (["--entity-name", "one", "--describe"], 2),
        (["--entity-name", "1", "--entity-default", "--describe"], 2),
        (["--describe"], 2),
    ],
)
def test_bad_broker_changes_and_flags_are_one_line(broker, argv, exit_code):
    code, _, err, _ = configs(broker, *argv)
    assert code == exit_code, err
    assert_ends_with_one_line("configs", code, err)
