"""Brokers that come and go, as the controller sees them (Kafka: `BrokerChange`).

Who is alive is what `/brokers/ids` holds: every broker creates its ephemeral
`/brokers/ids/<id>` when it registers, and ZooKeeper deletes it when the broker's session
ends (CTRL-1). The active controller is the only broker that watches those children; on
every change it reads them with each registration's czxid, the *broker epoch* (KIP-380), and
compares with the brokers it knew:

* **gone**: no longer registered;
* **born**: newly registered;
* **bounced**: registered both times, under a new broker epoch (a restart or an expired
  session between two reads). It counts as both gone and born: its new registration
  knows nothing of what the controller told the old one.

Then, in Kafka's order (`onBrokerStartup`, then `onBrokerFailure`):

1. **Tell everyone who registered.** The new brokers get, before anything else, an
   UpdateMetadata with the live brokers and every partition's state, so that they answer
   Metadata from the controller's word only, and their replica fetchers find every leader's
   address before a LeaderAndIsr makes them follow it; the other brokers get the new live
   list (CTRL-21, CTRL-31, CTRL-32). No broker but the controller watches `/brokers/ids`:
   this is how every broker learns who registered, and, with the UpdateMetadata of step 3,
   who left.
2. **Elect.** For every partition whose leader left, a new leader from the live ISR, or from
   any live replica when `unclean.leader.election.enable` is true for the topic (CTRL-6);
   partitions that keep their leader drop the dead brokers from their ISR. Every change
   writes a new state znode with `leader_epoch + 1` (CTRL-7; in ZooKeeper mode Kafka bumps
   the epoch on ISR shrinks too, `LeaderAndIsr.newLeaderAndIsr`). A partition with no live
   candidate goes *offline* (leader -1) and keeps its last ISR member, so that it comes back
   cleanly when that broker returns; partitions none of whose replicas was live get their
   first state when one registers.
3. **Tell the replicas.** LeaderAndIsr to each new broker for every partition it
   replicates; LeaderAndIsr and UpdateMetadata for every state that changed (the
   controller's `_announce`); and when a broker left, UpdateMetadata to every live broker,
   with the new states if there are any (Kafka: `onBrokerFailure`).

Rules: CTRL-6, CTRL-7, CTRL-21, CTRL-31, CTRL-32.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError

from kafka_ref.cluster.election import NO_LEADER, next_state
from kafka_ref.common import TopicPartition

logger = logging.getLogger("kafka_ref.cluster.controller")


class BrokerChangeHandling:
    """The controller's answer to a change of `/brokers/ids` (a mixin of KafkaController)."""

    def _handle_broker_change(self: Any) -> None:
        if not self.active:
            return
        live = {}
        for broker_id in self.zk.get_broker_ids():
            found = self.zk.get_broker_and_epoch(broker_id)
            if found is not None:
                live[broker_id] = found
        bounced = {b for b in live.keys() & self.live.keys() if live[b][1] != self.live[b][1]}
        gone = (self.live.keys() - live.keys()) | bounced
        born = (live.keys() - self.live.keys()) | bounced
        self.live = live
        if gone or born:
            logger.info(
                "controller %d: brokers %s left, %s joined; live %s",
                self.broker_id,
                sorted(gone),
                sorted(born),
                sorted(live),
            )
        for broker_id in gone | born:  # a new registration's LeaderAndIsr answers anew
            self.offline_replicas.pop(broker_id, None)
        for broker_id in gone - born:
            self.channel.remove_broker(broker_id)
        for broker_id in sorted(born):
            self.channel.add_broker(live[broker_id][0])
        if born:  # 1. everyone learns the live brokers; the new ones every state
            self.batch.add_update_metadata(live.keys() - born, [])
            self.batch.add_update_metadata(born, (self._current(tp) for tp in self.states))
            self._send_batch()  # before the LeaderAndIsr below (Kafka: onBrokerStartup)
            self._batch = None
        for topic in sorted(self.assignments):  # 2. partitions whose replicas were all away
            self._initialize_partitions(topic)
        for tp in sorted(self.states):
            self._elect_if_needed(tp)
        for tp in sorted(self.states):  # 3. what each new registration replicates
            state = self._current(tp)
            self.batch.add_leader_and_isr(born & set(state.replicas), state)
        if gone - born:  # every broker learns who left, with the new states if any
            self.batch.add_update_metadata(live, [])

    def _elect_if_needed(self: Any, tp: TopicPartition, retries: int = 3) -> None:
        started = time.monotonic_ns()
        state, version = self.states[tp]
        unclean = self.unclean_for(tp[0], self.configs.get(tp[0], {}))
        new = next_state(state, self.live_for(tp), unclean=unclean, controller_epoch=self.epoch)
        if new is None:
            return
        try:
            version = self.zk.update_partition_state(new, version, self.epoch_zk_version)
        except BadVersionError:  # the state changed under us (e.g. the leader's ISR update)
            current = self.zk.get_partition_state(*tp, state.replicas)
            if current is None or retries == 0:
                return
            self.states[tp] = current
            self._elect_if_needed(tp, retries - 1)
            return
        except NoNodeError:  # the topic is being deleted
            return
        self.states[tp] = (new, version)
        self._announce(tp)
        if new.leader not in (state.leader, NO_LEADER):  # elected, not only an ISR trimmed
            self.election_timer.observe((time.monotonic_ns() - started) / 1e6)
        logger.info(
            "controller %d: %s-%d leader %d -> %d, leader epoch %d, isr %s",
            self.broker_id,
            tp[0],
            tp[1],
            state.leader,
            new.leader,
            new.leader_epoch,
            list(new.isr),
        )
