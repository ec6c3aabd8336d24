"""The conformance suite's pytest plugin lives in kafka_ref.conformance.plugin (reusable).

Importing its hooks and fixtures here makes them active for this directory: `--target`,
`--capabilities`, `--conformance-report`, `--spec-filter`, and the `target` and `wire`
fixtures. See docs/conformance.md.
"""

import pytest

from kafka_ref.conformance.groups import coordinator
from kafka_ref.conformance.plugin import (  # noqa: F401  (pytest finds them by name)
    _configured_brokers,
    _secured_broker,
    _suite_cluster,
    brokers,
    cluster,
    configured_broker,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
    secured,
    target,
    wire,
)
from kafka_ref.conformance.wire import Wire


# Fixtures shared by the group tests (test_groups*.py, test_offsets.py).
@pytest.fixture
def group(target):  # noqa: F811
    target.require("groups")
    return target.group_name()


@pytest.fixture
def connect(target, group):  # noqa: F811
    """connect() -> a new connection to the group's coordinator (closed at teardown)."""
    opened: list[Wire] = []
    with target.wire() as w:
        host, port = coordinator(w, group)
    if (host, port) != (target.host, target.port) and host in ("localhost", "127.0.0.1"):
        host = target.host  # an advertised loopback name for the same machine

    def make() -> Wire:
        opened.append(Wire(host, port))
        return opened[-1]

    yield make
    for w in opened:
        w.close()


@pytest.fixture
def make_topic(target, wire):  # noqa: F811
    """make_topic(hint, partitions) -> the name of a new topic (commits need one)."""

    def make(hint: str, partitions: int = 2) -> str:
        target.require("create-topics")
        name = target.topic_name(hint)
        assert wire.create_topic(name, partitions) == 0
        return name

    return make
