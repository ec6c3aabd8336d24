"""Leader hints: where a partition's leader is now, in the answer that says "not me" (KIP-951).

A client that produces to or fetches from a broker that is no longer the partition's leader
gets NOT_LEADER_OR_FOLLOWER (a fetch also FENCED_LEADER_EPOCH, its leader epoch being older
than the partition's). Before KIP-951 the client then asked for Metadata and waited for the
answer before retrying, one round trip lost on every leader change. From Produce v10 and
Fetch v16 the refusing broker names the new leader right away: per partition a tagged
`CurrentLeader` (leader id and leader epoch), and once per response a tagged `NodeEndpoints`
list with the host, port and rack of every leader it named, as the client's listener
advertises them. The client moves the partition to that leader without waiting.

The leader comes from the partition as this broker hosts it (its leader id and leader
epoch), else from the metadata (a partition this broker does not host); a leader the broker
does not know to be alive gets no endpoint (Kafka: `KafkaApis.getCurrentLeader`,
`MetadataCache.getAliveBrokerNode`).

Rules: BROKER-69.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext


class LeaderHints:
    """The leaders one response names, and the endpoints to send with them."""

    def __init__(self, apis: ApiContext, request: Request) -> None:
        self.apis, self.request = apis, request
        self.endpoints: dict[int, tuple[str, int, str | None]] = {}  # node id -> host, port, rack

    def current_leader(self, topic: str, index: int) -> tuple[int, int]:
        """(leader id, leader epoch) of the partition, (-1, -1) when unknown; remembers the
        leader's endpoint for `node_endpoints`."""
        partition = self.apis.replica_manager.partitions.get((topic, index))
        if partition is not None:
            leader_id = partition.leader_id if partition.leader_id is not None else -1
            leader_epoch = partition.leader_epoch
        else:
            state = self.apis.controller.partition_state(topic, index)
            leader_id, leader_epoch = (state.leader, state.leader_epoch) if state else (-1, -1)
        for broker in self.apis.controller.brokers():
            if broker.node_id == leader_id:
                address = broker.address(self.request.listener_name)
                if address is not None:
                    self.endpoints[leader_id] = (*address, broker.rack)
        return leader_id, leader_epoch

    def node_endpoints(self, make: Any) -> list[Any]:
        """The named leaders' endpoints, built with the response's `NodeEndpoint` class."""
        return [
            make(node_id=node_id, host=host, port=port, rack=rack)
            for node_id, (host, port, rack) in sorted(self.endpoints.items())
        ]
