"""The fault campaign's KRaft cluster: three combined nodes behind proxies (the nemesis'
target, as campaign.py's `ChaosCluster` is on ZooKeeper).

Each node is `kafka-ref broker server.properties` with `process.roles=broker,controller`
(tools/cluster.py `KRaftNodeProcess`). Both of its listeners sit behind a cuttable proxy
(proxy.py): clients and the other brokers reach its broker through one (its advertised
listener is the proxy's port), the other controllers and the brokers' heartbeats reach its
controller through the other (`controller.quorum.voters` names the proxies). So the nemesis
can isolate a node from its peers (`partition-peers`, both kinds of traffic) or from the
quorum only (`partition-controller`: its controller cut off from the others, and its broker
from the active controller).

Whether the cluster is whole is asked of the cluster itself, over direct connections that
no fault cuts: the topic's partitions from a live broker's Metadata (leader and ISR; its
brokers are the unfenced ones, so a fenced broker is not live), the active controller from
the quorum's DescribeQuorum. That is the metadata the active controller committed, as a
broker has replayed it: within milliseconds of the controller's own.
"""

from __future__ import annotations

import os
import signal
import time

from kafka_ref.client.connection import BrokerConnection
from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.conformance.nemesis import restart
from kafka_ref.conformance.proxy import Proxy, socket_owner
from kafka_ref.protocol.messages import ApiKey, DescribeQuorumRequest, MetadataRequest
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC
from kafka_ref.tools.cluster import KRaftNodeProcess
from kafka_ref.tools.server_process import free_port

NODES = (1, 2, 3)


class KRaftChaosCluster:
    """Nodes 1-3, each broker and controller, behind proxies; the nemesis' target."""

    def __init__(
        self,
        base: str,
        configs: dict[str, object],
        session_timeout_ms: int,
        topic: str,
        launcher: tuple[str, ...] = ("-m", "kafka_ref.cli"),
    ) -> None:
        self.base = base
        self.topic = topic
        self.proxies: dict[int, Proxy] = {}  # clients and brokers -> node i's broker
        self.controller_proxies: dict[int, Proxy] = {}  # controllers -> node i's controller
        ports = {i: free_port() for i in NODES}
        controller_ports = {i: free_port() for i in NODES}
        for i in NODES:
            self.proxies[i] = Proxy(ports[i], identify=self._identify)
            self.controller_proxies[i] = Proxy(controller_ports[i], identify=self._identify)
        voters = {i: self.controller_proxies[i].port for i in NODES}
        cluster_id = new_cluster_id()
        self.nodes: dict[int, KRaftNodeProcess] = {}
        for i in NODES:
            node_configs = {
                **configs,
                "broker.session.timeout.ms": session_timeout_ms,
                "broker.heartbeat.interval.ms": max(session_timeout_ms // 6, 100),
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.proxies[i].port}",
            }
            node = KRaftNodeProcess(
                i,
                os.path.join(base, f"node-{i}"),
                cluster_id,
                voters,
                port=ports[i],
                configs=node_configs,
                launcher=launcher,
                controller_port=controller_ports[i],
            )
            self.nodes[i] = node
        self.controller_ports = controller_ports  # direct, for the observer
        self.paused: set[int] = set()
        self.partitions = 0  # of the topic, once created

    def start(self) -> KRaftChaosCluster:
        for node in self.nodes.values():  # each broker waits for a quorum: launch them all
            node.launch()
        for node in self.nodes.values():
            node.wait_listening(timeout=90)
        return self

    def _identify(self, peer_port: int, server_port: int):
        pids = {n.pid: i for i, n in self.nodes.items() if n.alive}
        return socket_owner(peer_port, server_port, pids)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p.port}" for p in self.proxies.values())

    def close(self) -> None:
        for i in list(self.paused):
            os.kill(self.nodes[i].pid, signal.SIGCONT)
        for proxy in self._all_proxies():
            proxy.heal()
        for node in self.nodes.values():
            if node.alive:
                node.proc.send_signal(signal.SIGTERM)
        for node in self.nodes.values():
            node.stop()
        for proxy in self._all_proxies():
            proxy.close()

    def _all_proxies(self) -> list[Proxy]:
        return [*self.proxies.values(), *self.controller_proxies.values()]

    # ------------------------------------------------------------------ the cluster's view
    def _live_nodes(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.alive and i not in self.paused]

    def _metadata(self):
        """The topic's partitions and the live brokers, from the first live broker that
        answers (directly, past the proxies)."""
        for i in self._live_nodes():
            connection = BrokerConnection(
                "127.0.0.1",
                self.nodes[i].port,
                client_id="chaos",
                request_timeout_ms=5000,
                connect_timeout_ms=1000,
            )
            try:
                connection.connect()
                request = MetadataRequest(
                    topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)],
                    allow_auto_topic_creation=False,
                )
                return connection.request(ApiKey.METADATA, request, timeout_s=5)
            except Exception:  # this node cannot answer now: ask the next
                continue
            finally:
                connection.close()
        return None

    def whole(self, partitions: int, min_isr: int) -> bool:
        """Every partition has a live leader and at least `min_isr` replicas in its ISR."""
        answer = self._metadata()
        if answer is None:
            return False
        live = {b.node_id for b in answer.brokers}
        topic = next((t for t in answer.topics if t.name == self.topic), None)
        if topic is None or topic.error_code or len(topic.partitions) < partitions:
            return False
        return all(p.leader_id in live and len(p.isr_nodes) >= min_isr for p in topic.partitions)

    def dead_in_isr(self, partitions: int) -> frozenset[tuple[int, int]]:
        """(partition, broker) for every ISR member that is not a live (unfenced) broker."""
        answer = self._metadata()
        if answer is None:
            return frozenset()
        live = {b.node_id for b in answer.brokers}
        found = set()
        for topic in answer.topics:
            for p in topic.partitions:
                found |= {(p.partition_index, b) for b in p.isr_nodes if b not in live}
        return frozenset(found)

    # ------------------------------------------------------------------ the nemesis' target
    def broker_ids(self) -> list[int]:
        return list(NODES)

    def controller(self) -> int | None:
        """The active controller: the node whose controller answers DescribeQuorum as the
        quorum's leader (KIP-595: only the leader does). None while no node does, as when
        the leader is paused and the others have not yet elected another."""
        request = DescribeQuorumRequest(
            topics=[
                DescribeQuorumRequest.TopicData(
                    topic_name=METADATA_TOPIC,
                    partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)],
                )
            ]
        )
        for i in self._live_nodes():
            connection = BrokerConnection(
                "127.0.0.1",
                self.controller_ports[i],
                client_id="chaos",
                request_timeout_ms=1000,
                connect_timeout_ms=1000,
            )
            try:
                connection.connect()
                answer = connection.request(ApiKey.DESCRIBE_QUORUM, request, timeout_s=1)
            except Exception:  # down, paused or cut: ask the next
                continue
            finally:
                connection.close()
            partition = answer.topics[0].partitions[0]
            if partition.error_code == 0:
                return partition.leader_id
        return None

    def leaders(self) -> list[int]:
        answer = self._metadata()
        if answer is None:
            return []
        return [p.leader_id for t in answer.topics for p in t.partitions if p.leader_id >= 0]

    def start_fault(self, kind: str, node: int) -> str:
        started = time.monotonic()
        if kind == "kill":
            self.nodes[node].stop(signal.SIGKILL)
        elif kind == "term":
            code = self.nodes[node].stop(signal.SIGTERM, timeout=60)
            return f"exited with code {code} in {time.monotonic() - started:.1f}s"
        elif kind == "pause":
            os.kill(self.nodes[node].pid, signal.SIGSTOP)
            self.paused.add(node)
        elif kind in ("partition-peers", "partition-controller"):
            others = {i for i in NODES if i != node}
            proxies = [self.controller_proxies]
            if kind == "partition-peers":
                proxies.append(self.proxies)
            for kind_of in proxies:
                kind_of[node].cut(others)
                for i in others:
                    kind_of[i].cut({node})
        return ""

    def stop_fault(self, kind: str, node: int) -> str:
        if kind in ("kill", "term"):
            return self.restart(node)
        if kind == "pause":
            os.kill(self.nodes[node].pid, signal.SIGCONT)
            self.paused.discard(node)
        elif kind in ("partition-peers", "partition-controller"):
            for proxy in self._all_proxies():
                proxy.heal()
        return ""

    def restart(self, node: int) -> str:
        return restart(self.nodes[node])
