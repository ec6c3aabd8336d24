"""A broker's failed log directory, as the controller learns of it (KIP-112, ZooKeeper mode).

A broker with several `log.dirs` (JBOD) keeps running when one of them fails (DUR-16): the
partitions of that directory go offline on it, the others keep serving. But the cluster must
move on too: where the broker led one of those partitions, another replica has to lead, and
the broker must leave their ISRs, or an acks=all produce would wait for a replica that will
never fetch again. The controller decides that, so the broker has to tell it:

1. **The broker writes a notification.** A persistent sequential znode
   `/log_dir_event_notification/log_dir_event_<seq>` holding Kafka's JSON
   `{"version":1,"broker":<id>,"event":1}` (event 1 is LogDirFailure; Kafka:
   `LogDirEventNotificationZNode`, `KafkaZkClient.propagateLogDirEvent`). It names the
   broker only, not the directory nor the partitions.
2. **The controller asks the broker.** It watches the notifications' parent; on a change it
   reads and deletes them, and sends each broker named a LeaderAndIsr with the current state
   of every partition it replicates (Kafka: `KafkaController.onBrokerLogDirFailure`). The
   broker answers KAFKA_STORAGE_ERROR for each partition whose log is in an offline
   directory, NO_ERROR for the others (it applied their epoch already).
3. **The controller takes those replicas offline.** From the answer (Kafka:
   `LeaderAndIsrResponseReceived`, `onReplicasBecomeOffline`) it remembers them; for each
   partition it elects again with that broker not live *for that partition*: a leader on it
   is replaced from the rest of the ISR, a follower on it leaves the ISR (CTRL-6, CTRL-7).
   The broker stays live for its other partitions.

A broker that registers again (a restart, with the directory repaired or not) starts with
no offline replica: its LeaderAndIsr answers tell the truth again.

The functions below are ZooKeeper's side (a kazoo client) and the reading of an answer;
`LogDirFailureHandler` is the controller's part, run on its event thread and constructed
with what it uses: a way to take the pending notifications, the controller's context (where
the offline replicas are kept, for every election to see), the partition state machine
(elections), and the event's request batch.

Rules: CTRL-30.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from kafka_ref.cluster.controller_channel import ControllerBrokerRequestBatch
from kafka_ref.cluster.controller_context import ControllerContext
from kafka_ref.cluster.partition_states import PartitionStateMachine
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey

logger = logging.getLogger("kafka_ref.cluster.log_dir_events")

LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE = 1  # Kafka: LogDirEventNotificationHandler.LogDirFailureEvent


def encode_log_dir_event(broker_id: int) -> bytes:
    """Kafka's `LogDirEventNotificationSequenceZNode.encode`."""
    data = {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE}
    return json.dumps(data, separators=(",", ":")).encode()


def propagate_log_dir_event(zk: Any, broker_id: int) -> str:
    """The broker's notification that a log dir of it failed (a kazoo client); its path."""
    return zk.create(
        f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}",
        encode_log_dir_event(broker_id),
        sequence=True,
        makepath=True,
    )


def watch_log_dir_events(zk: Any, on_change: Callable[[], None]) -> None:
    """Call `on_change` whenever the notifications change (a kazoo client)."""
    zk.ensure_path(LOG_DIR_EVENT_NOTIFICATION)
    ChildrenWatch(zk, LOG_DIR_EVENT_NOTIFICATION, lambda _children: on_change())


def take_log_dir_events(zk: Any) -> list[int]:
    """The brokers named by the pending notifications, which are deleted (Kafka:
    `getBrokerIdFromLogDirEvent`, `deleteLogDirEventNotifications`)."""
    brokers = []
    try:
        children = sorted(zk.get_children(LOG_DIR_EVENT_NOTIFICATION))
    except NoNodeError:
        return []
    for child in children:
        path = f"{LOG_DIR_EVENT_NOTIFICATION}/{child}"
        try:
            data, _ = zk.get(path)
            zk.delete(path)
        except NoNodeError:
            continue
        try:
            event = json.loads(data)
            if event.get("event") == LOG_DIR_FAILURE:
                brokers.append(int(event["broker"]))
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring a malformed log dir event %s: %r", path, data)
    return brokers


def offline_replicas_in(api_key: int, response: Any) -> list[TopicPartition]:
    """The partitions a LeaderAndIsr answer reports in an offline log dir
    (KAFKA_STORAGE_ERROR); none for any other answer, or for none (a lost connection)."""
    if api_key != ApiKey.LEADER_AND_ISR or response is None:
        return []
    return [
        TopicPartition(p.topic_name, p.partition_index)
        for p in response.partition_errors
        if p.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    ]


class LogDirFailureHandler:
    """The controller's answer to failed log dirs (Kafka: `onBrokerLogDirFailure`,
    `onReplicasBecomeOffline`)."""

    def __init__(
        self,
        take_events: Callable[[], list[int]],
        context: ControllerContext,
        partitions: PartitionStateMachine,
        batch: Callable[[], ControllerBrokerRequestBatch],
    ) -> None:
        self.take_events = take_events  # the brokers named by the pending notifications
        self.context = context
        self.partitions = partitions
        self.batch = batch  # the requests of the event being handled

    def on_log_dir_event(self) -> None:
        """Ask each broker named: LeaderAndIsr with every partition it replicates."""
        context = self.context
        for broker in sorted(set(self.take_events())):
            if broker not in context.live:
                continue
            logger.info("controller %d: a log dir of broker %d failed", context.broker_id, broker)
            for tp in sorted(context.states):
                state = context.current(tp)
                if broker in state.replicas:
                    self.batch().add_leader_and_isr([broker], state)

    def on_offline_replicas(self, broker: int, offline: list[TopicPartition]) -> None:
        """The broker's answer named replicas in a failed dir: elect without them."""
        context = self.context
        if broker not in context.live:
            return
        context.offline_replicas.setdefault(broker, set()).update(offline)
        logger.info(
            "controller %d: replicas on broker %d offline: %s",
            context.broker_id,
            broker,
            sorted(offline),
        )
        for tp in sorted(offline):
            if tp in context.states:
                self.partitions.elect_if_needed(tp)
