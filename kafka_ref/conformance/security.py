"""The secured broker of a target: a listener that requires SASL, the credentials it
accepts, and (maybe) an authorizer, for the authentication and authorization rules.

The suite's shared broker speaks PLAINTEXT with no authorizer, as most rules need. The
security rules need another broker of the target's kind that requires authentication; the
target says how to start one and *declares* what it accepts (`SaslProfile`), since no
request reveals a password (SEC-23):

* `mechanisms`: the SASL mechanisms it enables;
* `users`: user -> password pairs it accepts (may be empty: then only the refusal rules
  apply, and a rule that needs a login is not applicable: `sasl-users`);
* `admin`: a listener whose principal is a super user, where the suite creates topics and
  ACLs, when the broker has an authorizer (`acls`).

kafka-ref's secured broker has a SASL_PLAINTEXT listener with PLAIN and SCRAM (users
written beforehand with `kafka-ref users --data-dir`, as an operator would), ACLs on,
`allow.everyone.if.no.acl.found=false` and a PLAINTEXT admin listener whose
`User:ANONYMOUS` is the super user. Tansu's is `tansu broker --authentication`: SCRAM only,
and no user can be created once authentication is required (its `tansu user create` is
refused like any unauthenticated request), so it declares no users and no authorizer.

Apache Kafka's secured broker is one KRaft node with the same listeners and mechanisms:
its SCRAM users are written at format time (`kafka-storage.sh format --add-scram`), its
PLAIN users in the listener's JAAS config, and its authorizer is KRaft's
`StandardAuthorizer`, the ACLs kept in the metadata log.

`login()` runs a whole SASL exchange over a conformance `Wire` with the client mechanisms
of security/sasl_client.py, and says how it ended.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol.messages import ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_ref.security.plain import AuthenticationFailed
from kafka_ref.security.sasl_client import sasl_client
from kafka_ref.tools.server_process import ServerProcess, free_port

USERS = {"alice": "alice-conformance-secret", "bob": "bob-conformance-secret"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass
class SaslProfile:
    """What a secured broker accepts, as its target declares it."""

    host: str
    port: int  # the listener that requires SASL (SASL_PLAINTEXT)
    mechanisms: tuple[str, ...]
    users: dict[str, str] = field(default_factory=dict)
    admin: tuple[str, int] | None = None  # a super user's listener (PLAINTEXT), with ACLs
    process: ServerProcess | ApacheKafka | None = None
    workdir: str | None = None

    def wire(self) -> Wire:
        return Wire(self.host, self.port)

    def admin_wire(self) -> Wire:
        assert self.admin is not None
        return Wire(*self.admin)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        if self.workdir and not os.environ.get("KAFKA_REF_CONFORMANCE_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class Login:
    """How a SASL exchange ended: the last answer's error code and message, and whether
    the client's own checks (the broker's SCRAM signature) passed."""

    error_code: int
    error_message: str | None = None
    handshake_mechanisms: list[str] = field(default_factory=list)
    client_error: str | None = None  # the broker's answer did not prove it knows the user

    @property
    def ok(self) -> bool:
        return self.error_code == 0 and self.client_error is None


def login(wire: Wire, mechanism: str, user: str, password: str) -> Login:
    """SaslHandshake v1 and SaslAuthenticate v2 rounds until the mechanism is done."""
    handshake = wire.request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism))
    if handshake.error_code:
        return Login(handshake.error_code, None, list(handshake.mechanisms))
    client, challenge = sasl_client(mechanism, user, password), b""
    try:
        while (token := client.evaluate(challenge)) is not None:
            body = SaslAuthenticateRequest(auth_bytes=token)
            answer = wire.request(ApiKey.SASL_AUTHENTICATE, 2, body)
            if answer.error_code:
                return Login(answer.error_code, answer.error_message)
            challenge = bytes(answer.auth_bytes)
    except AuthenticationFailed as err:
        return Login(0, None, client_error=str(err))
    return Login(0)


def kafka_ref_secured(launcher: tuple[str, ...], configs: dict[str, Any]) -> SaslProfile:
    """A kafka-ref broker with a SASL_PLAINTEXT listener and ACLs on (started)."""
    from kafka_ref.security.credentials import CredentialStore
    from kafka_ref.security.scram import HASHES, make_credential

    workdir = tempfile.mkdtemp(prefix="kafka-ref-conformance-secured-")
    data = os.path.join(workdir, "data")
    os.makedirs(data)
    store = CredentialStore(data)  # what `kafka-ref users --data-dir` writes
    for user, password in USERS.items():
        store.alter(user, {m: make_credential(m, password) for m in HASHES})
    admin, sasl = free_port(), free_port()
    secured = {
        **configs,
        **_listener_security(admin, sasl),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    }
    cmd = [sys.executable, *launcher, "--log-level", "WARNING", "broker", "--data-dir", data]
    for key, value in secured.items():
        cmd += ["--config", f"{key}={value}"]
    process = ServerProcess("kafka-ref", cmd, sasl, os.path.join(workdir, "broker.log"))
    process.start()
    return SaslProfile(
        "127.0.0.1",
        sasl,
        MECHANISMS,
        dict(USERS),
        ("127.0.0.1", admin),
        process,
        workdir,
    )


def _listener_security(admin: int, sasl: int) -> dict[str, str]:
    """The configs of a PLAINTEXT admin listener and a SASL_PLAINTEXT one with PLAIN (its
    users in the JAAS config) and SCRAM, as both kafka-ref and Apache Kafka take them."""
    plain = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        + ";"
    )
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{admin},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain,
        "super.users": "User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }


def apache_kafka_secured(configs: dict[str, Any]) -> SaslProfile:
    """A one-node Apache Kafka with a SASL_PLAINTEXT listener and KRaft's StandardAuthorizer
    (started); its SCRAM users written when its storage is formatted."""
    workdir = tempfile.mkdtemp(prefix="apache-kafka-conformance-secured-")
    admin, sasl = free_port(), free_port()
    kafka = ApacheKafka(brokers=1, workdir=workdir, port=admin, scram_users=USERS)
    node = kafka.nodes[0]
    listeners = _listener_security(admin, sasl)
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    kafka.configs.update(
        {
            **configs,
            **listeners,
            "listeners": f"{listeners['listeners']},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": listeners["listeners"],
            "listener.security.protocol.map": (
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
            ),
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": scram,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": scram,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        }
    )
    try:
        kafka.start()
    except RuntimeError:
        kafka.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return SaslProfile(
        "127.0.0.1",
        sasl,
        MECHANISMS,
        dict(USERS),
        ("127.0.0.1", admin),
        kafka,
        workdir,
    )


def tansu_secured(binary: str) -> SaslProfile:
    """`tansu broker --authentication` on memory storage (started); no users can be made."""
    workdir = tempfile.mkdtemp(prefix="tansu-conformance-secured-")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [
        binary,
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
        "--authentication",
    ]
    process = ServerProcess("tansu", cmd, port, os.path.join(workdir, "tansu.log"))
    process.start()
    return SaslProfile(
        "127.0.0.1", port, ("SCRAM-SHA-256", "SCRAM-SHA-512"), process=process, workdir=workdir
    )
