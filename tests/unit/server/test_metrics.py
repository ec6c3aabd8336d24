"""The broker's metrics over HTTP, after traffic from real clients (spec/metrics.md)."""

from __future__ import annotations

import urllib.request

import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from kafka_ref.cli import main
from kafka_ref.conformance.cluster import wait_for
from kafka_ref.server.kafka_config import ConfigError, KafkaConfig

RECORDS, VALUE = 25, b"v" * 200


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Every sample: (name, sorted labels) -> value."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


@pytest.fixture
def metered(make_broker):
    return make_broker(props={"metrics.listener": "http://127.0.0.1:0"})


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for _ in range(RECORDS):
        producer.produce(topic, VALUE)
    assert producer.flush(15) == 0


def consume_all(bootstrap: str, topic: str, commit: bool = False) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "g",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got = 0

    def poll() -> bool:
        nonlocal got
        message = consumer.poll(0.5)
        got += message is not None and message.error() is None
        return got >= RECORDS

    try:
        wait_for(poll, timeout=20, what=f"{RECORDS} records")
        if commit:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()


@pytest.mark.spec("MET-1", "MET-6")
def test_topic_counts_match_the_traffic_and_the_log(metered):
    produce(metered.bootstrap, "metered")
    consume_all(metered.bootstrap, "metered")
    port, topic = metered.broker.metrics.port, (("topic", "metered"),)
    m = wait_for(
        lambda: (
            (s := scrape(port))[("kafka_server_brokertopicmetrics_bytesout_total", topic)]
            == s[("kafka_server_brokertopicmetrics_bytesin_total", topic)]
            and s
        ),
        timeout=10,
        what="every byte in to have gone out",
    )
    assert m[("kafka_server_brokertopicmetrics_messagesin_total", topic)] == RECORDS
    size = m[("kafka_log_log_size", (("partition", "0"), *topic))]
    assert m[("kafka_server_brokertopicmetrics_bytesin_total", topic)] == size > RECORDS * 200
    assert m[("kafka_log_log_logendoffset", (("partition", "0"), *topic))] == RECORDS
    for meter in ("messagesin", "bytesin", "totalproducerequests"):  # all topics >= one topic
        name = f"kafka_server_brokertopicmetrics_{meter}_total"
        assert m[(name, ())] >= m[(name, topic)] > 0
    assert m[("kafka_server_brokertopicmetrics_failedproducerequests_total", topic)] == 0
    assert m[("kafka_server_brokertopicmetrics_totalfetchrequests_total", topic)] >= 1


@pytest.mark.spec("MET-2")
def test_requests_are_counted_and_timed_by_type(metered):
    produce(metered.bootstrap, "timed")
    consume_all(metered.bootstrap, "timed")
    m = scrape(metered.broker.metrics.port)

    def count(name: str) -> float:
        return sum(
            v
            for (n, labels), v in m.items()
            if n == "kafka_network_requestmetrics_requests_total"
            and dict(labels)["request"] == name
        )

    assert count("Produce") >= 1 and count("Fetch") >= 1
    assert count("FetchConsumer") == count("Fetch") and count("FetchFollower") == 0
    for stage in (
        "totaltimems",
        "localtimems",
        "requestqueuetimems",
        "remotetimems",
        "responsequeuetimems",
        "responsesendtimems",
    ):
        name = f"kafka_network_requestmetrics_{stage}_count"
        assert m[(name, (("request", "Produce"),))] == count("Produce")
    total = m[("kafka_network_requestmetrics_totaltimems_sum", (("request", "Produce"),))]
    local = m[("kafka_network_requestmetrics_localtimems_sum", (("request", "Produce"),))]
    assert total >= local > 0


@pytest.mark.spec("MET-7")
@pytest.mark.parametrize(
    "value",
    [
        "127.0.0.1:9404",
        "https://127.0.0.1:9404",
        "http://127.0.0.1",
        "http://:9404",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:port",
        "http://127.0.0.1:9404/metrics",
    ],
)
def test_a_bad_metrics_listener_is_a_config_error(value, tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"metrics\.listener"):
        KafkaConfig.from_props({"log.dirs": str(tmp_path), "metrics.listener": value})
    assert main(["broker", "--data-dir", str(tmp_path), "--metrics", "127.0.0.1"]) == 2
    err = capsys.readouterr().err
    assert "metrics.listener 'http://127.0.0.1' is not http://HOST:PORT" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.spec("MET-7")
def test_metrics_are_served_only_when_asked(make_broker, metered):
    assert make_broker().broker.metrics is None
    m = scrape(metered.broker.metrics.port)
    assert (
        m[("kafka_server_socket_server_metrics_connection_count", (("listener", "PLAINTEXT"),))]
        == 0
    )
    assert 0 <= m[("kafka_network_socketserver_networkprocessoravgidlepercent", ())] <= 1


@pytest.mark.spec("MET-5")
def test_the_coordinators_report_groups_and_commits(metered):
    produce(metered.bootstrap, "grouped")
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    assert scrape(metered.broker.metrics.port)[(prefix + "numgroups", ())] == 0
    consume_all(metered.bootstrap, "grouped", commit=True)  # group "g" commits, then leaves
    m = scrape(metered.broker.metrics.port)
    assert m[(prefix + "numgroups", ())] == m[(prefix + "numgroupsempty", ())] == 1
    assert m[(prefix + "numgroupsstable", ())] == 0
    assert m[(prefix + "numoffsets", ())] == 1  # one partition's offset
    assert m[("kafka_server_group_coordinator_metrics_offset_commit_count", ())] == 1
    assert m[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 1


@pytest.mark.spec("MET-6")
def test_log_flushes_are_timed(make_broker):
    broker = make_broker(
        props={"metrics.listener": "http://127.0.0.1:0", "log.flush.interval.messages": 1}
    )
    name = ("kafka_log_logflushstats_logflushrateandtimems_count", ())
    assert scrape(broker.broker.metrics.port)[name] == 0
    produce(broker.bootstrap, "flushed")  # every append is flushed at once
    assert scrape(broker.broker.metrics.port)[name] >= 1
