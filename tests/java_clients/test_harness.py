"""The Java harness itself: built once per version of its sources, and a clean channel."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.java_clients import harness
from tests.java_clients.harness import JavaError

pytestmark = pytest.mark.timeout(60)


@pytest.mark.spec("JAVA-1")
def test_the_harness_jar_is_kept_under_the_hash_of_its_sources(
    java_harness_jar, tmp_path, monkeypatch
):
    built = os.stat(java_harness_jar).st_mtime_ns
    assert harness.harness_jar() == java_harness_jar  # cached: not built again
    assert os.stat(java_harness_jar).st_mtime_ns == built
    name = os.path.basename(java_harness_jar)
    assert name == f"java-harness-{harness.version()}-{harness._sources_digest()}.jar"

    # A copy of the sources with one line changed has another hash, so another jar.
    copy = tmp_path / "java"
    shutil.copytree(harness.PROJECT, copy, ignore=shutil.ignore_patterns("target"))
    monkeypatch.setattr(harness, "PROJECT", copy)
    assert harness._sources_digest() in name
    source = copy / "src/main/java/org/kafkaref/harness/Harness.java"
    source.write_text(source.read_text() + "\n// changed\n")
    assert harness._sources_digest() not in name


@pytest.mark.spec("JAVA-1")
def test_a_failed_operation_answers_its_exception_and_the_harness_goes_on(java, broker):
    with pytest.raises(JavaError) as unknown:
        java.call("no-such-operation")
    assert unknown.value.error == "java.lang.IllegalArgumentException"
    assert "no operation no-such-operation; known: [alter-configs," in unknown.value.message
    with pytest.raises(JavaError) as refused:  # the admin client's own error, unwrapped
        java.call("describe-topics", bootstrap=broker.bootstrap, topics=["no-such-topic"])
    assert refused.value.error.endswith("UnknownTopicOrPartitionException")
    assert java.call("describe-cluster", bootstrap=broker.bootstrap)["nodes"] == [0]
