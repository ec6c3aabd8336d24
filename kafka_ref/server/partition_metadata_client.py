"""The partitions' end offsets, asked of their leaders: the share group lag's source (KIP-1226).

DescribeShareGroupOffsets v1 answers each share-partition's lag: the records below the
partition's end offset whose delivery is not complete (SHARE-51). The share coordinator
keeps the start offset and the count of done records; the end offset is the partition
leader's, which may be another broker than the group coordinator. Kafka asks it with a
`NetworkPartitionMetadataClient` (`PartitionMetadataClient.listLatestOffsets`): one
ListOffsets per leader, timestamp LATEST (-1) under read_uncommitted, so the **high
watermark** (neither the log end offset nor the last stable offset). `PartitionMetadataClient`
does the same over an `InterBrokerChannel` (this broker's own partitions through its
loopback):

* a partition whose leader the metadata does not know (none, or not registered) is
  LEADER_NOT_AVAILABLE, without a request;
* a leader that cannot be reached is NETWORK_EXCEPTION for its partitions (Kafka retries a
  disconnection a few times first; kafka-ref asks once: the admin asks again);
* otherwise each partition gets ListOffsets' answer, its offset or its error (a partition
  the answer leaves out: UNKNOWN_TOPIC_OR_PARTITION).

Rules: SHARE-51.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kafka_ref.cluster.metadata import ClusterMetadataApi
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, ListOffsetsRequest
from kafka_ref.server.inter_broker_channel import InterBrokerChannel, live_broker

LATEST = -1  # ListOffsets' timestamp selector of the high watermark (read_uncommitted)
LIST_OFFSETS_VERSION = 7  # any version >= 1 answers one offset; Kafka's client asks its latest
Pair = tuple[uuid.UUID, int]  # (topic id, partition)


class PartitionMetadataClient:
    """The latest offsets of partitions, from their leaders (Kafka
    `NetworkPartitionMetadataClient`)."""

    def __init__(self, controller: ClusterMetadataApi, channel: InterBrokerChannel) -> None:
        self.controller, self.channel = controller, channel

    async def latest_offsets(self, pairs: list[Pair]) -> dict[Pair, tuple[int, ErrorCode]]:
        """{(topic id, partition): (high watermark, NO_ERROR) or (-1, the error)}."""
        results: dict[Pair, tuple[int, ErrorCode]] = {}
        by_leader: dict[int, list[tuple[Pair, str]]] = {}
        for topic_id, p in pairs:
            topic = self.controller.topic_by_id(topic_id)
            state = None if topic is None else self.controller.partition_state(topic.name, p)
            if topic is None or state is None:
                results[(topic_id, p)] = (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif state.leader < 0 or live_broker(self.controller, state.leader) is None:
                results[(topic_id, p)] = (-1, ErrorCode.LEADER_NOT_AVAILABLE)
            else:
                by_leader.setdefault(state.leader, []).append(((topic_id, p), topic.name))
        answers = await asyncio.gather(
            *(self._ask(leader, asked) for leader, asked in by_leader.items())
        )
        for answer in answers:
            results.update(answer)
        return results

    async def _ask(
        self, leader: int, asked: list[tuple[Pair, str]]
    ) -> dict[Pair, tuple[int, ErrorCode]]:
        """One ListOffsets to `leader` for its partitions."""
        topics: dict[str, list[int]] = {}
        for (_, p), name in asked:
            topics.setdefault(name, []).append(p)
        body = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,  # read_uncommitted: the high watermark
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=name,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=LATEST)
                        for p in sorted(parts)
                    ],
                )
                for name, parts in sorted(topics.items())
            ],
        )
        answered: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_response(response: Any) -> None:
            if not answered.done():
                answered.set_result(response)

        self.channel.send(leader, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body, on_response)
        response = await answered
        if isinstance(response, ConnectionError):
            return {pair: (-1, ErrorCode.NETWORK_EXCEPTION) for pair, _ in asked}
        found = {
            (t.name, p.partition_index): (p.offset, ErrorCode(p.error_code))
            for t in response.topics
            for p in t.partitions
        }
        return {
            pair: found.get((name, pair[1]), (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            for pair, name in asked
        }
