"""A KRaft broker tells the controller which log directory holds each of its replicas
(KIP-858; Kafka: `AssignmentsManager`, `DirectoryEventHandler`).

With several `log.dirs` (JBOD) the controller creates a partition's replica on this broker
as `UNASSIGNED` (kafka_ref/metadata/directory_id.py): the broker chooses the directory when
it creates the log (the one with the fewest partitions, DUR-13). The controller must learn
the choice, or a failed directory would not tell it which replicas went with it (KCTRL-21).
So after each publication of the metadata image this manager compares, for every log the
broker holds, the directory the image names for this broker's replica with the directory
the log is in, and sends the differences to the active controller in one
AssignReplicasToDirs (API 73), by directory id, topic id and partition, with the broker
epoch (KCTRL-22). The controller writes a PartitionChangeRecord per replica; the next
publication shows it, and nothing is left to send.

Kafka queues an assignment as each log is created; comparing after each publication finds
the same ones, and also the logs that existed before the broker started (a directory
changed by hand, or an image that lost an assignment) without a second path. A request
the controller could not answer is sent again after a pause; one it answered is not sent
again while the image catches up.

Rules: KCTRL-22.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.log.log_manager import LogManager
from kafka_ref.metadata.image import MetadataImage
from kafka_ref.protocol.messages import ApiKey, AssignReplicasToDirsRequest

logger = logging.getLogger("kafka_ref.server.assignments_manager")

ASSIGN_REPLICAS_TO_DIRS_VERSION = 0
RETRY_BACKOFF_S = 0.5

Replica = tuple[uuid.UUID, int]  # (topic id, partition)


class AssignmentsManager:
    """Sends the directories of this broker's replicas that the image does not know yet."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        channel: Any,  # a NodeToControllerChannel: `await request(api_key, version, body)`
        image: Callable[[], MetadataImage],
        log_manager: LogManager,
        directory_ids: Mapping[str, uuid.UUID],  # log dir -> its directory.id
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.channel = channel
        self.image = image
        self.log_manager = log_manager
        self.directory_ids = directory_ids
        self.pending: dict[Replica, uuid.UUID] = {}  # to send
        self.sent: dict[Replica, uuid.UUID] = {}  # answered, not in the image yet
        self._task: asyncio.Task | None = None

    def differences(self) -> dict[Replica, uuid.UUID]:
        """Every replica whose log is in another directory than the image says."""
        image = self.image()
        topics = {t.name: t for t in image.topics.values()}
        found = {}
        for (name, index), log in list(self.log_manager.logs.items()):
            topic = topics.get(name)
            partition = None if topic is None else topic.partitions.get(index)
            if partition is None or self.broker_id not in partition.replicas:
                continue
            actual = self.directory_ids[log.parent_dir]
            if partition.directories[partition.replicas.index(self.broker_id)] != actual:
                found[(topic.id, index)] = actual
        return found

    def on_published(self) -> None:
        """The image changed: send what it does not know yet."""
        found = self.differences()
        self.sent = {k: d for k, d in self.sent.items() if found.get(k) == d}
        self.pending = {k: d for k, d in found.items() if self.sent.get(k) != d}
        if self.pending and self.broker_epoch() >= 0 and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        while self.pending:
            batch = dict(self.pending)
            try:
                response = await self.channel.request(
                    ApiKey.ASSIGN_REPLICAS_TO_DIRS,
                    ASSIGN_REPLICAS_TO_DIRS_VERSION,
                    request_body(self.broker_id, self.broker_epoch(), batch),
                )
                error = ErrorCode(response.error_code)
            except ConnectionError as err:  # no active controller for now
                logger.info("broker %d: directory assignments not sent: %s", self.broker_id, err)
                error = ErrorCode.NETWORK_EXCEPTION
            if error != ErrorCode.NO_ERROR:
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            for key, directory in batch.items():
                self.sent[key] = directory
                if self.pending.get(key) == directory:
                    del self.pending[key]
            logger.info(
                "broker %d: assigned %d replica(s) to directories", self.broker_id, len(batch)
            )

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


def request_body(
    broker_id: int, broker_epoch: int, assignments: Mapping[Replica, uuid.UUID]
) -> Any:
    """The AssignReplicasToDirs request for `assignments`, grouped by directory and topic."""
    grouped: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
    for (topic_id, index), directory in sorted(assignments.items()):
        grouped.setdefault(directory, {}).setdefault(topic_id, []).append(index)
    request = AssignReplicasToDirsRequest
    return request(
        broker_id=broker_id,
        broker_epoch=broker_epoch,
        directories=[
            request.DirectoryData(
                id=directory,
                topics=[
                    request.TopicData(
                        topic_id=topic_id,
                        partitions=[request.PartitionData(partition_index=i) for i in indexes],
                    )
                    for topic_id, indexes in topics.items()
                ],
            )
            for directory, topics in grouped.items()
        ],
    )
