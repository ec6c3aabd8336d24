"""A fault campaign: a real cluster, a workload, a nemesis, then the verdict.

This is Jepsen's test loop run on one machine with real processes (ZooKeeper from Debian's
package, three `kafka-ref broker` processes, librdkafka clients):

1. start ZooKeeper and brokers 1-3, each behind a cuttable proxy for its clients and peers
   and another for its ZooKeeper connection (proxy.py), or, with `kraft`, three KRaft nodes
   (broker and controller each) behind proxies for both listeners (kraft_cluster.py);
   create the topic (3 partitions, replication factor 3, `min.insync.replicas=2`);
2. run the workload (workload.py) and, from the first acknowledgement on, the nemesis
   (nemesis.py) for `faults` faults or `duration` seconds, while a sampler reads from
   ZooKeeper whether the cluster is whole (liveness.py);
3. heal everything, wait for the cluster to be whole, let the workload run on for a few
   seconds, stop it, and read every partition from the beginning;
4. judge: the history checker (history.py, HIST-1..6) for lost, duplicated and reordered
   acknowledged writes; the liveness windows; the group's re-deliveries.

The verdict is *valid* when no acknowledged write was lost, duplicated or reordered and
every window from whole-again to the next acknowledgement is at most `max_window` seconds
(30 by default; CHAOS-1 in spec/conformance.md).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import signal
import tempfile
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.conformance import liveness
from kafka_ref.conformance.history import History, Poll, check
from kafka_ref.conformance.kraft_cluster import KRaftChaosCluster
from kafka_ref.conformance.nemesis import KINDS, Nemesis, restart
from kafka_ref.conformance.proxy import ANY, Proxy, socket_owner
from kafka_ref.conformance.workload import GroupConsumer, ProducerWorkload, final_read
from kafka_ref.tools.cluster import BrokerProcess, ZooKeeperServer
from kafka_ref.tools.server_process import free_port

TOPIC, MIN_ISR, BROKERS = "chaos", 2, (1, 2, 3)
BROKER_CONFIGS = {"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0}
SAFETY = ("inconsistent-offsets", "duplicate", "lost-write", "nonmonotonic-send")


@dataclasses.dataclass
class Options:
    seed: int = 1
    faults: int | None = None
    duration: float | None = None
    rate: float = 2000.0
    partitions: int = 3
    kinds: tuple[str, ...] = KINDS
    configs: dict[str, str] = dataclasses.field(default_factory=dict)
    data_dir: str | None = None
    session_timeout_ms: int = 6000
    max_window: float = 30.0
    mutant: str | None = None  # run brokers with a known bug (mutants.py), to see it caught
    kraft: bool = False  # three KRaft nodes (kraft_cluster.py) instead of ZooKeeper's cluster


class ChaosCluster:
    """ZooKeeper and brokers 1-3 behind proxies; what the nemesis does to them (its Target)."""

    def __init__(
        self,
        base: str,
        configs: dict[str, object],
        session_timeout_ms: int,
        mutant: str | None = None,
    ) -> None:
        self.base = base
        self.launcher = ("-m", "kafka_ref.cli")
        if mutant is not None:
            self.launcher = ("-m", "kafka_ref.conformance.mutant_broker", "--mutant", mutant)
        self.zookeeper = ZooKeeperServer(os.path.join(base, "zookeeper"))
        self.configs = {
            **BROKER_CONFIGS,
            "zookeeper.session.timeout.ms": session_timeout_ms,
            **configs,
        }
        self.brokers: dict[int, BrokerProcess] = {}
        self.proxies: dict[int, Proxy] = {}  # clients and peers -> broker i
        self.zk_proxies: dict[int, Proxy] = {}  # broker i -> ZooKeeper
        self.paused: set[int] = set()
        self.zk: KafkaZkClient | None = None
        self.partitions = 0  # of the topic, once created

    def start(self) -> ChaosCluster:
        self.zookeeper.start()
        self.zk = KafkaZkClient(self.zookeeper.connect)
        self.zk.start(timeout=60)
        for i in BROKERS:
            port = free_port()
            self.proxies[i] = Proxy(port, identify=self._identify)
            self.zk_proxies[i] = Proxy(self.zookeeper.port)
            advertised = f"PLAINTEXT://127.0.0.1:{self.proxies[i].port}"
            configs = {**self.configs, "advertised.listeners": advertised}
            self.brokers[i] = BrokerProcess(
                i,
                os.path.join(self.base, f"broker-{i}"),
                f"127.0.0.1:{self.zk_proxies[i].port}",
                port=port,
                configs=configs,
                launcher=self.launcher,
            )
            self.brokers[i].start(timeout=90)
        liveness.wait_whole(lambda: self.zk.get_broker_ids() == list(BROKERS), 60)
        return self

    def _identify(self, peer_port: int, server_port: int):
        pids = {b.pid: i for i, b in self.brokers.items() if b.alive}
        return socket_owner(peer_port, server_port, pids)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p.port}" for p in self.proxies.values())

    def close(self) -> None:
        for i in list(self.paused):
            os.kill(self.brokers[i].pid, signal.SIGCONT)
        for proxy in [*self.proxies.values(), *self.zk_proxies.values()]:
            proxy.heal()
        for broker in self.brokers.values():
            broker.stop()
        for proxy in [*self.proxies.values(), *self.zk_proxies.values()]:
            proxy.close()
        if self.zk is not None:
            self.zk.close()
        self.zookeeper.stop()

    # ------------------------------------------------------------------ the cluster's view
    def whole(self, partitions: int, min_isr: int) -> bool:
        return liveness.is_whole(self.zk, TOPIC, partitions, min_isr)

    def dead_in_isr(self, partitions: int) -> frozenset[tuple[int, int]]:
        return liveness.dead_in_isr(self.zk, TOPIC, partitions)

    # ------------------------------------------------------------------ the nemesis' target
    def broker_ids(self) -> list[int]:
        return list(BROKERS)

    def controller(self) -> int | None:
        return self.zk.get_controller_id()

    def leaders(self) -> list[int]:
        states = [self.zk.get_partition_state(TOPIC, p) for p in range(self.partitions)]
        return [s[0].leader for s in states if s is not None]

    def start_fault(self, kind: str, broker: int) -> str:
        started = time.monotonic()
        if kind == "kill":
            self.brokers[broker].stop(signal.SIGKILL)
        elif kind == "term":
            code = self.brokers[broker].stop(signal.SIGTERM, timeout=60)
            return f"exited with code {code} in {time.monotonic() - started:.1f}s"
        elif kind == "pause":
            os.kill(self.brokers[broker].pid, signal.SIGSTOP)
            self.paused.add(broker)
        elif kind == "partition-zk":
            self.zk_proxies[broker].cut({ANY})
        elif kind == "partition-peers":
            others = {i for i in BROKERS if i != broker}
            self.proxies[broker].cut(others)
            for i in others:
                self.proxies[i].cut({broker})
        return ""

    def stop_fault(self, kind: str, broker: int) -> str:
        if kind in ("kill", "term"):
            return self.restart(broker)
        if kind == "pause":
            os.kill(self.brokers[broker].pid, signal.SIGCONT)
            self.paused.discard(broker)
        elif kind == "partition-zk":
            self.zk_proxies[broker].heal()
        elif kind == "partition-peers":
            for proxy in self.proxies.values():
                proxy.heal()
        return ""

    def restart(self, broker: int) -> str:
        return restart(self.brokers[broker])


def _group_figures(history: History, consumers: list[GroupConsumer]) -> dict:
    counts: collections.Counter[tuple[int, int]] = collections.Counter()
    for op in history.ops:
        if isinstance(op, Poll) and op.process != "final":
            for key, pairs in op.reads.items():
                counts.update((key, v) for _, v in pairs)
    return {
        "polled": sum(counts.values()),
        "distinct": len(counts),
        "redelivered_values": sum(1 for c in counts.values() if c > 1),
        "redeliveries": sum(c - 1 for c in counts.values() if c > 1),
        "rebalances": sum(c.rebalances for c in consumers),
    }


def create_topic(bootstrap: str, partitions: int, seconds: float = 30) -> None:
    """The campaign's topic, RF 3. A broker sees the third registration a moment after
    ZooKeeper has it (its watch), and until then refuses RF 3: ask again for a while."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(TOPIC, partitions, 3, config={"min.insync.replicas": str(MIN_ISR)})
    deadline = time.monotonic() + seconds
    while True:
        try:
            admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
            return
        except KafkaException as err:
            code = err.args[0].code()
            if code != KafkaError.INVALID_REPLICATION_FACTOR or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run(opts: Options, say=print) -> dict:
    """Run one campaign; returns the report (a dict, JSON-ready)."""
    base = os.path.abspath(opts.data_dir or tempfile.mkdtemp(prefix="kafka-ref-chaos-"))
    os.makedirs(base, exist_ok=True)
    if opts.kraft:
        launcher = ("-m", "kafka_ref.cli")
        if opts.mutant is not None:
            launcher = ("-m", "kafka_ref.conformance.mutant_broker", "--mutant", opts.mutant)
        cluster = KRaftChaosCluster(
            base, {**BROKER_CONFIGS, **opts.configs}, opts.session_timeout_ms, TOPIC, launcher
        )
    else:
        cluster = ChaosCluster(base, opts.configs, opts.session_timeout_ms, opts.mutant)
    t0 = time.monotonic()

    def now() -> float:
        return time.monotonic() - t0

    say(f"chaos: seed {opts.seed}, data in {base}")
    try:
        cluster.start()
        say(f"chaos: cluster up, bootstrap {cluster.bootstrap}")
        create_topic(cluster.bootstrap, opts.partitions)
        cluster.partitions = opts.partitions

        def whole() -> bool:
            return cluster.whole(opts.partitions, MIN_ISR)

        if not liveness.wait_whole(whole, 60):
            raise RuntimeError("the topic's partitions did not get leaders and full ISRs")
        history = History()
        nemesis = Nemesis(cluster, opts.seed, opts.kinds, now=now, say=say)
        sampler = liveness.WholeSampler(
            whole,
            lambda: nemesis.active is None,
            now,
            dead=lambda: cluster.dead_in_isr(opts.partitions),
        ).start()
        controllers = liveness.ControllerSampler(cluster.controller, now).start()
        producer = ProducerWorkload(
            cluster.bootstrap, TOPIC, opts.partitions, opts.rate, history, now
        ).start()
        consumers = [
            GroupConsumer(
                f"consumer-{k}", cluster.bootstrap, TOPIC, f"{TOPIC}-group", history
            ).start()
            for k in (1, 2)
        ]
        if not liveness.wait_whole(lambda: producer.acks, 60):
            raise RuntimeError("no write was acknowledged in 60 s before any fault")
        say(f"chaos: workload running; nemesis: {', '.join(opts.kinds)}")
        nemesis.run(opts.faults, None if opts.duration is None else now() + opts.duration)
        say(f"chaos: {len(nemesis.log)} faults done at {now():.0f}s; healing")
        healed = liveness.wait_whole(whole, 120)
        time.sleep(5)  # the workload goes on for a while on the whole cluster
        producer.close(flush_s=120)
        stopped = now()
        for consumer in consumers:
            consumer.close()
        sampler.close()
        controllers.close()
        for fault in nemesis.log:
            if fault.was_controller:  # None: it stayed controller through the fault
                fault.failover = controllers.failover(fault)
        ends, read_all = final_read(cluster.bootstrap, TOPIC, opts.partitions, history)
        result = check(history)
        liveness.measure(nemesis.log, sampler, producer.acks)
        gaps = liveness.gaps(producer.acks, sampler.samples, producer.first_send or 0.0, stopped)
        report = _report(
            opts, base, history, result, nemesis.log, producer, consumers, gaps, ends, healed, now()
        )
        report["stale_isr"] = liveness.stale_isr(sampler.dead_samples)
        if not read_all:
            report["valid"] = False
            report["reasons"].append("the final read did not reach every high watermark")
        return report
    finally:
        cluster.close()


def _verdict(
    opts: Options,
    anomalies: dict,
    missing: list,
    final_order: list,
    faults: list,
    gaps: list[dict],
    healed: bool,
    fatal: list[str],
) -> list[str]:
    """Why the campaign is invalid (CHAOS-1, CHAOS-2); empty when it is valid."""
    reasons = [f"{kind}: {anomalies[kind]}" for kind in SAFETY if kind in anomalies]
    if fatal:  # the broker's log lost batches the idempotent producer had been told were written
        reasons.append(f"the idempotent producer's fatal errors: {len(fatal)} ({fatal[0]})")
    if missing:
        reasons.append(f"acknowledged but absent from the final read: {len(missing)}")
    if final_order:
        reasons.append(f"the final read is out of order {len(final_order)} times")
    for f in faults:
        if f.window is None:
            reasons.append(
                f"fault {f.n} ({f.kind} {f.broker}): never whole again, or no "
                "acknowledgement after it was"
            )
        elif f.window > opts.max_window:
            reasons.append(
                f"fault {f.n} ({f.kind} {f.broker}): no acknowledgement for "
                f"{f.window:.1f}s after the cluster was whole"
            )
    for g in gaps:
        if g["whole_seconds"] > opts.max_window:
            reasons.append(
                f"no acknowledgement from {g['from']:.0f}s to {g['to']:.0f}s, "
                f"{g['whole_seconds']:.0f}s of it whole and quiet"
            )
    if not healed:
        reasons.append("the cluster was not whole 120 s after the last fault")
    return reasons


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 2)


def _report(
    opts, base, history, result, faults, producer, consumers, gaps, ends, healed, elapsed
) -> dict:
    final_values = {
        (k, v)
        for op in history.ops
        if isinstance(op, Poll) and op.process == "final"
        for k, pairs in op.reads.items()
        for _, v in pairs
    }
    acked = [op for op in history.ops if getattr(op, "status", None) == "ok"]
    missing = sorted((op.key, op.value) for op in acked if (op.key, op.value) not in final_values)
    anomalies = {kind: len(found) for kind, found in result.anomalies.items() if found}
    final_order = [
        a
        for kind in ("poll-skip", "nonmonotonic-poll")
        for a in result.anomalies.get(kind, [])
        if a["process"] == "final"
    ]
    windows = [f for f in faults if f.window is not None]
    worst = sorted(windows, key=lambda f: -f.window)[:5]
    reasons = _verdict(opts, anomalies, missing, final_order, faults, gaps, healed, producer.fatal)
    return {
        "seed": opts.seed,
        "faults": len(faults),
        "kinds": list(opts.kinds),
        "configs": opts.configs,
        "rate": opts.rate,
        "partitions": opts.partitions,
        "session_timeout_ms": opts.session_timeout_ms,
        "elapsed_s": round(elapsed, 1),
        "data_dir": base,
        "mutant": opts.mutant,
        "kraft": opts.kraft,
        "sent": producer.sent,
        "acked": len(acked),
        "unknown": producer.unknown,
        "unanswered": producer.unanswered,
        "producer_fatal": producer.fatal,
        "producer_errors": dict(producer.errors),
        "high_watermarks": ends,
        "anomalies": anomalies,
        "examples": {k: [repr(a) for a in v[:5]] for k, v in result.anomalies.items() if v},
        "lost": len(missing),
        "lost_examples": missing[:20],
        "group": _group_figures(history, consumers),
        "max_window_s": round(max((f.window for f in windows), default=0.0), 2),
        "controller_failovers": [
            {"fault": f.n, "kind": f.kind, "seconds": _rounded(f.failover)}
            for f in faults
            if f.was_controller
        ],
        "worst_windows": [dataclasses.asdict(f) | {"window": round(f.window, 2)} for f in worst],
        "gaps": gaps[:10],
        "fault_log": [dataclasses.asdict(f) | {"window": f.window} for f in faults],
        "valid": not reasons,
        "reasons": reasons,
    }
