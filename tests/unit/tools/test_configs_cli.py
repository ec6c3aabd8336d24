"""`kafka-ref configs`, driven as a user drives kafka-configs.sh (CONFIG-3)."""

from __future__ import annotations

import pytest

from tests.unit.tools.test_tools_at_the_edges import assert_ends_with_one_line, tool

pytestmark = pytest.mark.timeout(120)


def configs(broker, *argv: str):
    return tool("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "topics", *argv)


@pytest.mark.spec("CONFIG-3")
def test_alter_and_describe_a_topics_overrides(broker):
    assert (
        tool("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", "configured")[
            0
        ]
        == 0
    )
    code, out, err, _ = configs(
        broker,
        "--entity-name",
        "configured",
        "--alter",
        "--add-config",
        "retention.ms=86400000,cleanup.policy=[compact,delete]",
    )
    assert (code, out, err) == (0, "Completed updating config for topic configured.\n", "")
    code, out, _, _ = configs(broker, "--entity-name", "configured", "--describe")
    assert out.splitlines() == [
        "Dynamic configs for topic configured are:",
        "  retention.ms=86400000 sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}",
        "  cleanup.policy=compact,delete sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete}",
    ]
    assert (
        configs(
            broker, "--entity-name", "configured", "--alter", "--delete-config", "retention.ms"
        )[0]
        == 0
    )
    code, out, _, _ = configs(broker, "--entity-name", "configured", "--describe")
    assert "retention.ms" not in out and "cleanup.policy=compact,delete" in out


@pytest.mark.spec("CONFIG-3", "TOOLS-3")
@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [
        (["--entity-name", "configured2", "--alter", "--add-config", "retention.ms=soon"], 1),
        (["--entity-name", "no-such-topic", "--alter", "--add-config", "retention.ms=1"], 1),
        (["--entity-name", "configured2", "--alter", "--add-config", "no.such.key=1"], 1),
        (["--entity-name", "configured2", "--alter"], 2),
        (["--entity-name", "configured2", "--describe", "--alter"], 2),
        (["--entity-name", "configured2", "--alter", "--add-config", "=x"], 2),
    ],
)
def test_bad_changes_and_flags_are_one_line(broker, argv, exit_code):
    tool("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", "configured2")
    code, _, err, _ = configs(broker, *argv)
    assert code == exit_code, err
    assert_ends_with_one_line("configs", code, err)
