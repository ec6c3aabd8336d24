"""Which replica a consumer should read from: KIP-392's replica selector.

Until Kafka 2.4 a consumer read from the leader only, even when a follower sat in its own
data center and the leader in another, paid for by the byte. KIP-392 lets the leader send
the consumer elsewhere. A consumer's Fetch from v11 carries the client's rack
(`client.rack`, the field `RackId`); the leader asks its **replica selector** (the broker
config `replica.selector.class`, none by default) which replica that client should read
from, and if the answer is another replica, it names it in the partition's answer
(`PreferredReadReplica`) instead of sending records. The client then fetches from that
replica, which serves it up to its own high watermark (REPL-16, REPL-17).

The selector sees the partition as the leader knows it (Kafka: `PartitionView`): the
leader itself, and the followers that may serve the client's offset, as `ReplicaView`s
with their rack, log end offset and how long ago each last caught up. A follower is a
candidate only while it is in the ISR and its log holds the fetch offset (log start <=
offset <= LEO, as its last fetch reported them): a follower out of the ISR lags, and a
client sent to it would lag with it, indefinitely (Kafka:
`ReplicaManager.findPreferredReadReplica`). A follower that is not alive, or has no
endpoint on the client's listener, has no rack the leader knows of: no client matches it.

Kafka's one selector, `RackAwareReplicaSelector`, picks among the replicas in the client's
rack: the leader if it is one of them (or if none is, or the client names no rack), else
the most caught up (Kafka: `ReplicaView.comparator`: the largest log end offset, then the
shortest time since caught up, then the largest broker id). The leader, when chosen, is
never named: the client keeps reading from it.

Nothing here remembers a client's choice: every fetch that reaches the leader is decided
again, so a follower that left the ISR is no longer named from that moment. A client that
already reads from it comes back to the leader when its lease ends (the Java consumer
refreshes it every `metadata.max.age.ms`, librdkafka every 5 minutes) or when the follower
answers with an error (REPL-17).

Rules: REPL-14, REPL-15.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kafka_ref.common import TopicPartition

if TYPE_CHECKING:
    from kafka_ref.replication.partition import Partition

RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
# The values `replica.selector.class` accepts when it is set (unset, the leader serves every
# consumer): Kafka's rack-aware selector, which kafka-ref implements below.
REPLICA_SELECTOR_CLASSES = (RACK_AWARE_REPLICA_SELECTOR,)


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """Who is fetching (Kafka: `ClientMetadata`, built from a Fetch v11+; Kafka's also has
    the client id, address and principal, for selectors of one's own)."""

    rack_id: str  # `client.rack`; empty when the client names none
    listener_name: str | None  # the listener the fetch came in on: replicas reached there


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica as the selector sees it (Kafka: `ReplicaView`). `rack` is None for a
    broker without one, and for a replica that is not alive or has no endpoint on the
    client's listener (Kafka's `Node.noNode()`): no client's rack matches it."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int  # 0 for the leader

    def most_caught_up(self) -> tuple[int, int, int]:
        """The order of Kafka's `ReplicaView.comparator`: the larger, the more caught up."""
        return self.log_end_offset, -self.time_since_last_caught_up_ms, self.broker_id


@dataclass(frozen=True, slots=True)
class PartitionView:
    """The replicas a consumer may be sent to, the leader among them (Kafka: `PartitionView`)."""

    replicas: frozenset[ReplicaView]
    leader: ReplicaView


class ReplicaSelector(Protocol):
    """Kafka's `ReplicaSelector`: the replica the client should read from, or None."""

    def select(
        self, tp: TopicPartition, client: ClientMetadata, view: PartitionView
    ) -> ReplicaView | None: ...


class RackAwareReplicaSelector:
    """A replica in the client's rack, the leader first (Kafka: `RackAwareReplicaSelector`)."""

    def select(
        self, tp: TopicPartition, client: ClientMetadata, view: PartitionView
    ) -> ReplicaView | None:
        if not client.rack_id:
            return view.leader
        same_rack = [r for r in view.replicas if r.rack == client.rack_id]
        if not same_rack or view.leader in same_rack:
            return view.leader
        return max(same_rack, key=ReplicaView.most_caught_up)


def replica_selector(class_name: str | None) -> ReplicaSelector | None:
    """The selector `replica.selector.class` names; None when it names none (Kafka:
    `ReplicaManager.createReplicaSelector`). The config's choices refuse any other name."""
    if class_name is None:
        return None
    assert class_name == RACK_AWARE_REPLICA_SELECTOR, class_name
    return RackAwareReplicaSelector()


def find_preferred_read_replica(
    selector: ReplicaSelector,
    partition: Partition,
    client: ClientMetadata,
    fetch_offset: int,
    now_ms: int,
    racks: Mapping[int, str | None],
) -> int | None:
    """The replica a consumer fetching `fetch_offset` should read from instead of this
    leader, or None: read here (Kafka: `ReplicaManager.findPreferredReadReplica`).

    `racks` maps each broker that is alive with an endpoint on the client's listener to
    its rack (Kafka: `MetadataCache.getPartitionReplicaEndpoints`). Only a leader sends a
    consumer elsewhere; a follower serves what it is asked (REPL-17)."""
    if not partition.is_leader:
        return None
    candidates = set()
    for replica in partition.remote.values():
        # In the ISR (a lagging follower would make the client lag), and holding the offset
        if (
            replica.broker_id in partition.isr
            and replica.log_start_offset <= fetch_offset <= replica.log_end_offset
        ):
            candidates.add(
                ReplicaView(
                    replica.broker_id,
                    racks.get(replica.broker_id),
                    replica.log_end_offset,
                    now_ms - replica.last_caught_up_time_ms,
                )
            )
    leader = ReplicaView(
        partition.broker_id, racks.get(partition.broker_id), partition.log_end_offset, 0
    )
    candidates.add(leader)
    tp = TopicPartition(partition.topic, partition.index)
    selected = selector.select(tp, client, PartitionView(frozenset(candidates), leader))
    if selected is None or selected == leader:
        return None
    return selected.broker_id
