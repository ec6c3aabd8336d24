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
   replicates; LeaderAndIsr and UpdateMetadata for every state that changed
   (partition_states.py); and when a broker left, UpdateMetadata to every live broker,
   with the new states if there are any (Kafka: `onBrokerFailure`).

`BrokerChangeHandler` is constructed with what it uses: the two registration reads of
ZooKeeper, the controller's context, the channel's list of brokers to connect to, the
partition state machine (elections), and the event's request batch with a way to send it
at once (step 1 leaves before the LeaderAndIsr of step 3).

Rules: CTRL-6, CTRL-7, CTRL-21, CTRL-31, CTRL-32.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from kafka_ref.cluster.controller_channel import ControllerBrokerRequestBatch
from kafka_ref.cluster.controller_context import ControllerContext
from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.cluster.partition_states import PartitionStateMachine

logger = logging.getLogger("kafka_ref.cluster.controller")


class BrokerRegistrations(Protocol):
    """The children of `/brokers/ids` and each one's registration (`KafkaZkClient`)."""

    def get_broker_ids(self) -> list[int]: ...

    def get_broker_and_epoch(self, broker_id: int) -> tuple[BrokerEndpoint, int] | None: ...


class BrokerConnections(Protocol):
    """The brokers the controller sends to (`ControllerChannelManager`)."""

    def add_broker(self, endpoint: BrokerEndpoint) -> None: ...

    def remove_broker(self, broker_id: int) -> None: ...


class BrokerChangeHandler:
    """The controller's answer to a change of `/brokers/ids` (Kafka: `BrokerChange`)."""

    def __init__(
        self,
        zk: BrokerRegistrations,
        context: ControllerContext,
        channel: BrokerConnections,
        partitions: PartitionStateMachine,
        batch: Callable[[], ControllerBrokerRequestBatch],
        send_now: Callable[[], None],
    ) -> None:
        self.zk = zk
        self.context = context
        self.channel = channel
        self.partitions = partitions
        self.batch = batch  # the requests of the event being handled
        self.send_now = send_now  # sends them before the event's later ones

    def on_broker_change(self) -> None:
        context = self.context
        live = {}
        for broker_id in self.zk.get_broker_ids():
            found = self.zk.get_broker_and_epoch(broker_id)
            if found is not None:
                live[broker_id] = found
        known = context.live
        bounced = {b for b in live.keys() & known.keys() if live[b][1] != known[b][1]}
        gone = (known.keys() - live.keys()) | bounced
        born = (live.keys() - known.keys()) | bounced
        context.live = live
        if gone or born:
            logger.info(
                "controller %d: brokers %s left, %s joined; live %s",
                context.broker_id,
                sorted(gone),
                sorted(born),
                sorted(live),
            )
        for broker_id in gone | born:  # a new registration's LeaderAndIsr answers anew
            context.offline_replicas.pop(broker_id, None)
        for broker_id in gone - born:
            self.channel.remove_broker(broker_id)
        for broker_id in sorted(born):
            self.channel.add_broker(live[broker_id][0])
        if born:  # 1. everyone learns the live brokers; the new ones every state
            self.batch().add_update_metadata(live.keys() - born, [])
            self.batch().add_update_metadata(born, (context.current(tp) for tp in context.states))
            self.send_now()  # before the LeaderAndIsr below (Kafka: onBrokerStartup)
        for topic in sorted(context.assignments):  # 2. partitions whose replicas were all away
            self.partitions.initialize_partitions(topic)
        for tp in sorted(context.states):
            self.partitions.elect_if_needed(tp)
        for tp in sorted(context.states):  # 3. what each new registration replicates
            state = context.current(tp)
            self.batch().add_leader_and_isr(born & set(state.replicas), state)
        if gone - born:  # every broker learns who left, with the new states if any
            self.batch().add_update_metadata(live, [])
