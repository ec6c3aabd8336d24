"""A real kafka-ref broker for the grader's end-to-end check, in this process: its cleaner
runs every 100 ms (log.cleaner.backoff.ms) and calls the student's rules; what they raise
there fails the test at once (`LabBroker.raise_if_failed`)."""

from __future__ import annotations

import pytest

from kafka_ref.tools.lab_analysis import LabBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("lab08")
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data),
        "log.cleaner.backoff.ms": "100",
    }
    thread = LabBroker(props).start()
    yield thread
    thread.stop()
