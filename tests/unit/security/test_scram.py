"""SCRAM (RFC 5802, RFC 7677) and the credentials it stands on."""

from __future__ import annotations

import base64
import json

import pytest

from kafka_ref.cli import main
from kafka_ref.security import scram
from kafka_ref.security.credentials import CredentialStore
from kafka_ref.security.plain import AuthenticationFailed
from tests.unit.security.conftest import scram_client

# RFC 7677 section 3: user "user", password "pencil".
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_server(password: str = "pencil") -> scram.ScramSaslServer:
    credential = scram.make_credential("SCRAM-SHA-256", password, 4096, SALT)
    return scram.ScramSaslServer(
        "SCRAM-SHA-256",
        lambda user, _m: credential if user == "user" else None,
        nonce=lambda: SERVER_NONCE,
    )


@pytest.mark.spec("SEC-10")
def test_the_rfc_7677_test_vector():
    server = rfc_server()
    assert server.evaluate(CLIENT_FIRST) == SERVER_FIRST
    assert not server.complete
    assert server.evaluate(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete and server.authorization_id == "user"


@pytest.mark.spec("SEC-10")
def test_a_wrong_password_and_an_unknown_user_fail_alike():
    wrong = rfc_server(password="not-pencil")
    wrong.evaluate(CLIENT_FIRST)
    with pytest.raises(AuthenticationFailed) as bad_proof:
        wrong.evaluate(CLIENT_FINAL)
    with pytest.raises(AuthenticationFailed) as unknown:
        rfc_server().evaluate(b"n,,n=nobody,r=abc")
    assert str(bad_proof.value) == str(unknown.value) == scram.invalid_credentials("SCRAM-SHA-256")
    assert "pencil" not in str(bad_proof.value)
    assert not wrong.complete


@pytest.mark.spec("SEC-10")
@pytest.mark.parametrize(
    "final",
    [
        CLIENT_FINAL.replace(b"r=rOpr", b"r=XOpr"),  # the nonce changed
        CLIENT_FINAL.rsplit(b",p=", 1)[0],  # no proof
        CLIENT_FINAL[:-8] + b"AAAAAAA=",  # a proof of the wrong length
        b"\xff\xfe",  # not UTF-8
    ],
)
def test_a_tampered_client_final_fails(final):
    server = rfc_server()
    server.evaluate(CLIENT_FIRST)
    with pytest.raises(AuthenticationFailed):
        server.evaluate(final)
    assert not server.complete


@pytest.mark.spec("SEC-10")
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_client_and_the_server_agree(mechanism):
    credential = scram.make_credential(mechanism, "s3cret,=x", 4096)
    server = scram.ScramSaslServer(mechanism, lambda u, m: credential if u == "a,b" else None)
    first, final = scram_client("a=2Cb", "s3cret,=x", mechanism)  # "a,b" escaped
    client_final, expected = final(server.evaluate(first))
    assert server.evaluate(client_final) == expected
    assert server.authorization_id == "a,b"
    extension = scram.ScramSaslServer(mechanism, lambda u, m: credential)
    with pytest.raises(AuthenticationFailed, match="extensions"):
        extension.evaluate(b"n,,n=a=2Cb,r=abc,tokenauth=true")


@pytest.mark.spec("SEC-11")
def test_credentials_are_salted_hashes_in_kafkas_form(tmp_path):
    store = CredentialStore(tmp_path)
    store.alter("alice", {"SCRAM-SHA-256": scram.make_credential("SCRAM-SHA-256", "pw-42", 8192)})
    text = (tmp_path / "__scram_credentials.json").read_text()
    assert "pw-42" not in text
    stored = json.loads(text)["alice"]["SCRAM-SHA-256"]
    assert (
        stored.startswith("salt=")
        and ",stored_key=" in stored
        and stored.endswith(",iterations=8192")
    )
    credential = store.lookup("alice", "SCRAM-SHA-256")
    assert scram.ScramCredential.from_string(stored) == credential
    again = scram.make_credential("SCRAM-SHA-256", "pw-42", 8192)
    assert again.salt != credential.salt and again.stored_key != credential.stored_key
    with pytest.raises(ValueError):
        scram.make_credential("SCRAM-SHA-256", "pw", 1000)  # below Kafka's 4096


@pytest.mark.spec("SEC-11")
def test_the_users_command_adds_describes_and_deletes(tmp_path, capsys):
    base = ["users", "--data-dir", str(tmp_path)]
    add = "SCRAM-SHA-256=[iterations=8192,password=very-secret],SCRAM-SHA-512=[password=x]"
    assert main([*base, "--alter", "--add-config", add, "--entity-name", "bob"]) == 0
    assert "very-secret" not in (tmp_path / "__scram_credentials.json").read_text()
    store = CredentialStore(tmp_path)
    assert store.lookup("bob", "SCRAM-SHA-256").iterations == 8192
    assert main([*base, "--describe"]) == 0
    out = capsys.readouterr().out
    listed = "SCRAM-SHA-256=iterations=8192,SCRAM-SHA-512=iterations=4096"
    assert f"SCRAM credential configs for user-principal 'bob' are {listed}" in out
    assert "very-secret" not in out
    assert main([*base, "--alter", "--delete-config", "SCRAM-SHA-512", "--entity-name", "bob"]) == 0
    assert store.lookup("bob", "SCRAM-SHA-512") is None  # read again: the file changed
    bad = [*base, "--alter", "--add-config", "SCRAM-SHA-1=[password=p]", "--entity-name", "b"]
    assert main(bad) == 2
    short = [
        *base,
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=5,password=hunter2]",
        "--entity-name",
        "b",
    ]
    assert main(short) == 2
    assert "hunter2" not in capsys.readouterr().err
