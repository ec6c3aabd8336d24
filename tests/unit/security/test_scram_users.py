"""SCRAM users over the wire (SEC-22): AlterUserScramCredentials and
DescribeUserScramCredentials on a real broker, with our admin client and `kafka-ref users
--bootstrap-server`, checked by authenticating with the new passwords."""

from __future__ import annotations

import json
import logging

import pytest

from kafka_ref.cli import main
from kafka_ref.client.admin import Admin
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import AlterUserScramCredentialsRequest, ApiKey
from kafka_ref.security.acls import AclOperation, ResourceType
from tests.unit.security.authz_fixtures import acl, admin_of, start_acl_broker, user_wire
from tests.unit.security.conftest import SecureWire, port

pytestmark = pytest.mark.timeout(120)
SECRET = "s3cret-never-shown"


def admin(broker) -> Admin:
    return Admin(f"127.0.0.1:{port(broker, 'PLAINTEXT')}")


def scram_ok(broker, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> bool:
    with SecureWire(port(broker, "SASL_PLAINTEXT")) as wire:
        return wire.scram(user, password, mechanism).error_code == 0


@pytest.mark.spec("SEC-22")
def test_credentials_added_over_the_wire_authenticate_and_are_stored_hashed(secure_broker, caplog):
    caplog.set_level(logging.DEBUG)
    with admin(secure_broker) as a:
        a.alter_user_scram_credentials(
            {"carol": {"SCRAM-SHA-256": (SECRET, 8192), "SCRAM-SHA-512": (SECRET, 4096)}}
        )
        assert a.describe_user_scram_credentials(["carol"]) == {
            "carol": {"SCRAM-SHA-256": 8192, "SCRAM-SHA-512": 4096}
        }
        assert "carol" in a.describe_user_scram_credentials()  # all users
        assert scram_ok(secure_broker, "carol", SECRET)
        assert scram_ok(secure_broker, "carol", SECRET, "SCRAM-SHA-512")
        assert not scram_ok(secure_broker, "carol", "wrong")
        a.alter_user_scram_credentials(deletions={"carol": ["SCRAM-SHA-256"]})
        assert not scram_ok(secure_broker, "carol", SECRET)  # in force at once
        assert a.describe_user_scram_credentials(["carol"]) == {"carol": {"SCRAM-SHA-512": 4096}}
    with open(f"{secure_broker.broker.config.data_dir}/__scram_credentials.json") as f:
        stored = f.read()
    assert SECRET not in stored and "stored_key=" in json.loads(stored)["carol"]["SCRAM-SHA-512"]
    assert SECRET not in caplog.text


@pytest.mark.spec("SEC-22")
def test_each_user_is_refused_alone_with_kafkas_errors(secure_broker):
    request = AlterUserScramCredentialsRequest
    up = request.ScramCredentialUpsertion
    body = request(
        deletions=[request.ScramCredentialDeletion(name="nobody", mechanism=1)],
        upsertions=[
            up(name="dave", mechanism=1, iterations=4096, salt=b"s", salted_password=b"p" * 32),
            up(name="erin", mechanism=7, iterations=4096, salt=b"s", salted_password=b"p"),
            up(name="frank", mechanism=1, iterations=100, salt=b"s", salted_password=b"p"),
            up(name="gina", mechanism=1, iterations=4096, salt=b"", salted_password=b"p"),
            up(name="hal", mechanism=2, iterations=4096, salt=b"s", salted_password=b"p"),
            up(name="hal", mechanism=2, iterations=8192, salt=b"s", salted_password=b"p"),
            up(name="", mechanism=1, iterations=4096, salt=b"s", salted_password=b"p"),
        ],
    )
    with SecureWire(port(secure_broker, "PLAINTEXT")) as wire:
        response = wire.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)
        assert {r.user: r.error_code for r in response.results} == {
            "nobody": ErrorCode.RESOURCE_NOT_FOUND,
            "dave": ErrorCode.NO_ERROR,
            "erin": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            "frank": ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "gina": ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "hal": ErrorCode.DUPLICATE_RESOURCE,
            "": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        }
    with admin(secure_broker) as a:
        assert set(a.describe_user_scram_credentials()) >= {"dave"}
        assert not {"erin", "frank", "gina", "hal"} & set(a.describe_user_scram_credentials())
        with pytest.raises(KafkaError) as refused:
            a.describe_user_scram_credentials(["nobody"])
        assert refused.value.code == ErrorCode.RESOURCE_NOT_FOUND


@pytest.mark.spec("SEC-22")
def test_changing_users_needs_alter_on_the_cluster(tmp_path):
    broker = start_acl_broker(tmp_path / "data")
    try:
        alice = user_wire(broker)
        body = AlterUserScramCredentialsRequest(
            deletions=[],
            upsertions=[
                AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
                    name="mallory", mechanism=1, iterations=4096, salt=b"s", salted_password=b"p"
                )
            ],
        )
        answer = alice.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)
        assert answer.results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        with admin_of(broker) as a:
            assert "mallory" not in a.describe_user_scram_credentials()
            a.create_acls([acl(ResourceType.CLUSTER, "kafka-cluster", AclOperation.ALTER)])
        answer = alice.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)
        assert answer.results[0].error_code == 0
        alice.close()
    finally:
        broker.stop()


@pytest.mark.spec("SEC-22")
def test_the_users_command_goes_through_the_broker(secure_broker, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    base = ["users", "--bootstrap-server", f"127.0.0.1:{port(secure_broker, 'PLAINTEXT')}"]
    add = f"SCRAM-SHA-256=[iterations=8192,password={SECRET}],SCRAM-SHA-512=[password=x-y]"
    assert main([*base, "--alter", "--add-config", add, "--entity-name", "ivy"]) == 0
    assert scram_ok(secure_broker, "ivy", SECRET)
    assert main([*base, "--describe", "--entity-name", "ivy"]) == 0
    out = capsys.readouterr().out
    listed = "SCRAM-SHA-256=iterations=8192,SCRAM-SHA-512=iterations=4096"
    assert f"SCRAM credential configs for user-principal 'ivy' are {listed}" in out
    assert main([*base, "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-name", "ivy"]) == 0
    assert not scram_ok(secure_broker, "ivy", SECRET)
    again = [*base, "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-name", "ivy"]
    assert main(again) == 1  # RESOURCE_NOT_FOUND, said in one line
    short = [
        *base,
        "--alter",
        "--add-config",
        f"SCRAM-SHA-256=[iterations=5,password={SECRET}]",
        "--entity-name",
        "ivy",
    ]
    assert main(short) == 2
    captured = capsys.readouterr()
    assert "does not exist" in captured.err
    assert SECRET not in captured.out + captured.err + caplog.text


@pytest.mark.spec("SEC-22")
def test_configs_for_users_takes_scram_credentials_as_kafka_configs_does(secure_broker, capsys):
    """`kafka-configs.sh --entity-type users --add-config 'SCRAM-SHA-256=[...]'` habits: the
    credentials reach the broker (AlterUserScramCredentials), quotas and SCRAM never mixed."""
    base = ["configs", "--bootstrap-server", f"127.0.0.1:{port(secure_broker, 'PLAINTEXT')}"]
    user = ["--entity-type", "users", "--entity-name", "jay", "--alter"]
    assert main([*base, *user, "--add-config", f"SCRAM-SHA-512=[password={SECRET}]"]) == 0
    assert scram_ok(secure_broker, "jay", SECRET, mechanism="SCRAM-SHA-512")
    mixed = f"SCRAM-SHA-256=[password={SECRET}],producer_byte_rate=1024"
    assert main([*base, *user, "--add-config", mixed]) == 2
    assert main([*base, *user, "--delete-config", "SCRAM-SHA-512"]) == 0
    assert not scram_ok(secure_broker, "jay", SECRET, mechanism="SCRAM-SHA-512")
    assert SECRET not in "".join(capsys.readouterr())
