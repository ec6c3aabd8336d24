"""The simulator's controller: a tiny stand-in for Kafka's ZooKeeper-mode `KafkaController`.

It holds what ZooKeeper holds for each partition (`/brokers/topics/<t>/partitions/<p>/state`:
leader, leader epoch, ISR, and the znode version) and reacts to brokers coming and going:

* **a broker's session expires** (it crashed `session_timeout_ms` ago, or shut down
  cleanly, which closes its session at once): it leaves every ISR; partitions it led get a
  new leader from kafka_ref/cluster/election.py (unclean only if enabled). Every change
  bumps the leader epoch, as Kafka's controller does in ZooKeeper mode.
* **a broker registers** (starts): it gets the state of its partitions, and a partition
  with no leader gets one if it can now be elected. A broker that restarts *before* its
  old session expired is the case of KIP-101 Scenario 1: the controller never saw it die,
  so it stays in the ISRs it was in; partitions it led get a new epoch, so that nobody
  keeps following the process that died (KIP-380 later made Kafka's controller treat
  every such bounce as a failure).
* **AlterIsr** from a leader: applied only if the leader's epoch and the state's version
  are current and every new member is alive (Kafka's AlterPartition checks); the answer
  carries the new state, or FENCED_LEADER_EPOCH (Kafka: INVALID_UPDATE_VERSION for a
  stale version).

The controller's links are reliable (ZooKeeper stays reachable in these simulations);
its messages still take time, so brokers act on them late and out of step.
"""

from __future__ import annotations

from typing import Any

from kafka_ref.cluster.election import change_with_elr, elect_leader, next_elr
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.replication.messages import AlterIsr, AlterIsrResult, LeaderAndIsr
from kafka_ref.sim.network import SimWorld

CONTROLLER = "controller"


class SimController:
    def __init__(self, cluster: SimWorld, *, eligible_leader_replicas: bool = False) -> None:
        self.cluster = cluster
        self.state: dict[TopicPartition, LeaderAndIsr] = {}
        self.live: set[int] = set()
        self._expiry: dict[int, Any] = {}
        # KIP-966 (the KRaft controller's way): the eligible leader replicas, the last
        # known ones, and the brokers that died without a clean shutdown since they left.
        self.eligible_leader_replicas = eligible_leader_replicas
        self.elr: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._unclean_shutdown: set[int] = set()
        cluster.network.attach(CONTROLLER, self.handle)

    def create_partition(self, tp: TopicPartition, replicas: tuple[int, ...]) -> None:
        self.state[tp] = LeaderAndIsr(tp[0], tp[1], replicas[0], 0, replicas, replicas, 0)
        self.elr[tp] = ((), ())

    # ------------------------------------------------------------------ brokers
    def broker_started(self, broker_id: int) -> None:
        """`broker_id` registered (a fresh start, or a restart before its session expired)."""
        bounced = broker_id in self.live
        timer = self._expiry.pop(broker_id, None)
        if timer is not None:
            timer.cancel()
        self.live.add(broker_id)
        if self.eligible_leader_replicas and broker_id in self._unclean_shutdown:
            self._forget_unclean(broker_id)
        for tp, state in sorted(self.state.items()):
            if broker_id not in state.replicas:
                continue
            if state.leader is None or (bounced and state.leader == broker_id):
                self._elect(tp)
            else:
                self._send(broker_id, state)

    def broker_crashed(self, broker_id: int) -> None:
        """The process died; ZooKeeper notices when its session expires."""
        self._unclean_shutdown.add(broker_id)  # its unflushed records may be gone (ELR-4)
        timeout = self.cluster.config.session_timeout_ms / 1000
        old = self._expiry.pop(broker_id, None)
        if old is not None:
            old.cancel()
        self._expiry[broker_id] = self.cluster.scheduler.schedule(
            timeout, lambda: self.session_expired(broker_id)
        )

    def session_expired(self, broker_id: int) -> None:
        self._expiry.pop(broker_id, None)
        if broker_id not in self.live:
            return
        self.live.discard(broker_id)
        self.cluster.record("session expired", broker_id)
        for tp, state in sorted(self.state.items()):
            if broker_id not in state.replicas:
                continue
            if self.eligible_leader_replicas:
                self._change_with_elr(tp)
            elif state.leader == broker_id:
                self._elect(tp)
            elif broker_id in state.isr:
                # Kafka keeps the last ISR member even when it dies (clean election later).
                isr = tuple(r for r in state.isr if r != broker_id) or state.isr
                self._publish(tp, state.leader, isr)

    # ------------------------------------------------------------------ partitions
    def _elect(self, tp: TopicPartition) -> None:
        if self.eligible_leader_replicas:
            self._change_with_elr(tp)
            return
        state = self.state[tp]
        election = elect_leader(
            state.replicas,
            state.isr,
            self.live,
            unclean_leader_election=self.cluster.log_config.unclean_leader_election_enable,
        )
        if election.unclean:
            self.cluster.record("unclean election", election.leader, tp)
        self._publish(tp, election.leader, election.isr)

    def _change_with_elr(self, tp: TopicPartition, unclean_shutdown: tuple[int, ...] = ()) -> None:
        """Leader, ISR and ELR after the live brokers changed (KIP-966, cluster/election.py)."""
        state = self.state[tp]
        elr, last_known = self.elr[tp]
        change = change_with_elr(
            state.replicas,
            state.leader,
            state.isr,
            elr,
            last_known,
            self.live,
            self.cluster.log_config.min_insync_replicas,
            unclean_leader_election=self.cluster.log_config.unclean_leader_election_enable,
            unclean_shutdown=unclean_shutdown,
        )
        if change.unclean:
            self.cluster.record("unclean election", change.leader, tp)
        if (change.elr, change.last_known_elr) != (elr, last_known):
            self.elr[tp] = (change.elr, change.last_known_elr)
            self.cluster.record("elr", tp, change.elr, change.last_known_elr)
        if (change.leader, change.isr) != (state.leader, state.isr):
            self._publish(tp, change.leader, change.isr)

    def _forget_unclean(self, broker_id: int) -> None:
        """A broker back from an unclean shutdown leaves every ELR (ELR-4)."""
        self._unclean_shutdown.discard(broker_id)
        for tp in sorted(self.state):
            if broker_id in self.elr[tp][0]:
                self._change_with_elr(tp, unclean_shutdown=(broker_id,))

    def _publish(self, tp: TopicPartition, leader: int | None, isr: tuple[int, ...]) -> None:
        old = self.state[tp]
        state = LeaderAndIsr(
            tp[0], tp[1], leader, old.leader_epoch + 1, isr, old.replicas, old.version + 1
        )
        self.state[tp] = state
        self.cluster.record("state", state)
        for broker_id in sorted(self.live & set(state.replicas)):
            self._send(broker_id, state)

    def _send(self, broker_id: int, state: LeaderAndIsr) -> None:
        self.cluster.network.send(CONTROLLER, broker_id, state, reliable=True)

    # ------------------------------------------------------------------ AlterIsr
    def handle(self, src: Any, message: Any) -> None:
        if isinstance(message, AlterIsr):
            self.cluster.network.send(CONTROLLER, src, self.alter_isr(message), reliable=True)

    def alter_isr(self, request: AlterIsr) -> AlterIsrResult:
        state = self.state.get(request.tp)
        fenced = AlterIsrResult(request.topic, request.partition, ErrorCode.FENCED_LEADER_EPOCH)
        if (
            state is None
            or state.leader != request.leader_id
            or state.leader_epoch != request.leader_epoch
            or state.version != request.version
            or not set(request.new_isr) <= self.live
            or request.leader_id not in request.new_isr
        ):
            return fenced
        new = LeaderAndIsr(
            state.topic,
            state.partition,
            state.leader,
            state.leader_epoch,
            request.new_isr,
            state.replicas,
            state.version + 1,
        )
        self.state[request.tp] = new
        self.cluster.record("isr", new)
        if self.eligible_leader_replicas:  # the ISR moved: so does the ELR (ELR-1)
            elr, last_known = self.elr[request.tp]
            self.elr[request.tp] = next_elr(
                state.replicas,
                state.isr,
                new.isr,
                elr,
                last_known,
                self.cluster.log_config.min_insync_replicas,
            )
        return AlterIsrResult(request.topic, request.partition, ErrorCode.NO_ERROR, new)
