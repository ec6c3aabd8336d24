"""Differential tests: Apache Kafka and kafka-ref, the same request sequences, the same answers.

hypothesis draws sequences of requests (kafka_ref/conformance/differential.py: topics created,
grown and deleted; batches of every shape, well formed or broken; fetches, offset lookups and
record deletions; idempotent and transactional producers; a group member and its commits).
Each sequence runs on a one-node Apache Kafka and on a kafka-ref broker, each on names of its
own, with the same API versions, drawn from those both serve; the answers, in their normal
form, must agree step by step (DIFF-1, DIFF-2). CI runs a fixed set of sequences (derandomized,
so the verdict does not change from run to run); `KAFKA_REF_LONG=1` runs a random hunt ten
times longer. The numbers of sequences and requests are printed at the end of the module.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_ref.apache.cluster import ApacheKafka
from kafka_ref.conformance import differential
from kafka_ref.tools.server_process import ServerProcess, free_port
from tests.conftest import campaign

pytestmark = pytest.mark.timeout(900)
LONG = os.environ.get("KAFKA_REF_LONG") == "1"
counts = {"sequences": 0, "requests": 0}


@pytest.fixture(scope="module")
def brokers():
    """(Apache Kafka's address, kafka-ref's address, the versions both serve)."""
    kafka = ApacheKafka(brokers=1, configs=differential.BROKER_CONFIGS).start()
    workdir = tempfile.mkdtemp(prefix="kafka-ref-differential-")
    port = free_port()
    cmd = [
        *(sys.executable, "-m", "kafka_ref.cli", "--log-level", "WARNING", "broker"),
        *("--listen", f"127.0.0.1:{port}", "--data-dir", f"{workdir}/data"),
    ]
    for key, value in differential.BROKER_CONFIGS.items():
        cmd += ["--config", f"{key}={value}"]
    ours = ServerProcess("kafka-ref", cmd, port, f"{workdir}/broker.log")
    ours.start()
    a, b = ("127.0.0.1", kafka.nodes[0].port), ("127.0.0.1", port)
    differential.warm_up(a)
    differential.warm_up(b)
    try:
        yield a, b, differential.common_versions(a, b)
    finally:
        ours.stop()
        kafka.stop()
        print(
            f"\ndifferential: {counts['sequences']} sequences, {counts['requests']} requests "
            "to Apache Kafka and kafka-ref",
            file=sys.stderr,
        )


def choose(draw):
    return lambda options: draw(st.sampled_from(options))


@st.composite
def step(draw):
    return differential.build(draw(st.sampled_from(differential.STEPS)), choose(draw))


@st.composite
def sequence(draw):
    """Most sequences open with topic 0 created (differential.opening), then 1-16 steps."""
    skip_opening = draw(st.booleans())  # shrinks to False: the opening stays
    opened = [] if skip_opening else [differential.opening(choose(draw))]
    return opened + draw(st.lists(step(), min_size=1, max_size=16))


@pytest.mark.spec("DIFF-1", "DIFF-2")
@settings(
    max_examples=campaign(60, 1000),
    derandomize=not LONG,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sequence())
def test_kafka_and_kafka_ref_answer_every_sequence_alike(brokers, steps):
    a, b, versions = brokers
    divergence, requests = differential.compare(steps, a, b, versions)
    counts["sequences"] += 1
    counts["requests"] += requests
    assert divergence is None, f"Apache Kafka (A) and kafka-ref (B) diverge at {divergence}"


@pytest.mark.spec("DIFF-2")
def test_the_normal_form_keeps_what_matters_and_drops_what_may_differ():
    """Two answers that differ only in what the normal form drops are equal; two that differ
    in an error code, an offset or a record are not."""
    from kafka_ref.protocol.messages import ProduceResponse

    def answer(code: int, offset: int, throttle: int, message: str):
        part = ProduceResponse.PartitionProduceResponse(
            index=0, error_code=code, base_offset=offset, error_message=message
        )
        topic = ProduceResponse.TopicProduceResponse(name="NS-t0", partition_responses=[part])
        return ProduceResponse(responses=[topic], throttle_time_ms=throttle)

    def normal(value):
        return differential.normal(differential.Names("NS", base_ms=0), value)

    assert normal(answer(0, 5, 0, "a")) == normal(answer(0, 5, 250, "another wording"))
    assert normal(answer(0, 5, 0, "")) != normal(answer(0, 6, 0, ""))
    assert normal(answer(0, 5, 0, "")) != normal(answer(3, 5, 0, ""))
