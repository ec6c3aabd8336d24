"""The scrape: one broker's metrics as Prometheus metric families, under Kafka's names.

Kafka publishes its metrics as JMX MBeans (`kafka.server:type=ReplicaManager,
name=UnderReplicatedPartitions`); operators usually scrape them through the Prometheus JMX
exporter, whose example Kafka rule set (`example_configs/kafka-2_0_0.yml` in
prometheus/jmx_exporter, with `lowercaseOutputName: true`) turns each MBean into a metric
name. kafka-ref serves the names those rules produce, so a dashboard built for a Kafka
broker works on this one. The rules, and what they give:

* a meter `kafka.<domain><type=T, name=XPerSec, k=v><>Count` becomes the counter
  `kafka_<domain>_<t>_<x>_total{k="v"}` (the "PerSec" dropped: Prometheus computes rates):
  `kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=t>` ->
  `kafka_server_brokertopicmetrics_messagesin_total{topic="t"}`; the all-topics meter has
  no `topic` label;
* a gauge `kafka.<domain><type=T, name=N, k=v><>Value` becomes `kafka_<domain>_<t>_<n>{k="v"}`:
  `kafka_server_replicamanager_underreplicatedpartitions`,
  `kafka_log_log_size{topic="t",partition="0"}`; `kafka.coordinator.group<type=T, name=N>`
  becomes `kafka_coordinator_group_<t>_<n>`;
* a histogram or timer `kafka.<domain><type=T, name=N, k=v>` becomes
  `kafka_<domain>_<t>_<n>_count` and one gauge per percentile; here it is a Prometheus
  histogram of the same name (`_count`, `_sum` and `_bucket`, from which
  `histogram_quantile` computes any percentile): `kafka_network_requestmetrics_totaltimems`;
* `kafka.server<type=socket-server-metrics, listener=L>` (`connection-count`) and
  `kafka.server<type=group-coordinator-metrics>` (`offset-commit-count`) match no rule of
  that set; they carry the names the exporter gives a bean no rule matches:
  `kafka_server_socket_server_metrics_connection_count{listener="L"}`,
  `kafka_server_socket_server_metrics_connection_refused_total{listener="L",limit="..."}`
  (kafka-ref's own, in that group: Kafka only logs a refused connection),
  `kafka_server_group_coordinator_metrics_offset_commit_count`.

Counters are bumped as things happen (kafka_ref/metrics/recorders.py); gauges that a state
already holds (partition counts, log sizes, groups by state) are computed here, at scrape
time, instead of being kept up to date on every append. The broker's state belongs to its
event loop, so the scrape (on the HTTP server's thread) runs the reading on the loop and
waits for it: it sees a consistent picture and the append path pays nothing for it.

Rules: MET-1..MET-6, QUOTA-12.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    UnknownMetricFamily,
)
from prometheus_client.registry import Collector

from kafka_ref.metrics.recorders import STAGES, LatencyHistogram, LoopIdleMeter

SCRAPE_TIMEOUT_S = 5.0
NO_LEADER = -1

# BrokerTopicMetrics meter (Kafka's name without "PerSec") -> TopicStats attribute
TOPIC_METERS = {
    "MessagesIn": "messages_in",
    "BytesIn": "bytes_in",
    "BytesOut": "bytes_out",
    "TotalProduceRequests": "total_produce",
    "FailedProduceRequests": "failed_produce",
    "TotalFetchRequests": "total_fetch",
    "FailedFetchRequests": "failed_fetch",
}
GROUP_STATES = ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead")


def _gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, value=value)


def _histogram(name: str, help_text: str, timer: LatencyHistogram) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, help_text, buckets=timer.cumulative(), sum_value=timer.sum)


class BrokerCollector(Collector):
    """Reads one broker's state at scrape time (a prometheus_client custom collector)."""

    def __init__(self, broker: Any, loop: asyncio.AbstractEventLoop, idle: LoopIdleMeter) -> None:
        self.broker, self.loop, self.idle = broker, loop, idle

    def describe(self) -> list[Metric]:
        return []  # known only at scrape time: keeps registration from collecting

    def collect(self) -> Iterator[Metric]:
        if self.loop.is_closed() or not self.broker.started:
            return iter(())
        future = asyncio.run_coroutine_threadsafe(self._read(), self.loop)
        return iter(future.result(SCRAPE_TIMEOUT_S))

    async def _read(self) -> list[Metric]:
        return [
            *self._topic_metrics(),
            *self._request_metrics(),
            *self._replica_manager(),
            *self._controller(),
            *self._groups(),
            *self._network(),
            *self._logs(),
            *self._quotas(),
        ]

    def _topic_metrics(self) -> Iterator[Metric]:
        stats = self.broker.replica_manager.topic_stats
        for meter, attribute in TOPIC_METERS.items():
            family = CounterMetricFamily(
                f"kafka_server_brokertopicmetrics_{meter.lower()}",
                f"BrokerTopicMetrics {meter}PerSec: per topic, and for all topics without "
                "a topic label",
                labels=["topic"],
            )
            family.add_metric([], getattr(stats.all_topics, attribute))
            for topic, topic_stats in sorted(stats.topics.items()):
                family.add_metric([topic], getattr(topic_stats, attribute))
            yield family

    def _request_metrics(self) -> Iterator[Metric]:
        metrics = self.broker.socket_server.request_metrics
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "RequestMetrics RequestsPerSec: requests answered, by type and version",
            labels=["request", "version"],
        )
        for (name, version), count in sorted(metrics.requests.items()):
            requests.add_metric([name, str(version)], count)
        yield requests
        for i, stage in enumerate(STAGES):
            family = HistogramMetricFamily(
                f"kafka_network_requestmetrics_{stage.lower()}",
                f"RequestMetrics {stage}: milliseconds per request, by type",
                labels=["request"],
            )
            for name, timers in sorted(metrics.stages.items()):
                family.add_metric([name], timers[i].cumulative(), timers[i].sum)
            yield family

    def _replica_manager(self) -> Iterator[Metric]:
        manager = self.broker.replica_manager
        leaders = [p for p in manager.partitions.values() if p.is_leader]
        prefix = "kafka_server_replicamanager_"
        hosted = len(manager.partitions)
        yield _gauge(prefix + "partitioncount", "Partitions on this broker", hosted)
        yield _gauge(prefix + "leadercount", "Partitions this broker leads", len(leaders))
        yield _gauge(
            prefix + "underreplicatedpartitions",
            "Led partitions whose ISR is smaller than their replica set",
            sum(1 for p in leaders if len(p.isr) < len(p.replicas)),
        )
        yield _gauge(
            prefix + "underminisrpartitioncount",
            "Led partitions whose ISR is below min.insync.replicas",
            sum(1 for p in leaders if len(p.isr) < p.min_insync_replicas),
        )
        yield CounterMetricFamily(prefix + "isrshrinks", "ISR shrinks", value=manager.isr_shrinks)
        yield CounterMetricFamily(prefix + "isrexpands", "ISR expands", value=manager.isr_expands)

    def _controller(self) -> Iterator[Metric]:
        zk_mode = self.broker.zk_mode
        controller = None if zk_mode is None else zk_mode.kafka_controller
        if zk_mode is None:  # one broker: it is its own (combined-mode) controller
            active, offline = 1, 0
        elif controller is None or not controller.active:
            active, offline = 0, 0
        else:
            states = [state for state, _version in list(controller.context.states.values())]
            live = set(controller.context.live)
            active = 1
            offline = sum(1 for s in states if s.leader == NO_LEADER or s.leader not in live)
        prefix = "kafka_controller_kafkacontroller_"
        yield _gauge(prefix + "activecontrollercount", "1 on the active controller", active)
        yield _gauge(prefix + "offlinepartitionscount", "Partitions without a live leader", offline)
        if controller is not None:
            yield _histogram(
                "kafka_controller_controllerstats_leaderelectionrateandtimems",
                "ControllerStats LeaderElectionRateAndTimeMs: milliseconds per election",
                controller.election_timer,
            )

    def _groups(self) -> Iterator[Metric]:
        manager = self.broker.groups.coordinator.manager
        groups = manager.current_groups()
        prefix = "kafka_coordinator_group_groupmetadatamanager_"
        yield _gauge(prefix + "numgroups", "Groups this coordinator holds", len(groups))
        by_state = dict.fromkeys(GROUP_STATES, 0)
        for group in groups:
            by_state[group.state.wire_name] += 1
        for state, count in by_state.items():
            yield _gauge(prefix + f"numgroups{state.lower()}", f"Groups in state {state}", count)
        offsets = sum(len(g.offsets) for g in groups)
        yield _gauge(prefix + "numoffsets", "Committed offsets held", offsets)
        yield UnknownMetricFamily(
            "kafka_server_group_coordinator_metrics_offset_commit_count",
            "Offsets committed (group-coordinator-metrics offset-commit-count)",
            value=manager.offset_commits,
        )

    def _network(self) -> Iterator[Metric]:
        server = self.broker.socket_server
        connections = GaugeMetricFamily(
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections, per listener",
            labels=["listener"],
        )
        counts = {acceptor.listener.name: 0 for acceptor in server.acceptors}
        for connection in server.connections:
            counts[connection.listener.name] += 1
        for listener, count in counts.items():
            connections.add_metric([listener], count)
        yield connections
        refused = CounterMetricFamily(
            "kafka_server_socket_server_metrics_connection_refused",
            "Connections closed at once for being over a connection quota, per listener and "
            "limit (kafka-ref's own; Kafka logs them)",
            labels=["listener", "limit"],
        )
        for (listener, limit), count in sorted(server.quotas.refused.items()):
            refused.add_metric([listener, limit], count)
        yield refused
        pool = server.memory_pool
        yield _gauge(
            "kafka_network_socketserver_memorypoolavailable",
            "Bytes left in the request memory pool (queued.max.request.bytes)",
            pool.available,
        )
        yield _gauge(
            "kafka_network_socketserver_memorypoolused",
            "Bytes of the request memory pool held by requests",
            pool.used,
        )
        yield _gauge(
            "kafka_network_requestchannel_requestqueuesize",
            "Requests waiting for a handler worker",
            server.request_channel.size,
        )
        idle = self.idle.idle_fraction()
        if idle is not None:
            yield _gauge(
                "kafka_network_socketserver_networkprocessoravgidlepercent",
                "Fraction of time since the last scrape the event loop waited for sockets",
                idle,
            )

    def _quotas(self) -> Iterator[Metric]:
        """Per quota type and sensor key: the measured rate and the average throttle time
        (`kafka.server:type=Produce|Fetch|Request,user=U,client-id=C`, QUOTA-12)."""
        labels = ["resource", "user", "clientId"]
        throttle = GaugeMetricFamily(
            "kafka_server_quota_throttle_time", "Average throttle time in ms", labels=labels
        )
        rates = {
            "byte-rate": GaugeMetricFamily(
                "kafka_server_quota_byte_rate",
                "Bytes per second, as the quota measures it",
                labels=labels,
            ),
            "request-time": GaugeMetricFamily(
                "kafka_server_quota_request_time",
                "Request handler time, percent of a second, as the quota measures it",
                labels=labels,
            ),
        }
        now_ms = self.broker.clock.milliseconds()
        for manager in self.broker.apis.quotas.all:
            rate = rates["request-time" if manager.quota_type == "Request" else "byte-rate"]
            for user, client_id, value, throttle_ms in manager.metrics(now_ms):
                rate.add_metric([manager.quota_type, user, client_id], value)
                throttle.add_metric([manager.quota_type, user, client_id], throttle_ms)
        yield throttle
        yield from rates.values()

    def _logs(self) -> Iterator[Metric]:
        log_manager = self.broker.log_manager
        yield _histogram(
            "kafka_log_logflushstats_logflushrateandtimems",
            "LogFlushStats LogFlushRateAndTimeMs: milliseconds per log flush",
            log_manager.flush_timer,
        )
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Log size in bytes", labels=labels)
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=labels)
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=labels)
        for (topic, partition), log in sorted(log_manager.logs.items()):
            key = [topic, str(partition)]
            size.add_metric(key, log.size_in_bytes)
            end.add_metric(key, log.log_end_offset)
            start.add_metric(key, log.log_start_offset)
        yield from (size, end, start)
