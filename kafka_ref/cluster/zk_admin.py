"""Topic administration on a broker of a ZooKeeper cluster: check, then write znodes.

A broker in ZooKeeper mode owns no metadata, so a request that changes the topics does not
change them here: the broker checks it with Kafka's errors, as the embedded controller does
(topic_requests.py, the same plan for both modes), and then writes what ZooKeeper keeps
(Kafka: `ZkAdminManager` and `AdminZkClient`):

* **CreateTopics** writes the config overrides `/config/topics/<t>` and the replica
  assignment `/brokers/topics/<t>`, its replicas placed on the live brokers by
  assignment.py (CTRL-8);
* **CreatePartitions** rewrites the assignment with more partitions;
* **AlterConfigs** rewrites `/config/topics/<t>`, and `/config/brokers/<entity>` with its
  change notice for the dynamic broker configs (CONFIG-6);
* **DeleteTopics** creates `/admin/delete_topics/<t>`.

The *controller* then acts: it writes the new partitions' first states and tells every
broker, deletes the topic's znodes and its replicas. The live brokers a placement may use
are those this broker knows, from the controller's UpdateMetadata (CTRL-31), as Kafka's
`ZkAdminManager` takes them from its `MetadataCache`. This broker applies its own change to
its picture at once, before its watch brings it back, so that the client's next request
here already sees it.

Rules: CONFIG-6, CTRL-8, CTRL-15.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from kazoo.exceptions import NodeExistsError

from kafka_ref.cluster.config_changes import write_broker_config, write_group_config
from kafka_ref.cluster.metadata import (
    BrokerEndpoint,
    TopicDeletionDisabledError,
    TopicExistsError,
    TopicMetadata,
    UnknownTopicOrPartitionError,
)
from kafka_ref.cluster.topic_requests import TopicAdministration, plan_partitions
from kafka_ref.cluster.zookeeper import KafkaZkClient

logger = logging.getLogger("kafka_ref.cluster.zk_admin")


class ZkTopicAdministration(TopicAdministration):
    """The changing half of `ZkClusterMetadata` (Kafka: `ZkAdminManager`)."""

    zk: KafkaZkClient
    delete_topic_enable: bool
    _assignments: dict[str, dict[int, tuple[int, ...]]]

    def brokers(self) -> list[BrokerEndpoint]:
        raise NotImplementedError

    def _apply_topic(self, meta: TopicMetadata, assignment: dict[int, tuple[int, ...]]) -> None:
        raise NotImplementedError

    def _live(self) -> list[tuple[int, str | None]]:
        return [(b.node_id, b.rack) for b in self.brokers()]

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        *,
        assignments: Mapping[int, list[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Validate as the embedded controller does, place replicas, write to ZooKeeper."""
        meta, placed = self._plan_topic(
            name, num_partitions, replication_factor, configs, assignments
        )
        if self.zk.get_topic(name) is not None:  # created elsewhere, not yet seen here
            raise TopicExistsError(f"Topic '{name}' already exists.")
        if validate_only:
            return meta
        try:
            self.zk.create_topic(name, str(meta.topic_id), placed, meta.configs)
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{name}' already exists.") from None
        self._apply_topic(meta, {p: tuple(r) for p, r in placed.items()})  # before the watch
        logger.info("created topic %s in ZooKeeper: assignment %s", name, placed)
        return meta

    def create_partitions(
        self,
        name: str,
        count: int,
        *,
        assignments: list[list[int]] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Grow a topic: the assignment gains partitions; the controller elects their leaders."""
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        grown, new = plan_partitions(meta, count, assignments, live=self._live())
        if validate_only:
            return grown
        full = {p: list(r) for p, r in self._assignments[name].items()} | new
        self.zk.set_topic_assignment(name, str(meta.topic_id), full)
        self._apply_topic(grown, {p: tuple(r) for p, r in full.items()})
        return grown

    def _store_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Write the overrides to ZooKeeper; every broker's config watch applies them to its
        live logs (CTRL-15), this one's at once."""
        self.zk.set_topic_config(name, configs)
        self._apply_topic(
            dataclasses.replace(self._topics[name], configs=configs), self._assignments[name]
        )

    def _store_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        """`/config/brokers/<entity>` and its notice; every broker's watch applies it."""
        write_broker_config(self.zk.zk, entity, configs)

    def _store_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        """`/config/groups/<group>` (gone when empty) and its notice (CONFIG-13)."""
        write_group_config(self.zk.zk, group_id, configs)

    def delete_topic(self, name: str) -> None:
        """Request the deletion; the controller removes the znodes, the watches the logs."""
        if not self.delete_topic_enable:
            raise TopicDeletionDisabledError("Topic deletion is disabled.")
        if name not in self._topics:
            raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
        self.zk.request_topic_deletion(name)

    def finish_deletion(self, name: str) -> None:
        """Nothing to finish locally: ZooKeeper holds the deletion until it is done."""

    def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
        return self.zk.allocate_producer_id_block(broker_id, size)
