"""The pytest plugin: `--target`, the `target`/`wire` fixtures, rule filtering and the report.

A conformance test is an ordinary pytest test that takes the `target` fixture (or `wire`,
a connection to it) and cites the rules it checks with `@pytest.mark.spec("LOG-3")`. This
plugin adds, for any directory whose conftest.py imports it (tests/conformance does):

    --target kafka_ref | kafka_ref:mutant=NAME | apache_kafka | tansu | bootstrap=HOST:PORT
    --capabilities +compaction,-groups     adjust what the target is taken to support
    --conformance-report DIR               where <target>.json/.md go (build/conformance)
    --spec-filter LOG-3,REBAL-1            run only the tests citing these rules

Tests of the replication rules take `brokers` (several brokers: the target's own, or a
3-broker cluster of its kind the suite starts once per session) or `cluster` (one the
suite can kill brokers of); see cluster.py.

The target starts lazily, once per session, when the first conformance test needs it, and
its capabilities are probed then. `target.require("groups")` skips a test whose capability
the target lacks (CONF-1). After the run, every test that took `target` is folded into one
row per rule (report.py, CONF-2).

A rule on which kafka-ref knowingly differs from Apache Kafka says so in the spec
(`Kafka: diverges — why`). Only kafka-ref's own targets are held to it: against any other
broker a test that cites only such rules is expected to fail (pytest's non-strict xfail),
and its rules are reported `diverges` with the reason, or `pass` if the broker behaves as
kafka-ref does after all (CONF-6).
"""

from __future__ import annotations

import itertools
import os
import pathlib
import uuid

import pytest

from kafka_ref.conformance import matrix as matrix_mod
from kafka_ref.conformance import report as report_mod
from kafka_ref.conformance import targets
from kafka_ref.conformance.capabilities import CAPABILITIES
from kafka_ref.conformance.cluster import ApacheKafkaCluster, Brokers, SuiteCluster
from kafka_ref.conformance.security import SaslProfile
from kafka_ref.protocol.api_keys import ApiKey

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2]  # a checkout: spec/ lives here
_STATE: dict = {"results": {}, "cites": {}, "target": None, "diverging": set()}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "kafka-ref conformance suite")
    add = group.addoption
    add(
        "--target",
        default="kafka_ref",
        help="broker to judge: kafka_ref, kafka_ref:mutant=NAME, apache_kafka, tansu, "
        "bootstrap=HOST:PORT",
    )
    add(
        "--capabilities",
        default="",
        help="adjust the target's capabilities, e.g. +compaction,-restart",
    )
    add(
        "--conformance-report",
        default=None,
        metavar="DIR",
        help="directory for <target>.json and .md (default build/conformance)",
    )
    add(
        "--spec-filter",
        default="",
        metavar="IDS",
        help="run only conformance tests citing one of these rules (comma list)",
    )
    add(
        "--spec-dir",
        default=None,
        metavar="DIR",
        help="the spec directory to read rules from (default <checkout>/spec)",
    )


def _opt(config: pytest.Config, name: str, default=None):
    # When this plugin comes from a conftest below the rootdir, a plain `pytest` run parses
    # the command line before the conftest is loaded; pytest still sets the defaults.
    return config.getoption(name, default)


def spec_ids(item: pytest.Item) -> list[str]:
    return [rule for mark in item.iter_markers("spec") for rule in mark.args]


def _is_conformance(item: pytest.Item) -> bool:
    return "target" in getattr(item, "fixturenames", ())


def spec_dir(config: pytest.Config) -> pathlib.Path:
    found = pathlib.Path(_opt(config, "spec_dir") or PACKAGE_ROOT / "spec")
    return found if found.is_dir() else pathlib.Path(config.rootpath) / "spec"


def holds_to_divergent_rules(target_spec: str) -> bool:
    """kafka-ref's own targets (and its mutants) are judged by every rule, the rules where
    kafka-ref differs from Kafka included; any other broker is not held to those (CONF-6)."""
    return targets.parse_label(target_spec).startswith(matrix_mod.REFERENCE)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = {r.strip() for r in (_opt(config, "spec_filter") or "").split(",") if r.strip()}
    divergent: dict[str, str] = {}
    if not holds_to_divergent_rules(_opt(config, "target", "kafka_ref")):
        rules_read = report_mod.read_rules(spec_dir(config))
        divergent = {r.id: r.divergence for r in rules_read.values() if r.divergence}
    keep, drop = [], []
    for item in items:
        if not _is_conformance(item):
            keep.append(item)
            continue
        rules = spec_ids(item)
        if wanted and not wanted & set(rules):
            drop.append(item)
            continue
        _STATE["cites"][item.nodeid] = rules
        if rules and all(rule in divergent for rule in rules):
            why = "; ".join(f"{rule}: {divergent[rule]}" for rule in rules)
            item.add_marker(pytest.mark.xfail(reason=f"Kafka: diverges — {why}", strict=False))
            _STATE["diverging"].add(item.nodeid)
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.nodeid not in _STATE["cites"]:
        return
    results = _STATE["results"]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if hasattr(report, "wasxfail") and report.nodeid in _STATE["diverging"]:
            # the broker does what Kafka does (xfailed), or what kafka-ref does (xpassed)
            outcome = "diverges" if report.skipped else "pass"
            reason = report.wasxfail if report.skipped else ""
        elif hasattr(report, "wasxfail"):
            outcome = "xfail" if report.skipped else "fail"  # an XPASS(strict) fails
            reason = report.wasxfail or "expected to fail"
        elif report.skipped:
            outcome = "skipped"
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            reason = reason.removeprefix("Skipped: ")
        elif report.failed:
            outcome = "fail"
            reason = _failure_line(report)
        else:
            outcome, reason = "pass", ""
        results[report.nodeid] = (outcome, reason)
    elif report.when == "teardown" and report.failed:
        results[report.nodeid] = ("fail", _failure_line(report))


def _failure_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return " ".join(text.split())[:300]


class ConformanceTarget:
    """What a test sees: the target plus `require` and fresh topic names."""

    _ids = itertools.count()

    def __init__(self, target: targets.Target) -> None:
        self.target = target
        self.capabilities = target.capabilities
        self.run_id = uuid.uuid4().hex[:6]

    def __getattr__(self, name: str):
        return getattr(self.target, name)

    def has(self, name: str) -> bool:
        return self.capabilities.has(name)

    def require(self, *names: str) -> None:
        """Skip the calling test unless the target has every capability named (CONF-1)."""
        missing = self.capabilities.missing(*names)
        if missing:
            pytest.skip(
                f"target lacks {', '.join(missing)}: {'; '.join(CAPABILITIES[m] for m in missing)}"
            )

    def require_any(self, *names: str) -> None:
        """Skip the calling test unless the target has at least one of these (CONF-1)."""
        if not any(self.has(n) for n in names):
            pytest.skip(
                f"target lacks {' or '.join(names)}: {'; '.join(CAPABILITIES[n] for n in names)}"
            )

    def require_versions(self, *api_versions: tuple[int, int]) -> None:
        """Skip the calling test unless the target advertises each (API key, version): a
        broker that stops below a version has not broken that version's rules (CONF-1)."""
        missing = [(k, v) for k, v in api_versions if not self.capabilities.supports(k, v)]
        if missing:
            names = ", ".join(f"{ApiKey(k).name} v{v}" for k, v in missing)
            pytest.skip(f"target does not advertise {names}")

    def topic_name(self, hint: str = "t") -> str:
        """A topic name no other test of this run (or earlier runs on the target) uses."""
        return f"conf-{hint}-{self.run_id}-{next(self._ids)}"

    def group_name(self, hint: str = "g") -> str:
        return f"conf-{hint}-{self.run_id}-{next(self._ids)}"


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest):
    config = request.config
    try:
        tgt = targets.parse(_opt(config, "target", "kafka_ref"))
        tgt.start()
        tgt.probe(_opt(config, "capabilities", ""))
    except targets.TargetError as err:
        pytest.exit(f"conformance target: {err}", returncode=3)
    _STATE["target"] = tgt
    try:
        yield ConformanceTarget(tgt)
    finally:
        tgt.stop()


@pytest.fixture
def wire(target):
    connection = target.wire()
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def _configured_brokers():
    started: dict[tuple, targets.Target] = {}
    yield started
    for tgt in started.values():
        tgt.stop()


@pytest.fixture
def configured_broker(target, _configured_brokers):
    """configured_broker({"producer.id.expiration.ms": 1000}) -> a ConformanceTarget.

    A broker of the target's kind started with these broker-level configs (on top of the
    suite's), for rules that cannot be seen with the shared target's settings. It needs the
    `configurable-broker` capability (skipped otherwise), and brokers with the same configs
    are shared by the tests of a session."""
    target.require("configurable-broker")

    def make(configs: dict[str, object]) -> ConformanceTarget:
        key = tuple(sorted((k, str(v)) for k, v in configs.items()))
        if key not in _configured_brokers:
            try:
                _configured_brokers[key] = target.target.configured(dict(configs))
            except targets.TargetError as err:
                pytest.fail(f"could not start a broker with {configs}: {err}")
        return ConformanceTarget(_configured_brokers[key])

    return make


@pytest.fixture(scope="session")
def _secured_broker():
    started: dict[str, SaslProfile | targets.TargetError] = {}
    yield started
    if isinstance(started.get("secured"), SaslProfile):
        started["secured"].stop()


@pytest.fixture
def secured(target, _secured_broker) -> SaslProfile:
    """The broker of the target's kind that requires SASL, with what it accepts
    (security.py), started at the first test that asks, once per session; without the
    `sasl` capability the test is not applicable (CONF-1)."""
    target.require("sasl")
    if "secured" not in _secured_broker:
        try:
            _secured_broker["secured"] = target.target.secured()
        except targets.TargetError as err:
            _secured_broker["secured"] = err
    profile = _secured_broker["secured"]
    if isinstance(profile, targets.TargetError):
        pytest.fail(str(profile))
    return profile


@pytest.fixture(scope="session")
def _suite_cluster():
    started: dict[str, SuiteCluster | ApacheKafkaCluster | targets.TargetError] = {}
    yield started
    if isinstance(started.get("cluster"), SuiteCluster | ApacheKafkaCluster):
        started["cluster"].close()


@pytest.fixture
def brokers(target, _suite_cluster) -> Brokers:
    """Several brokers of one cluster (cluster.py), for the replication rules.

    With the `cluster` capability, the cluster of the target's kind that the suite starts
    at the first test that asks, once per session, healed (every broker running) before
    each test; else the target's own brokers if it has several (`multi-broker`); else the
    test is skipped (CONF-1)."""
    target.require_any("cluster", "multi-broker")
    if not target.has("cluster"):
        return Brokers([(target.host, target.port)])
    if "cluster" not in _suite_cluster:
        try:
            _suite_cluster["cluster"] = target.target.cluster()
        except targets.TargetError as err:
            _suite_cluster["cluster"] = err
    cluster = _suite_cluster["cluster"]
    if isinstance(cluster, targets.TargetError):
        pytest.fail(str(cluster))
    cluster.heal()
    return cluster


@pytest.fixture
def cluster(target, request: pytest.FixtureRequest) -> Brokers:
    """`brokers` that the suite can kill, pause and restart: needs the `cluster` capability."""
    target.require("cluster")
    return request.getfixturevalue("brokers")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _STATE["cites"]:
        return  # no conformance test was collected: nothing to report
    config = session.config
    out = _opt(config, "conformance_report") or os.path.join(config.rootpath, "build/conformance")
    tgt: targets.Target | None = _STATE["target"]
    spec = _opt(config, "target", "kafka_ref")
    label = tgt.label if tgt else targets.parse_label(spec)
    meta = {
        "target": spec,
        "capabilities": sorted(tgt.capabilities.names) if tgt and tgt.capabilities else [],
        "api_versions": {str(k): list(v) for k, v in sorted(tgt.capabilities.api_versions.items())}
        if tgt and tgt.capabilities
        else {},
        "spec_filter": _opt(config, "spec_filter") or "",
    }
    rows = report_mod.build_rows(
        report_mod.read_rules(spec_dir(config)), _STATE["results"], _STATE["cites"]
    )
    paths = matrix_mod.write_report(pathlib.Path(out), label, meta, rows)
    _STATE["paths"] = paths


def pytest_terminal_summary(terminalreporter) -> None:
    for path in _STATE.get("paths", []):
        terminalreporter.write_line(f"conformance report: {path}")
