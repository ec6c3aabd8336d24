"""The console tools without a broker: argument errors, properties, the record format."""

from __future__ import annotations

import socket

import pytest

from kafka_ref.cli import UsageError, main
from kafka_ref.client.consumer_fetch import ConsumerRecord
from kafka_ref.record.batch import TimestampType
from kafka_ref.tools.console_consumer import PROPERTIES, Formatter
from kafka_ref.tools.console_producer import parse_properties

pytestmark = pytest.mark.timeout(30)


def dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.spec("CLIENT-19")
@pytest.mark.parametrize(
    "argv",
    [
        ["topics", "--list"],
        ["topics", "--bootstrap-server", "nohost", "--list"],
        ["topics", "--bootstrap-server", "h:1"],
        ["topics", "--bootstrap-server", "h:1", "--create"],
        ["topics", "--bootstrap-server", "h:1", "--create", "--topic", "t", "--partitions", "0"],
        ["topics", "--bootstrap-server", "h:1", "--create", "--topic", "t", "--config", "x"],
        ["topics", "--bootstrap-server", "h:1", "--alter", "--topic", "t"],
        ["produce", "--topic", "t"],
        ["produce", "--bootstrap-server", "h:1"],
        ["produce", "--bootstrap-server", "h:1", "--topic", "t", "--acks", "2"],
        ["produce", "--bootstrap-server", "h:1", "--topic", "t", "--compression-type", "brotli"],
        ["produce", "--bootstrap-server", "h:1", "--topic", "t", "--property", "parse.key=yes"],
        ["produce", "--bootstrap-server", "h:1", "--topic", "t", "--property", "colour=red"],
        ["consume", "--bootstrap-server", "h:1", "--topic", "t", "--offset", "5"],
        [
            "consume",
            "--bootstrap-server",
            "h:1",
            "--topic",
            "t",
            "--partition",
            "0",
            "--offset",
            "5",
            "--from-beginning",
        ],
        [
            "consume",
            "--bootstrap-server",
            "h:1",
            "--topic",
            "t",
            "--partition",
            "0",
            "--offset",
            "soon",
        ],
        ["consume", "--bootstrap-server", "h:1", "--topic", "t", "--max-messages", "0"],
        ["consume", "--bootstrap-server", "h:1", "--topic", "t", "--property", "print.key"],
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith(f"kafka-ref {argv[0]}: ") and "\n" not in err
    assert "Traceback" not in err and captured.out == ""


@pytest.mark.spec("CLIENT-19")
def test_an_unreachable_broker_is_one_line_and_exit_1(capsys):
    argv = ["topics", "--bootstrap-server", dead_address(), "--list", "--timeout-ms", "2000"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("kafka-ref topics: ") and "cannot connect" in err and "\n" not in err


@pytest.mark.spec("CLIENT-19")
def test_properties_override_defaults_and_unknown_ones_are_refused():
    props = parse_properties(["print.key=true", "key.separator=::"], PROPERTIES)
    assert props["print.key"] == "true" and props["key.separator"] == "::"
    assert props["print.offset"] == "false"
    with pytest.raises(UsageError, match="unknown property"):
        parse_properties(["print.colour=true"], PROPERTIES)
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_properties(["print.key"], PROPERTIES)


@pytest.mark.spec("CLIENT-19")
def test_the_formatter_prints_like_kafkas_default_message_formatter():
    record = ConsumerRecord(
        "t",
        2,
        42,
        1_700_000_000_000,
        TimestampType.CREATE_TIME,
        b"user-1",
        b"home",
        (("h", b"1"),),
    )
    default = Formatter(PROPERTIES)
    assert default.format(record) == b"home\n"
    everything = dict(PROPERTIES)
    for flag in ("timestamp", "partition", "offset", "headers", "key"):
        everything[f"print.{flag}"] = "true"
    assert Formatter(everything).format(record) == (
        b"CreateTime:1700000000000\tPartition:2\tOffset:42\th:1\tuser-1\thome\n"
    )
    keyless = record._replace(key=None, timestamp_type=TimestampType.LOG_APPEND_TIME, headers=())
    keyed = {**PROPERTIES, "print.key": "true", "print.timestamp": "true", "key.separator": ":"}
    assert Formatter(keyed).format(keyless) == b"LogAppendTime:1700000000000:null:home\n"
