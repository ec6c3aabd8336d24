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

Rules: CTRL-30.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

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


class LogDirFailureHandling:
    """The controller's part (mixed into `KafkaController`, whose event thread runs it)."""

    offline_replicas: dict[int, set[TopicPartition]]

    def _watch_log_dir_events(self: Any) -> None:
        self.zk.zk.ensure_path(LOG_DIR_EVENT_NOTIFICATION)
        ChildrenWatch(self.zk.zk, LOG_DIR_EVENT_NOTIFICATION, lambda _c: self._put("log_dir_event"))

    def live_for(self: Any, tp: TopicPartition) -> set[int]:
        """The live brokers whose replica of `tp` is not in a failed log dir."""
        return {b for b in self.live if tp not in self.offline_replicas.get(b, ())}

    def _handle_log_dir_event(self: Any) -> None:
        if not self.active:
            return
        for broker in sorted(set(take_log_dir_events(self.zk.zk))):
            if broker not in self.live:
                continue
            logger.info("controller %d: a log dir of broker %d failed", self.broker_id, broker)
            for tp in sorted(self.states):
                state = self._current(tp)
                if broker in state.replicas:
                    self.batch.add_leader_and_isr([broker], state)

    def _on_broker_response(self: Any, broker: int, api_key: int, response: Any) -> None:
        """On the channel's loop: LeaderAndIsr answers with offline replicas become events."""
        if api_key != ApiKey.LEADER_AND_ISR or response is None:
            return
        offline = [
            TopicPartition(p.topic_name, p.partition_index)
            for p in response.partition_errors
            if p.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        ]
        if offline:
            self._put("offline_replicas", broker, offline)

    def _handle_offline_replicas(self: Any, broker: int, offline: list[TopicPartition]) -> None:
        if not self.active or broker not in self.live:
            return
        self.offline_replicas.setdefault(broker, set()).update(offline)
        logger.info(
            "controller %d: replicas on broker %d offline: %s",
            self.broker_id,
            broker,
            sorted(offline),
        )
        for tp in sorted(offline):
            if tp in self.states:
                self._elect_if_needed(tp)
