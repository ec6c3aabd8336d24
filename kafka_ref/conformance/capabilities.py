"""Capabilities: what a target broker can do, so that a rule it cannot face is skipped.

A conformance suite judges brokers that implement different subsets of Kafka. A broker with
no consumer groups has not *broken* REBAL-1; it simply cannot be asked. So every test names
the capabilities it needs (`target.require("groups")`), and a missing capability skips the
test with that reason, never fails it (CONF-1). The report then shows "skipped (target lacks
groups)" for the rule instead of a red cross.

Where the protocol can tell, capabilities are *probed* over the wire: ApiVersions lists the
APIs a broker implements (Kafka's `ApiVersionsResponse`), and Metadata counts its brokers.
What no request reveals (can the suite restart the broker? does it compact within a test's
patience?) is *declared* by the target: the built-in targets declare theirs, and for
`bootstrap=HOST:PORT` the user adds or removes them with `--capabilities +compaction,-groups`.
"""

from __future__ import annotations

from dataclasses import dataclass

# name -> what it means (the text the skip reason and the docs use)
CAPABILITIES: dict[str, str] = {
    "groups": "the classic consumer group APIs (FindCoordinator, JoinGroup, SyncGroup, "
    "Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch)",
    "idempotence": "InitProducerId, so an idempotent producer can get a producer id",
    "transactions": "the transaction APIs (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, "
    "TxnOffsetCommit)",
    "create-topics": "CreateTopics with topic configs",
    "delete-records": "DeleteRecords",
    "create-partitions": "CreatePartitions",
    "list-offsets": "ListOffsets",
    "describe-configs": "DescribeConfigs",
    "share-groups": "share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, "
    "ShareFetch and ShareAcknowledge",
    "multi-broker": "more than one broker in the cluster",
    "restart": "the suite can stop and restart the broker with its data kept",
    "compaction": "log compaction that runs within seconds (short cleaner backoff)",
    "short-sessions": "group session timeouts of 1 s and no initial rebalance delay",
    "configurable-broker": "the suite can start another broker of the target's kind with the "
    "broker-level configs a test asks for (e.g. producer.id.expiration.ms=1000)",
    "cluster": "the suite can start a 3-broker cluster of the target's kind (on a ZooKeeper, or "
    "a KRaft controller) and kill, pause and restart its brokers",
    "sasl": "the suite can start a broker of the target's kind that requires SASL "
    "authentication, and the target declares its mechanisms",
    "sasl-users": "that broker accepts users and passwords the target declares",
    "acls": "that broker has an authorizer: ACLs decide what its SASL users may do, and a "
    "listener whose principal is a super user sets them",
}

# Capability -> the API keys whose presence in ApiVersions proves it.
PROBED_BY_API: dict[str, tuple[int, ...]] = {
    "groups": (8, 9, 10, 11, 12, 13, 14),
    "idempotence": (22,),
    "transactions": (24, 25, 26, 28),
    "create-topics": (19,),
    "delete-records": (21,),
    "create-partitions": (37,),
    "list-offsets": (2,),
    "describe-configs": (32,),
    "share-groups": (76, 77, 78, 79),
}

# The capabilities only a declaration can grant (no request reveals them).
DECLARED_ONLY = frozenset(
    {
        "restart",
        "compaction",
        "short-sessions",
        "configurable-broker",
        "cluster",
        "sasl",
        "sasl-users",
        "acls",
    }
)


@dataclass(frozen=True)
class Capabilities:
    """The set a target has, and the API version ranges it advertised."""

    names: frozenset[str]
    api_versions: dict[int, tuple[int, int]]
    brokers: int = 1

    def has(self, name: str) -> bool:
        if name not in CAPABILITIES:
            raise KeyError(f"unknown capability {name!r}; known: {sorted(CAPABILITIES)}")
        return name in self.names

    def missing(self, *names: str) -> list[str]:
        return [n for n in names if not self.has(n)]

    def supports(self, api_key: int, version: int) -> bool:
        low, high = self.api_versions.get(api_key, (0, -1))
        return low <= version <= high


def from_probe(
    api_versions: dict[int, tuple[int, int]], brokers: int, declared: set[str]
) -> Capabilities:
    """Combine what the wire showed with what the target declares.

    A probed capability needs every one of its API keys; a declaration cannot add an API the
    broker does not advertise (a test would only fail on it), but it can add the
    declaration-only ones and take any away."""
    names = {cap for cap, keys in PROBED_BY_API.items() if all(k in api_versions for k in keys)}
    if brokers > 1:
        names.add("multi-broker")
    names |= declared & DECLARED_ONLY
    return Capabilities(frozenset(names), dict(api_versions), brokers)


def parse_adjustments(text: str | None) -> tuple[set[str], set[str]]:
    """`+compaction,-groups` -> ({"compaction"}, {"groups"}); a bare name means add."""
    add: set[str] = set()
    remove: set[str] = set()
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        sign, name = (item[0], item[1:]) if item[0] in "+-" else ("+", item)
        if name not in CAPABILITIES:
            raise ValueError(f"unknown capability {name!r}; known: {sorted(CAPABILITIES)}")
        (remove if sign == "-" else add).add(name)
    return add, remove
