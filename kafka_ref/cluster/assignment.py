"""Replica placement: which brokers hold the replicas of each partition of a new topic.

When a topic is created without an explicit assignment, the controller side of Kafka picks
`replication.factor` brokers for every partition (Kafka: `AdminUtils.assignReplicasToBrokers`,
now `StripedReplicaPlacer`'s ancestor). The goals:

1. **Distinct brokers.** The replicas of one partition are on different brokers; two copies
   on one broker would die together.
2. **Spread leaders.** The first replica is the *preferred leader*. Partition p's first
   replica is broker `(p + start) mod n` of the sorted broker list, so leaders go round-robin
   over the brokers, from a random start so that many small topics do not all put their
   first leader on the lowest broker.
3. **Spread followers.** The other replicas follow the first at a shift, `1 + (shift + j)
   mod (n - 1)` places further, and the shift grows by one every n partitions: a broker's
   followers are not always the same neighbour, so when it dies its load spreads.
4. **Racks** (`broker.rack`). When every broker names a rack, the broker list is first
   arranged rack by rack in turn (rack a, rack b, rack c, rack a, ...) and a replica is
   skipped while its rack already has one and some rack has none: the copies land in as
   many racks as possible, surviving the loss of a whole rack.

Kafka's worked example (5 brokers, 10 partitions, RF 3, start 0, shift 0):

    broker-0  broker-1  broker-2  broker-3  broker-4
    p0        p1        p2        p3        p4       (1st replica)
    p5        p6        p7        p8        p9       (1st replica)
    p4        p0        p1        p2        p3       (2nd replica)
    p8        p9        p5        p6        p7       (2nd replica)
    p3        p4        p0        p1        p2       (3rd replica)
    p7        p8        p9        p5        p6       (3rd replica)

Pure and deterministic given `start_index` and `replica_shift`; the controller passes random
ones. Rules: CTRL-8.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kafka_ref.cluster.metadata import InvalidReplicationFactorError


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(brokers: dict[int, str]) -> list[int]:
    """Broker ids ordered rack by rack in turn (Kafka: `getRackAlternatedBrokerList`)."""
    by_rack: dict[str, list[int]] = {}
    for broker_id in sorted(brokers):
        by_rack.setdefault(brokers[broker_id], []).append(broker_id)
    racks = sorted(by_rack)
    result: list[int] = []
    index = 0
    while len(result) < len(brokers):
        if by_rack[racks[index]]:
            result.append(by_rack[racks[index]].pop(0))
        index = (index + 1) % len(racks)
    return result


def assign_replicas_to_brokers(
    brokers: Sequence[tuple[int, str | None]],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """partition -> replica broker ids, for partitions start_partition.. (CTRL-8).

    `brokers` are (id, rack or None) of the live brokers. Racks count only when every
    broker has one (Kafka refuses a mix; kafka-ref then ignores racks).
    """
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers:"
            f" {len(brokers)}."
        )
    rng = rng or random.Random()
    racks = {b: r for b, r in brokers if r is not None}
    rack_aware = len(racks) == len(brokers) and len(set(racks.values())) > 1
    ordered = rack_alternated(racks) if rack_aware else sorted(b for b, _ in brokers)
    n = len(ordered)
    start = rng.randrange(n) if start_index is None else start_index
    shift = rng.randrange(n) if replica_shift is None else replica_shift
    num_racks = len(set(racks.values())) if rack_aware else 1
    result: dict[int, list[int]] = {}
    for p in range(start_partition, start_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ordered[first]]
        if not rack_aware:
            for j in range(replication_factor - 1):
                replicas.append(ordered[_replica_index(first, shift, j, n)])
        else:
            used_racks, k = {racks[ordered[first]]}, 0
            while len(replicas) < replication_factor:
                broker = ordered[_replica_index(first, shift * num_racks, k, n)]
                rack = racks[broker]
                # Skip a broker whose rack already has a replica while some rack has none,
                # and a broker that already has one while some broker has none.
                if (rack not in used_racks or len(used_racks) == num_racks) and (
                    broker not in replicas or len(replicas) == n
                ):
                    replicas.append(broker)
                    used_racks.add(rack)
                k += 1
        result[p] = replicas
    return result
