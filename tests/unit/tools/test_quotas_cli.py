"""`kafka-ref configs --entity-type users|clients`: client quotas as kafka-configs.sh sets
and shows them (QUOTA-11)."""

from __future__ import annotations

import pytest

from tests.unit.tools.test_tools_at_the_edges import assert_ends_with_one_line, tool

pytestmark = pytest.mark.timeout(180)


def configs(broker, *argv: str):
    return tool("configs", "--bootstrap-server", broker.bootstrap, *argv)


@pytest.mark.spec("QUOTA-11")
def test_set_show_and_remove_quotas_of_users_clients_and_defaults(broker):
    code, out, err, _ = configs(
        broker,
        "--alter",
        "--add-config",
        "producer_byte_rate=1048576",
        "--entity-type",
        "clients",
        "--entity-name",
        "app",
    )
    assert (code, out, err) == (0, "Completed updating config for client app.\n", "")
    code, out, _, _ = configs(
        broker,
        "--alter",
        "--add-config",
        "consumer_byte_rate=2097152,request_percentage=50",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-default",
    )
    assert (code, out) == (0, "Completed updating config for user alice.\n")
    code, out, _, _ = configs(
        broker,
        "--alter",
        "--add-config",
        "producer_byte_rate=1024",
        "--entity-type",
        "users",
        "--entity-default",
    )
    assert (code, out) == (0, "Completed updating default config for users in the cluster.\n")

    code, out, _, _ = configs(broker, "--describe", "--entity-type", "clients")
    assert out == "Quota configs for client-id 'app' are producer_byte_rate=1048576.0\n"
    code, out, _, _ = configs(broker, "--describe", "--entity-type", "users")
    assert out == "Quota configs for the default user-principal are producer_byte_rate=1024.0\n"
    code, out, _, _ = configs(
        broker,
        "--describe",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
    )
    assert out == (
        "Quota configs for user-principal 'alice', the default client-id are "
        "consumer_byte_rate=2097152.0, request_percentage=50.0\n"
    )
    assert (
        configs(
            broker,
            "--alter",
            "--delete-config",
            "producer_byte_rate",
            "--entity-type",
            "clients",
            "--entity-name",
            "app",
        )[0]
        == 0
    )
    assert configs(broker, "--describe", "--entity-type", "clients")[1] == ""


@pytest.mark.spec("QUOTA-11")
@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [
        (
            [
                "--alter",
                "--add-config",
                "producer_byte_rate=0.5",
                "--entity-type",
                "clients",
                "--entity-name",
                "c",
            ],
            1,
        ),
        (
            [
                "--alter",
                "--add-config",
                "no_such_quota=1",
                "--entity-type",
                "users",
                "--entity-name",
                "u",
            ],
            1,
        ),
        (
            [
                "--alter",
                "--add-config",
                "producer_byte_rate=fast",
                "--entity-type",
                "clients",
                "--entity-name",
                "c",
            ],
            2,
        ),
        (["--alter", "--add-config", "producer_byte_rate=1", "--entity-type", "clients"], 2),
        (
            [
                "--alter",
                "--add-config",
                "producer_byte_rate=1",
                "--entity-type",
                "clients",
                "--entity-type",
                "clients",
                "--entity-name",
                "a",
                "--entity-name",
                "b",
            ],
            2,
        ),
    ],
)
def test_bad_quota_changes_are_one_line(broker, argv, exit_code):
    code, _, err, _ = configs(broker, *argv)
    assert code == exit_code, err
    assert_ends_with_one_line("configs", code, err)
