"""Jars from Maven Central: the runtime classpath of a small pom, resolved once and cached.

kafka-ref runs two pieces of the JVM world beside itself, and commits neither: Apache Kafka
(`kafka_ref/apache/pom.xml`), the broker it is checked against, and Spark's own Kafka
connector (`kafka_ref/spark/pom.xml`), the source its Spark data source is checked against.
Each is one small Maven file that pins a version and names the artifacts; Maven resolves
its runtime classpath once:

    mvn -q -B -f POM dependency:build-classpath -Dmdep.outputFile=FILE

The jars stay in Maven's local repository (`~/.m2/repository`); the classpath, one line, is
cached under `$XDG_CACHE_HOME/kafka-ref` (or `~/.cache/kafka-ref`, or `KAFKA_REF_CACHE`),
named by the pom's content, so changing a version fetches again. A cached classpath whose
jars have gone is resolved again. It lives at the top of the package because both
`apache/` and `spark/` need it.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile


def cache_dir() -> pathlib.Path:
    """Where kafka-ref keeps what it fetched or built (never inside the repository)."""
    base = os.environ.get("KAFKA_REF_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka-ref"
    )
    return pathlib.Path(base)


def pom_property(pom: pathlib.Path, name: str) -> str:
    """A property the pom pins, e.g. its version (`<kafka.version>4.4.0</kafka.version>`)."""
    found = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", pom.read_text())
    assert found, f"{pom} pins no {name}"
    return found.group(1)


def classpath(
    pom: pathlib.Path, label: str, error: type[Exception], fetch: bool = True
) -> list[str]:
    """The runtime classpath of `pom` as jar paths, resolved by Maven if not cached.

    `label` names what the pom brings, e.g. "Apache Kafka 4.4.0", in messages and (with the
    pom's hash) in the cache file's name; `error` is raised, with one readable message, when
    Maven is missing or fails. With `fetch=False` only a cached, complete classpath is
    returned (else the error)."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    cached = cache_dir() / f"{label.lower().replace(' ', '-')}-{digest}.classpath"
    if cached.exists():
        jars = cached.read_text().strip().split(os.pathsep)
        if jars != [""] and all(os.path.exists(jar) for jar in jars):
            return jars
    if not fetch:
        raise error(f"{label} is not fetched yet")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise error(f"fetching {label} needs Maven: apt-get install maven (or put mvn on PATH)")
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "classpath"
        cmd = [mvn, "-q", "-B", "-f", str(pom), "dependency:build-classpath"]
        cmd.append(f"-Dmdep.outputFile={out}")
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
            raise error(f"Maven could not fetch {label}:\n{tail}")
        line = out.read_text().strip()
    # Written whole, then renamed: a reader never sees half a classpath.
    partial = cached.with_suffix(".partial")
    partial.write_text(line + "\n")
    partial.replace(cached)
    return line.split(os.pathsep)
