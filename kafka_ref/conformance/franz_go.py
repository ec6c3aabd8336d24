"""franz-go's own integration tests as a judge: the `kgo` package's tests against a broker.

franz-go (github.com/twmb/franz-go) is a Kafka client in Go. Its package `pkg/kgo` carries
integration tests written against real brokers: fifty goroutines producing to one partition,
chains of consumer groups that consume, re-produce and commit (range, cooperative-sticky,
static members), the same chains inside transactions, regex subscriptions, pausing,
purging, partitions added under a running consumer, record batches larger than the
broker's fetch limit. The tests find the broker and a few knobs in the environment:

| variable | what it sets | here |
|---|---|---|
| `KGO_SEEDS` | the bootstrap servers | the broker under test |
| `KGO_TEST_RF` | replication factor of the topics the tests create (3) | 1 for one broker |
| `KGO_TEST_RECORDS` | records each ETL chain carries (500,000) | 2,000 in CI, 500,000 long |
| `KGO_TEST_UNSAFE` | the transactional chain may use `EndBeginTxnUnsafe` | set, as for Kafka |
| `KGO_TEST_SCRAM`, `KGO_TEST_SCRAM_SEEDS` | a SCRAM-SHA-256 user and its listener | set |
| `KGO_TEST_OAUTH_SEEDS` | an OAUTHBEARER listener | unset: kafka-ref has none |
| `KGO_TEST_TLS`, `KGO_TEST_CHAOS` | TLS to the broker; connections dying every second | unset |
| `KGO_LOG_LEVEL` | the client's log level | none |

The tests probe ApiVersions once and skip what the broker does not serve (kafka-ref serves
both the consumer group protocol of KIP-848 and the share groups of KIP-932, so their tests
run). Every skip or failure a run may show is explained in `EXPLAINED` below, with the skip
message that proves the reason; anything else is a finding.

franz-go's code is never part of kafka-ref. `go mod download` brings the module, its tests
included, from the Go module proxy into Go's module cache; `go test -c` builds the package's
test binary once into kafka-ref's cache (`$XDG_CACHE_HOME/kafka-ref`, keyed by the version);
`go tool test2json` runs it from the package's directory, as `go test` would (one test
reads its package's `config.go`), and reports each test as JSON.

    python -m kafka_ref.conformance.franz_go --fetch        # what `make test` runs first
    python -m kafka_ref.conformance.franz_go --apache --report docs/conformance/franz-go.md
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from kafka_ref.maven import cache_dir
from kafka_ref.tools.server_process import ServerProcess, free_port

MODULE = "github.com/twmb/franz-go"
VERSION = "v1.22.3"
PACKAGE = "pkg/kgo"

SCRAM_USER, SCRAM_PASSWORD = "franz", "franz-secret"

# A broker for the kgo tests: no initial rebalance delay, as the development
# server.properties Kafka ships, so a lone group member gets its partitions at once.
BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": 0}


class FranzGoUnavailable(RuntimeError):
    """franz-go's tests cannot be built here: no Go, or the module proxy refused."""


@dataclass(frozen=True)
class Explained:
    """Why a test does not pass against kafka-ref. `says` must appear in the test's output
    (its skip message), so a test skipped or failing for another reason is a finding."""

    says: str
    why: str


EXPLAINED: dict[str, Explained] = {
    "TestOAuthAuth": Explained(
        "KGO_TEST_OAUTH_SEEDS not set",
        "SASL/OAUTHBEARER (KIP-255) is not implemented: kafka-ref's SASL mechanisms are "
        "PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512",
    ),
    "TestIssueProduceBrokerTooOldFailsRecords": Explained(
        "broker still takes produce v2",
        "a test assumption: it needs a broker whose ApiVersions no longer lists Produce "
        "v0-v2; Apache Kafka 4.4 still lists them (and refuses them in use), and so does "
        "kafka-ref, so the test skips on both",
    ),
}


@dataclass(frozen=True)
class Outcome:
    test: str  # Go's name: TestX or TestX/sub
    result: str  # pass, fail or skip
    seconds: float
    output: str  # what the test printed (its skip message, its failure)

    @property
    def top_level(self) -> bool:
        return "/" not in self.test


def go() -> str:
    found = shutil.which("go")
    if found is None:
        raise FranzGoUnavailable(
            "franz-go's tests need Go: apt-get install golang (or put go on PATH); Go fetches "
            "the toolchain franz-go's go.mod asks for from the module proxy by itself"
        )
    return found


def _go(args: list[str], cwd: str | os.PathLike, what: str) -> str:
    done = subprocess.run([go(), *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise FranzGoUnavailable(f"{what} failed:\n{tail}")
    return done.stdout


def module_dir() -> pathlib.Path:
    """franz-go's source, tests included, in Go's module cache (downloaded once)."""
    with tempfile.TemporaryDirectory() as outside_any_module:
        found = json.loads(
            _go(
                ["mod", "download", "-json", f"{MODULE}@{VERSION}"],
                outside_any_module,
                f"go mod download {MODULE}@{VERSION}",
            )
        )
    return pathlib.Path(found["Dir"])


def test_binary() -> pathlib.Path:
    """The kgo package's test binary, built once per franz-go version and cached."""
    binary = cache_dir() / f"franz-go-{VERSION}" / "kgo.test"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_suffix(".partial")
    _go(
        ["test", "-c", "-o", str(partial), f"./{PACKAGE}"],
        module_dir(),
        f"building {MODULE}/{PACKAGE}'s tests",
    )
    partial.replace(binary)  # whole or absent: a reader never runs half a binary
    return binary


def kgo_env(seeds: str, records: int, rf: int = 1, scram_seeds: str | None = None) -> dict:
    """The environment the kgo tests read (the module docstring's table)."""
    env = {
        "KGO_SEEDS": seeds,
        "KGO_TEST_RF": str(rf),
        "KGO_TEST_RECORDS": str(records),
        "KGO_TEST_UNSAFE": "1",
        "KGO_LOG_LEVEL": "none",
    }
    if scram_seeds:
        env["KGO_TEST_SCRAM"] = f"{SCRAM_USER}:{SCRAM_PASSWORD}"
        env["KGO_TEST_SCRAM_SEEDS"] = scram_seeds
    return env


def run(
    env: dict[str, str], timeout: float = 1800, run_pattern: str | None = None
) -> list[Outcome]:
    """Run the kgo tests (those matching `run_pattern`, else all) with `env`; every outcome."""
    binary = test_binary()
    cmd = [
        go(),
        "tool",
        "test2json",
        "-t",
        str(binary),
        "-test.v",
        "-test.count=1",
        f"-test.timeout={int(timeout)}s",
    ]
    if run_pattern:
        cmd.append(f"-test.run={run_pattern}")
    # Without KGO_* from the caller's environment: the run is what `env` says.
    base = {k: v for k, v in os.environ.items() if not k.startswith("KGO_")}
    done = subprocess.run(
        cmd,
        cwd=module_dir() / PACKAGE,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=timeout + 60,
    )
    outcomes = parse_test2json(done.stdout)
    if not outcomes:
        raise FranzGoUnavailable(f"the kgo tests ran no test:\n{done.stdout[-2000:]}")
    return outcomes


def parse_test2json(text: str) -> list[Outcome]:
    """test2json's events folded into one outcome per test (a panic stops the binary: the
    tests still running then have no outcome, and the run fails on the panicking test)."""
    printed: dict[str, list[str]] = {}
    outcomes = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        test = event.get("Test")
        if not test:
            continue
        if event["Action"] == "output":
            printed.setdefault(test, []).append(event["Output"])
        elif event["Action"] in ("pass", "fail", "skip"):
            output = "".join(printed.get(test, []))
            outcomes.append(Outcome(test, event["Action"], event.get("Elapsed", 0.0), output))
    return outcomes


def unexplained(outcomes: list[Outcome]) -> list[Outcome]:
    """The findings: tests that failed, or did not pass for a reason `EXPLAINED` lacks."""
    found = []
    for outcome in outcomes:
        if outcome.result == "pass":
            continue
        known = EXPLAINED.get(outcome.test)
        if outcome.result == "fail" or known is None or known.says not in outcome.output:
            found.append(outcome)
    return found


class KafkaRefForFranzGo:
    """A kafka-ref broker for the kgo tests: PLAINTEXT for most, SASL_PLAINTEXT with a
    SCRAM-SHA-256 user for TestSCRAMAuth and TestSCRAMAuthBadCredentials."""

    def __init__(self, base: str | os.PathLike, mutant: str | None = None) -> None:
        self.base = pathlib.Path(base)
        self.data_dir = self.base / "data"
        self.plain_port, self.scram_port = free_port(), free_port()
        if mutant:  # the same broker with one known bug (mutants.py)
            cmd = [sys.executable, "-m", "kafka_ref.conformance.mutant_broker", "--mutant", mutant]
        else:
            cmd = [sys.executable, "-m", "kafka_ref.cli"]
        cmd += [
            "broker",
            "--data-dir",
            str(self.data_dir),
            "--config",
            f"listeners=PLAINTEXT://127.0.0.1:{self.plain_port},"
            f"SASL_PLAINTEXT://127.0.0.1:{self.scram_port}",
            "--config",
            "sasl.enabled.mechanisms=SCRAM-SHA-256",
        ]
        for key, value in BROKER_CONFIGS.items():
            cmd += ["--config", f"{key}={value}"]
        self.process = ServerProcess(
            "kafka-ref broker", cmd, self.plain_port, str(self.base / "broker.log")
        )

    def __enter__(self) -> KafkaRefForFranzGo:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        add = f"SCRAM-SHA-256=[iterations=4096,password={SCRAM_PASSWORD}]"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "kafka_ref.cli",
                "users",
                "--data-dir",
                str(self.data_dir),
                "--alter",
                "--add-config",
                add,
                "--entity-name",
                SCRAM_USER,
            ],
            check=True,
            capture_output=True,
        )
        self.process.start()
        return self

    def __exit__(self, *exc) -> None:
        self.process.stop()

    def env(self, records: int) -> dict[str, str]:
        return kgo_env(
            f"127.0.0.1:{self.plain_port}", records, scram_seeds=f"127.0.0.1:{self.scram_port}"
        )


def run_against_kafka_ref(
    base: str | os.PathLike,
    records: int,
    run_pattern: str | None = None,
    mutant: str | None = None,
    timeout: float = 1800,
) -> list[Outcome]:
    """Start a kafka-ref broker in `base`, run the kgo tests against it, stop it. `timeout`
    is the Go test binary's own: a test still running then makes it panic and name it."""
    test_binary()  # built before the broker starts: the build takes minutes the first time
    with KafkaRefForFranzGo(base, mutant) as broker:
        return run(broker.env(records), timeout=timeout, run_pattern=run_pattern)


# ------------------------------------------------------------------------------- the report


def report(outcomes: list[Outcome], records: int, apache: list[Outcome] | None = None) -> str:
    """The results as Markdown: a summary, then one row per top-level test (subtests that
    did not pass are listed under their test), with the explanation of each non-pass."""
    tops = [o for o in outcomes if o.top_level]
    counts = {r: sum(o.result == r for o in tops) for r in ("pass", "fail", "skip")}
    lines = [
        "<!-- generated by `python -m kafka_ref.conformance.franz_go --report`; do not edit -->",
        "",
        f"franz-go {VERSION}, package `{PACKAGE}`: **{counts['pass']} of {len(tops)} tests "
        f"pass** against kafka-ref, {counts['fail']} fail, {counts['skip']} skip "
        f"(`KGO_TEST_RECORDS={records}`, `KGO_TEST_RF=1`, one broker, SCRAM on a second "
        "listener).",
    ]
    by_apache = {o.test: o for o in apache or []}
    if apache:
        atops = [o for o in apache if o.top_level]
        lines.append(
            f"The same binary against Apache Kafka 4.4 (one KRaft node, no SCRAM listener): "
            f"{sum(o.result == 'pass' for o in atops)} of {len(atops)} pass."
        )
    lines += [
        "",
        "| test | kafka-ref | seconds |"
        + (" Apache Kafka 4.4 |" if apache else "")
        + " why, when it does not pass |",
        "|---|---|---|" + ("---|" if apache else "") + "---|",
    ]
    for outcome in sorted(outcomes, key=lambda o: o.test):
        if not outcome.top_level and outcome.result == "pass":
            continue
        why = ""
        if outcome.result != "pass":
            known = EXPLAINED.get(outcome.test)
            why = known.why if known else first_line(outcome.output)
        row = f"| `{outcome.test}` | {outcome.result} | {outcome.seconds:.2f} |"
        if apache:
            other = by_apache.get(outcome.test)
            row += f" {other.result if other else '-'} |"
        lines.append(f"{row} {why} |")
    return "\n".join(lines) + "\n"


def first_line(output: str) -> str:
    """The first line a test printed that says something (for an unexplained outcome)."""
    for line in output.splitlines():
        line = line.strip()
        if line and not re.match(r"^(=== |--- |panic\.go)", line):
            return line.replace("|", "\\|")[:200]
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_ref.conformance.franz_go", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--records", type=int, default=20_000, help="KGO_TEST_RECORDS")
    parser.add_argument("--report", metavar="FILE", help="write the results table here")
    parser.add_argument(
        "--apache", action="store_true", help="also run against Apache Kafka 4.4 (a column)"
    )
    parser.add_argument("--fetch", action="store_true", help="only fetch and build, then exit")
    args = parser.parse_args(argv)
    if args.fetch:
        try:
            print(f"franz-go {VERSION}: {test_binary()}")
        except FranzGoUnavailable as e:
            print(e, file=sys.stderr)
            return 2
        return 0
    with tempfile.TemporaryDirectory() as base:
        outcomes = run_against_kafka_ref(base, args.records)
    apache = None
    if args.apache:
        from kafka_ref.apache.cluster import ApacheKafka

        with ApacheKafka(brokers=1, configs=BROKER_CONFIGS) as kafka:
            apache = run(kgo_env(kafka.bootstrap, args.records))
    text = report(outcomes, args.records, apache)
    if args.report:
        pathlib.Path(args.report).write_text(text)
    else:
        print(text)
    return 0 if not unexplained(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
