"""Apache Kafka's jars, fetched from Maven Central on first use and cached.

kafka-ref runs the real Apache Kafka beside itself: as a peer in the benchmarks, as a target of
the conformance suite, as the broker its own clients and tools are checked against. No jar is
committed. The pinned version and its artifacts live in one small Maven file,
`kafka_ref/apache/pom.xml` (the broker `kafka_2.13`, `kafka-tools`, `kafka-streams`, and the
log4j 2 binding Kafka's distribution ships); Maven resolves its runtime classpath once:

    mvn -q -B -f kafka_ref/apache/pom.xml dependency:build-classpath -Dmdep.outputFile=FILE

The jars stay in Maven's local repository (`~/.m2/repository`); the classpath, one line, is
cached under `$XDG_CACHE_HOME/kafka-ref` (or `~/.cache/kafka-ref`, or `KAFKA_REF_CACHE`), keyed
by the pom's content, so changing the version fetches again. A cached classpath whose jars
have gone is resolved again.

    kafka-ref reference-kafka --fetch      # what `make test` runs: fetch now, print the version
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

POM = pathlib.Path(__file__).with_name("pom.xml")
LOG4J_CONFIG = pathlib.Path(__file__).with_name("log4j2.properties")
# The tools' logging (Kafka's config/tools-log4j2.yaml): warnings on stderr, stdout left alone.
TOOLS_LOG4J_CONFIG = pathlib.Path(__file__).with_name("tools-log4j2.properties")


class ApacheKafkaUnavailable(RuntimeError):
    """Apache Kafka's jars cannot be had: no Java or Maven, or Maven Central refused."""


def version() -> str:
    """The pinned Apache Kafka version (the pom's `kafka.version` property)."""
    found = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    assert found, f"{POM} pins no kafka.version"
    return found.group(1)


def cache_dir() -> pathlib.Path:
    base = os.environ.get("KAFKA_REF_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka-ref"
    )
    return pathlib.Path(base)


def _cache_file() -> pathlib.Path:
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return cache_dir() / f"apache-kafka-{version()}-{digest}.classpath"


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
    cached = _cache_file()
    if cached.exists():
        jars = cached.read_text().strip()
        if jars and all(os.path.exists(jar) for jar in jars.split(os.pathsep)):
            return jars
    if not fetch:
        raise ApacheKafkaUnavailable(f"Apache Kafka {version()} is not fetched yet")
    return _resolve(cached)


def _resolve(cached: pathlib.Path) -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ApacheKafkaUnavailable(
            "fetching Apache Kafka needs Maven: apt-get install maven (or put mvn on PATH)"
        )
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "classpath"
        cmd = [
            mvn,
            "-q",
            "-B",
            "-f",
            str(POM),
            "dependency:build-classpath",
            f"-Dmdep.outputFile={out}",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
            raise ApacheKafkaUnavailable(f"Maven could not fetch Apache Kafka {version()}:\n{tail}")
        jars = out.read_text().strip()
    # Written whole, then renamed: a reader never sees half a classpath.
    partial = cached.with_suffix(".partial")
    partial.write_text(jars + "\n")
    partial.replace(cached)
    return jars
