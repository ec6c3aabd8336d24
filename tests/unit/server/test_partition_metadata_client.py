"""The share group lag's end offsets, asked of the partitions' leaders (SHARE-51).

A fake cluster metadata names the leaders and a fake inter-broker channel answers for them:
one ListOffsets per leader (LATEST, read_uncommitted), LEADER_NOT_AVAILABLE without a
request for a partition without a live leader, NETWORK_EXCEPTION for a leader that cannot
be reached, UNKNOWN_TOPIC_OR_PARTITION for a topic id the metadata does not know.
"""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, ListOffsetsResponse
from kafka_ref.server.inter_broker_channel import BrokerUnavailableError
from kafka_ref.server.partition_metadata_client import PartitionMetadataClient

T = SimpleNamespace(name="t", topic_id=uuid.UUID(int=1))
LEADERS = {0: 1, 1: 2, 2: -1, 3: 9}  # partition -> leader; 9 is not registered
WATERMARKS = {0: 17, 1: 4}


class Controller:
    def topic_by_id(self, topic_id):
        return T if topic_id == T.topic_id else None

    def partition_state(self, topic, partition):
        return SimpleNamespace(leader=LEADERS[partition])

    def brokers(self):
        return [SimpleNamespace(node_id=1), SimpleNamespace(node_id=2)]


class Channel:
    def __init__(self, down=()):
        self.sent, self.down = [], set(down)

    def send(self, node_id, api_key, version, body, on_response):
        self.sent.append((node_id, api_key, body))
        if node_id in self.down:
            on_response(BrokerUnavailableError(f"broker {node_id}"))
            return
        R = ListOffsetsResponse
        topics = [
            R.ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    R.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, offset=WATERMARKS[p.partition_index]
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ]
        on_response(R(topics=topics))


@pytest.mark.spec("SHARE-51")
@pytest.mark.parametrize("down", [(), (2,)])
def test_each_leader_is_asked_for_its_high_watermarks(down):
    channel = Channel(down)
    client = PartitionMetadataClient(Controller(), channel)
    pairs = [(T.topic_id, p) for p in range(4)] + [(uuid.UUID(int=2), 0)]
    found = asyncio.run(client.latest_offsets(pairs))
    assert sorted(node for node, _, _ in channel.sent) == [1, 2]  # none to 2's or 3's leader
    for _, api_key, body in channel.sent:
        assert api_key == ApiKey.LIST_OFFSETS and body.isolation_level == 0  # read_uncommitted
        assert [p.timestamp for t in body.topics for p in t.partitions] == [-1]  # LATEST
    second = (-1, ErrorCode.NETWORK_EXCEPTION) if down else (4, ErrorCode.NO_ERROR)
    assert found == {
        (T.topic_id, 0): (17, ErrorCode.NO_ERROR),
        (T.topic_id, 1): second,
        (T.topic_id, 2): (-1, ErrorCode.LEADER_NOT_AVAILABLE),
        (T.topic_id, 3): (-1, ErrorCode.LEADER_NOT_AVAILABLE),
        (uuid.UUID(int=2), 0): (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    }
