"""Apache Kafka's jars, fetched from Maven Central on first use and cached.

kafka-ref runs the real Apache Kafka beside itself: as a peer in the benchmarks, as a target of
the conformance suite, as the broker its own clients and tools are checked against. No jar is
committed. The pinned version and its artifacts live in one small Maven file,
`kafka_ref/apache/pom.xml` (the broker `kafka_2.13`, `kafka-tools`, `kafka-streams`, and the
log4j 2 binding Kafka's distribution ships); Maven resolves its runtime classpath once and
kafka-ref caches it, named by the pom's content (kafka_ref/maven.py), so changing the version
fetches again.

    kafka-ref reference-kafka --fetch      # what `make test` runs: fetch now, print the version
"""

from __future__ import annotations

import os
import pathlib
import shutil

from kafka_ref import maven
from kafka_ref.maven import cache_dir

__all__ = ["LOG4J_CONFIG", "POM", "ApacheKafkaUnavailable", "cache_dir", "classpath", "java"]

POM = pathlib.Path(__file__).with_name("pom.xml")
LOG4J_CONFIG = pathlib.Path(__file__).with_name("log4j2.properties")
# The tools' logging (Kafka's config/tools-log4j2.yaml): warnings on stderr, stdout left alone.
TOOLS_LOG4J_CONFIG = pathlib.Path(__file__).with_name("tools-log4j2.properties")


class ApacheKafkaUnavailable(RuntimeError):
    """Apache Kafka's jars cannot be had: no Java or Maven, or Maven Central refused."""


def version() -> str:
    """The pinned Apache Kafka version (the pom's `kafka.version` property)."""
    return maven.pom_property(POM, "kafka.version")


def java() -> str:
    """The `java` that runs Kafka (Kafka 4 needs Java 17 or later): JAVA_HOME's, else PATH's."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found or not os.access(found, os.X_OK):
        raise ApacheKafkaUnavailable("Apache Kafka needs Java 17 or later: no `java` found")
    return found


def jvm_command(
    main: str,
    *args: str,
    jvm_opts: list[str],
    log_config: pathlib.Path = TOOLS_LOG4J_CONFIG,
    extra_classpath: tuple[str, ...] = (),
) -> list[str]:
    """The command line that runs `main` on the pinned Kafka's classpath, as
    kafka-run-class.sh does: java, the JVM options, the logging config, -cp, the class."""
    jars = os.pathsep.join((classpath(), *extra_classpath))
    return [java(), *jvm_opts, f"-Dlog4j2.configurationFile={log_config}", "-cp", jars, main, *args]


def classpath(fetch: bool = True) -> str:
    """The runtime classpath of the pinned Apache Kafka, resolved by Maven if not cached.

    With `fetch=False` only a cached, complete classpath is returned (else the error)."""
    jars = maven.classpath(POM, f"Apache Kafka {version()}", ApacheKafkaUnavailable, fetch)
    return os.pathsep.join(jars)
