"""Client quotas on one broker, over the wire: the quota APIs (QUOTA-9, QUOTA-10), where
quotas are kept (QUOTA-4), what is counted (QUOTA-7) and how a client is throttled
(QUOTA-8), and their metrics (QUOTA-12)."""

from __future__ import annotations

import json
import time

import pytest

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.admin_quotas import ANY, DEFAULT_NAME, EXACT
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import ApiKey, MetadataRequest
from kafka_ref.quota.entity import DEFAULT, QuotaEntity
from kafka_ref.quota.store import QUOTAS_FILE
from tests.unit.security.authz_fixtures import admin_of as admin_of_acl
from tests.unit.security.authz_fixtures import ports, start_acl_broker, user_wire
from tests.unit.server.conftest import Wire, batch, fetch_body, produce_body
from tests.unit.server.test_metrics import scrape

pytestmark = pytest.mark.timeout(120)
MIB = 1 << 20


def admin_of(broker) -> Admin:
    return Admin(broker.bootstrap)


def quota(broker, entity: QuotaEntity, **values: float) -> None:
    with admin_of(broker) as admin:
        admin.alter_client_quotas(entity, values)


@pytest.mark.spec("QUOTA-10")
def test_alter_sets_and_removes_keys_of_an_entity(broker):
    alice_app = QuotaEntity("alice", "app")
    with admin_of(broker) as admin:
        admin.alter_client_quotas(alice_app, {"producer_byte_rate": 1024, "request_percentage": 50})
        admin.alter_client_quotas(alice_app, {"consumer_byte_rate": 2048}, ["request_percentage"])
        assert admin.describe_client_quotas() == {
            alice_app: {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
        }
        admin.alter_client_quotas(alice_app, {"producer_byte_rate": 1}, validate_only=True)
        assert admin.describe_client_quotas()[alice_app]["producer_byte_rate"] == 1024.0
        admin.alter_client_quotas(alice_app, remove=["producer_byte_rate", "consumer_byte_rate"])
        assert admin.describe_client_quotas() == {}


@pytest.mark.spec("QUOTA-10")
@pytest.mark.parametrize(
    ("entity", "ops"),
    [
        ([("user", "a"), ("user", "b")], [("producer_byte_rate", 1.0, False)]),
        ([("ip", "1.2.3.4")], [("producer_byte_rate", 1.0, False)]),
        ([], [("producer_byte_rate", 1.0, False)]),
        ([("client-id", "c")], [("retention.ms", 1.0, False)]),
        ([("client-id", "c")], [("producer_byte_rate", 0.5, False)]),
        ([("client-id", "c")], [("request_percentage", -1.0, False)]),
        (
            [("client-id", "c")],
            [("producer_byte_rate", 1.0, False), ("producer_byte_rate", 0.0, True)],
        ),
    ],
)
def test_a_bad_entry_is_invalid_request_and_changes_nothing(broker, entity, ops):
    from kafka_ref.protocol.messages import AlterClientQuotasRequest as R

    good = R.EntryData(
        entity=[R.EntityData(entity_type="client-id", entity_name="ok")],
        ops=[R.OpData(key="producer_byte_rate", value=10.0, remove=False)],
    )
    bad = R.EntryData(
        entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[R.OpData(key=k, value=v, remove=r) for k, v, r in ops],
    )
    with Wire(broker.port) as wire:
        body = R(entries=[bad, good], validate_only=False)
        response = wire.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, body)
    assert [e.error_code for e in response.entries] == [ErrorCode.INVALID_REQUEST, 0]
    assert response.entries[0].error_message
    with admin_of(broker) as admin:
        assert admin.describe_client_quotas() == {
            QuotaEntity(None, "ok"): {"producer_byte_rate": 10.0}
        }


@pytest.mark.spec("QUOTA-9")
def test_describe_filters_by_exact_default_and_any_name_strict_or_not(broker):
    entities = [
        QuotaEntity("alice", None),
        QuotaEntity(DEFAULT, None),
        QuotaEntity("alice", "app"),
        QuotaEntity(None, "app"),
        QuotaEntity(DEFAULT, DEFAULT),
    ]
    with admin_of(broker) as admin:
        for rank, entity in enumerate(entities, 1):
            admin.alter_client_quotas(entity, {"producer_byte_rate": rank})

        def described(components, strict=False):
            return set(admin.describe_client_quotas(components, strict=strict))

        assert described([("user", EXACT, "alice")]) == {entities[0], entities[2]}
        assert described([("user", EXACT, "alice")], strict=True) == {entities[0]}
        assert described([("user", DEFAULT_NAME, None)]) == {entities[1], entities[4]}
        assert described([("user", ANY, None)], strict=True) == {entities[0], entities[1]}
        assert described([("client-id", ANY, None)]) == {entities[2], entities[3], entities[4]}
        assert described([("user", ANY, None), ("client-id", EXACT, "app")]) == {entities[2]}
        assert described([]) == set(entities)
        assert described([], strict=True) == set()
        for bad in (
            [("ip", ANY, None)],
            [("user", EXACT, None)],
            [("user", ANY, None), ("user", ANY, None)],
        ):
            with pytest.raises(KafkaError) as refused:
                admin.describe_client_quotas(bad)
            assert refused.value.code == ErrorCode.INVALID_REQUEST


@pytest.mark.spec("QUOTA-4")
def test_quotas_are_kept_in_the_metadata_directory_across_a_restart(make_broker, tmp_path):
    data = tmp_path / "kept"
    broker = make_broker(data)
    quota(broker, QuotaEntity("a b", "app"), producer_byte_rate=1048576, request_percentage=12.5)
    stored = json.loads((data / QUOTAS_FILE).read_text())
    assert stored == {
        "users/a%20b/clients/app": {"producer_byte_rate": "1048576", "request_percentage": "12.5"}
    }
    broker.stop()
    again = make_broker(data)
    with admin_of(again) as admin:
        assert admin.describe_client_quotas() == {
            QuotaEntity("a b", "app"): {"producer_byte_rate": 1048576.0, "request_percentage": 12.5}
        }
    assert again.call(lambda: again.broker.apis.quotas.produce.quota("a b", "app")) == 1048576


def _topic(broker, name: str) -> None:
    with admin_of(broker) as admin:
        admin.create_topics([NewTopic(name, 1, 1)])


@pytest.mark.spec("QUOTA-1")
def test_a_user_quota_names_the_authenticated_principal(tmp_path):
    broker = start_acl_broker(tmp_path / "sasl", **{"authorizer.class.name": ""})
    try:
        with admin_of_acl(broker) as admin:
            admin.create_topics([NewTopic("users", 1, 1)])
            admin.alter_client_quotas(QuotaEntity("alice", None), {"producer_byte_rate": 10_000})
        records = produce_body("users", 0, batch(1, value_size=150_000))
        alice = user_wire(broker, "alice")  # SASL PLAIN: User:alice
        anonymous = Wire(ports(broker)["PLAINTEXT"])  # User:ANONYMOUS, same client id
        for wire, throttled in (
            (anonymous, False),
            (user_wire(broker, "bob"), False),
            (alice, True),
        ):
            wire.send(ApiKey.PRODUCE, 7, records, client_id="same")
            assert (wire.receive().throttle_time_ms > 0) == throttled
            wire.close()
    finally:
        broker.stop()


@pytest.mark.spec("QUOTA-5")
@pytest.mark.parametrize(("windows", "throttled"), [(11, False), (3, True)])
def test_the_window_is_quota_window_num_samples(make_broker, windows, throttled):
    broker = make_broker(props={"quota.window.num": windows, "quota.window.size.seconds": 1})
    _topic(broker, "windowed")
    quota(broker, QuotaEntity(None, "w"), producer_byte_rate=10_000)  # burst: 10 kB per window
    with Wire(broker.port) as wire:  # 25 kB: within 10 windows' burst, not within 2 windows'
        wire.send(
            ApiKey.PRODUCE,
            7,
            produce_body("windowed", 0, batch(1, value_size=25_000)),
            client_id="w",
        )
        assert (wire.receive().throttle_time_ms > 0) == throttled


@pytest.mark.spec("QUOTA-8")
def test_a_throttled_produce_is_answered_at_once_and_its_connection_muted(broker):
    _topic(broker, "muted")
    quota(broker, QuotaEntity(None, "slow"), producer_byte_rate=10_000)  # 100 kB per burst
    records = batch(1, value_size=150_000)  # one request: 1.5 x the burst
    with Wire(broker.port) as slow, Wire(broker.port) as other:
        start = time.monotonic()
        slow.send(ApiKey.PRODUCE, 7, produce_body("muted", 0, records), client_id="slow")
        first = slow.receive()
        answered = time.monotonic() - start
        throttle_ms = first.throttle_time_ms  # (150 kB - 100 kB) / 10 kB/s = 5 s, about
        assert 4000 <= throttle_ms <= 6000 and answered < throttle_ms / 2000
        assert first.responses[0].partition_responses[0].error_code == 0  # appended
        slow.send(
            ApiKey.METADATA,
            5,
            MetadataRequest(topics=[], allow_auto_topic_creation=False),
            client_id="slow",
        )
        assert other.metadata([]).throttle_time_ms == 0  # another client: served at once
        assert time.monotonic() - start < throttle_ms / 2000
        slow.receive()  # only once the throttle is over
        assert time.monotonic() - start >= throttle_ms / 1000 - 0.05


@pytest.mark.spec("QUOTA-8")
def test_requests_sent_before_the_throttle_wait_for_its_end(broker):
    _topic(broker, "held")
    quota(broker, QuotaEntity(None, "eager"), producer_byte_rate=1000)  # 10 kB per burst
    metadata = MetadataRequest(topics=[], allow_auto_topic_creation=False)
    with Wire(broker.port) as wire:  # pipelined, small: both read before either is handled
        start = time.monotonic()
        produce = produce_body("held", 0, batch(1, value_size=15_000))
        first = wire.frame(ApiKey.PRODUCE, 7, produce, client_id="eager")
        wire.send_raw(first + wire.frame(ApiKey.METADATA, 5, metadata, client_id="eager"))
        throttle_ms = wire.receive().throttle_time_ms
        assert throttle_ms > 1000 and time.monotonic() - start < throttle_ms / 2000
        wire.receive()
        assert time.monotonic() - start >= throttle_ms / 1000 - 0.05


@pytest.mark.spec("QUOTA-7")
def test_an_acks_0_produce_counts_and_mutes_without_a_response(broker):
    _topic(broker, "fire-and-forget")
    quota(broker, QuotaEntity(None, "c"), producer_byte_rate=10_000)  # the wire's acks=0 id
    with Wire(broker.port) as wire:
        start = time.monotonic()
        assert wire.produce("fire-and-forget", 0, batch(1, value_size=150_000), acks=0) is None
        wire.send(
            ApiKey.METADATA,
            5,
            MetadataRequest(topics=[], allow_auto_topic_creation=False),
            client_id="c",
        )
        wire.receive()  # about 5 s later: (150 kB / 10 s - 10 kB/s) / 10 kB/s * 10 s
        assert time.monotonic() - start >= 4.0
    produced = broker.call(
        lambda: broker.broker.apis.quotas.produce.sensors[("", "c")].rate.total(
            broker.broker.clock.milliseconds()
        )
    )
    assert produced > 150_000


@pytest.mark.spec("QUOTA-7")
def test_a_throttled_fetch_is_answered_empty_and_not_counted(broker):
    _topic(broker, "fetched")
    with Wire(broker.port) as wire:
        for _ in range(3):
            wire.produce("fetched", 0, batch(1, value_size=60_000))
    quota(broker, QuotaEntity(None, "reader"), consumer_byte_rate=10_000)  # 100 kB per burst
    with Wire(broker.port) as reader:

        def fetch(offset: int):
            reader.send(
                ApiKey.FETCH,
                10,
                fetch_body([("fetched", 0, offset)], max_wait_ms=0),
                client_id="reader",
            )
            return reader.receive()

        first = fetch(0)  # max_bytes capped to the burst: one 60 kB batch (not three)
        assert first.throttle_time_ms == 0
        assert len(first.responses[0].partitions[0].records) < 100_000
        second = fetch(1)  # 120 kB measured > 100 kB: throttled, answered empty
        assert second.throttle_time_ms > 0 and second.responses == []
        fetched = broker.call(
            lambda: broker.broker.apis.quotas.fetch.sensors[("", "reader")].rate.total(
                broker.broker.clock.milliseconds()
            )
        )
        assert fetched < 100_000  # the empty answer's bytes were taken back


@pytest.mark.spec("QUOTA-7")
def test_the_request_quota_counts_every_api_and_caps_its_throttle(broker):
    quota(broker, QuotaEntity(None, "busy"), request_percentage=0.001)  # 10 us per second
    with Wire(broker.port) as wire:
        throttles = []
        for _ in range(1000):
            wire.send(
                ApiKey.METADATA,
                5,
                MetadataRequest(topics=None, allow_auto_topic_creation=False),
                client_id="busy",
            )
            throttles.append(wire.receive().throttle_time_ms)
            if throttles[-1]:
                break
    assert 0 < throttles[-1] <= 1000  # at most one quota window


@pytest.mark.spec("QUOTA-12")
def test_throttle_time_and_rate_are_metrics_per_client(make_broker):
    broker = make_broker(props={"metrics.listener": "http://127.0.0.1:0"})
    _topic(broker, "metered")
    quota(broker, QuotaEntity(None, "slow"), producer_byte_rate=10_000)
    with Wire(broker.port) as wire:
        wire.send(
            ApiKey.PRODUCE,
            7,
            produce_body("metered", 0, batch(1, value_size=150_000)),
            client_id="slow",
        )
        throttle_ms = wire.receive().throttle_time_ms
    metrics = scrape(broker.broker.metrics.port)
    labels = (("clientId", "slow"), ("resource", "Produce"), ("user", ""))
    assert metrics[("kafka_server_quota_throttle_time", labels)] == throttle_ms > 0
    assert metrics[("kafka_server_quota_byte_rate", labels)] > 10_000
