"""The tools reach a SASL_SSL listener with `--command-config FILE` (TOOLS-28, SEC-25),
run as a user runs them: subprocesses against a broker that authorizes with ACLs, where
the SCRAM user `alice` is a super user.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.certs import SCRAM_USERS
from tests.unit.security.conftest import port, start_secure_broker

pytestmark = pytest.mark.timeout(240)
WRONG = "not-alices-password-23"


@pytest.fixture(scope="module")
def acl_broker(pki, tmp_path_factory):
    broker = start_secure_broker(
        pki,
        tmp_path_factory.mktemp("tools") / "data",
        **{
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:alice",
        },
    )
    yield broker
    broker.stop()


def properties(tmp_path, pki, password: str) -> str:
    path = tmp_path / f"client-{password}.properties"
    path.write_text(
        "# a SCRAM user over TLS, by Kafka's client property names\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="alice" password="{password}";\n'
        f"ssl.truststore.location={pki.ca}\n"
    )
    return str(path)


def tool(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_ref.cli", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.spec("TOOLS-28", "SEC-25")
def test_the_tools_work_over_sasl_ssl_with_a_command_config(acl_broker, pki, tmp_path):
    server = f"127.0.0.1:{port(acl_broker, 'SASL_SSL')}"
    config = properties(tmp_path, pki, SCRAM_USERS["alice"])
    common = ("--bootstrap-server", server)

    code, out, err = tool(
        "topics",
        *common,
        "--command-config",
        config,
        "--create",
        "--topic",
        "secured",
        "--partitions",
        "1",
    )
    assert code == 0, err
    code, out, err = tool("topics", *common, "--command-config", config, "--list")
    assert (code, out.split()) == (0, ["secured"]), err

    code, out, err = tool(
        "produce", *common, "--producer.config", config, "--topic", "secured", stdin="one\ntwo\n"
    )
    assert code == 0, err
    code, out, err = tool(
        "consume",
        *common,
        "--consumer.config",
        config,
        "--topic",
        "secured",
        "--from-beginning",
        "--max-messages",
        "2",
    )
    assert (code, out.splitlines()) == (0, ["one", "two"]), err

    code, out, err = tool(
        "acls",
        *common,
        "--command-config",
        config,
        "--add",
        "--allow-principal",
        "User:bob",
        "--operation",
        "Read",
        "--topic",
        "secured",
    )
    assert code == 0, err
    code, out, err = tool("acls", *common, "--command-config", config, "--list")
    assert code == 0 and "User:bob" in out, err

    code, out, err = tool(
        "users",
        *common,
        "--command-config",
        config,
        "--alter",
        "--entity-name",
        "bob",
        "--add-config",
        "SCRAM-SHA-256=[password=bob-secret]",
    )
    assert code == 0, err
    code, out, err = tool(
        "users", *common, "--command-config", config, "--describe", "--entity-name", "bob"
    )
    assert code == 0 and "user-principal 'bob' are SCRAM-SHA-256" in out, err


@pytest.mark.spec("TOOLS-28", "SEC-24")
@pytest.mark.parametrize(
    "argv,stdin",
    [
        (["topics", "--list"], ""),
        (["produce", "--topic", "secured"], "x\n"),
        (["consume", "--topic", "secured", "--from-beginning", "--max-messages", "1"], ""),
        (["acls", "--list"], ""),
        (["users", "--describe"], ""),
    ],
    ids=["topics", "produce", "consume", "acls", "users"],
)
def test_a_wrong_password_ends_the_tool_with_one_line(acl_broker, pki, tmp_path, argv, stdin):
    server = f"127.0.0.1:{port(acl_broker, 'SASL_SSL')}"
    config = properties(tmp_path, pki, WRONG)
    name = argv[0]
    code, out, err = tool(
        *argv[:1], "--bootstrap-server", server, "--command-config", config, *argv[1:], stdin=stdin
    )
    assert code == 1, err
    assert "Traceback" not in err, err
    assert WRONG not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # the refusal is the answer: no "could not be established"
    assert lines[0].startswith(f"kafka-ref {name}: "), err
    assert "'alice' with SCRAM-SHA-512" in lines[0], err


@pytest.mark.spec("TOOLS-28")
def test_a_command_config_that_cannot_work_is_a_usage_error(acl_broker, pki, tmp_path):
    server = f"127.0.0.1:{port(acl_broker, 'SASL_SSL')}"
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    code, _, err = tool(
        "topics", "--bootstrap-server", server, "--command-config", str(bad), "--list"
    )
    assert code == 2 and "Traceback" not in err, err
    assert err.strip() == (
        f"kafka-ref topics: --command-config {bad}: sasl.mechanism=GSSAPI is not supported by "
        "kafka-ref's clients (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
    )
    missing = tmp_path / "missing.properties"
    code, _, err = tool(
        "topics", "--bootstrap-server", server, "--command-config", str(missing), "--list"
    )
    assert code == 2 and "cannot read it: No such file or directory" in err, err


@pytest.mark.spec("TOOLS-28")
def test_users_takes_a_command_config_only_through_a_broker(pki, tmp_path):
    config = properties(tmp_path, pki, SCRAM_USERS["alice"])
    code, _, err = tool(
        "users", "--data-dir", str(tmp_path), "--command-config", config, "--describe"
    )
    assert code == 2, err
    assert err.strip() == (
        "kafka-ref users: --command-config is for --bootstrap-server: it says how to reach a broker"
    )
