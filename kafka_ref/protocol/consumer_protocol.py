"""The consumer protocol's bytes: subscriptions in JoinGroup, assignments in SyncGroup.

The group coordinator treats a member's protocol metadata (JoinGroup) and its assignment
(SyncGroup) as opaque bytes; only consumers read them. Kafka's consumers encode them as
`ConsumerProtocolSubscription` and `ConsumerProtocolAssignment` (class `ConsumerProtocol`),
plain big-endian structs that start with an int16 version and are never "flexible" (no
tagged fields, no compact lengths):

    ConsumerProtocolSubscription
      version          int16
      topics           [string]                                         v0+
      user_data        nullable bytes (int32 length, -1 = null)         v0+
      owned_partitions [topic string, partitions [int32]]               v1+  (KIP-429)
      generation_id    int32, -1 if unknown                             v2+  (KIP-792)
      rack_id          nullable string (int16 length, -1 = null)        v3+  (KIP-881)

    ConsumerProtocolAssignment                                          (v0-v3, same fields)
      version             int16
      assigned_partitions [topic string, partitions [int32]]
      user_data           nullable bytes

Arrays are an int32 count then the items; strings an int16 length then UTF-8. A reader meets
a newer version than it knows by reading the fields it knows and ignoring the rest, which is
why new fields only ever go at the end. Empty user data is written as null, as Kafka's own
assignors do; `rack_id` is written as null (rack-aware assignment is not implemented here).

Spec rule: ASSIGN-10.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_ref.common import TopicPartition


@dataclass(frozen=True)
class Subscription:
    """What one member tells the leader (Kafka `ConsumerPartitionAssignor.Subscription`).

    `topics`: the topics it subscribes to. `owned_partitions`: what it owns now
    (Subscription v1+, KIP-429; used by the sticky assignors). `user_data`: assignor-specific
    bytes. `generation_id` (v2+): the generation in which it owned `owned_partitions`, -1 if
    unknown. `group_instance_id`: set for static members (KIP-345); range and round-robin
    order static members first, by this id.
    """

    topics: tuple[str, ...] | list[str] | frozenset[str]
    owned_partitions: tuple[TopicPartition, ...] | list[TopicPartition] = ()
    user_data: bytes = b""
    generation_id: int = -1
    group_instance_id: str | None = None


SUBSCRIPTION_VERSIONS = range(0, 4)
ASSIGNMENT_VERSIONS = range(0, 4)


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def int16(self, v: int) -> None:
        self.out += struct.pack(">h", v)

    def int32(self, v: int) -> None:
        self.out += struct.pack(">i", v)

    def string(self, s: str | None) -> None:
        if s is None:
            self.int16(-1)
        else:
            raw = s.encode()
            self.int16(len(raw))
            self.out += raw

    def nullable_bytes(self, b: bytes) -> None:
        if not b:
            self.int32(-1)
        else:
            self.int32(len(b))
            self.out += b

    def topic_partitions(self, tps: Iterable[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(tps):
            by_topic.setdefault(topic, []).append(partition)
        self.int32(len(by_topic))
        for topic, partitions in by_topic.items():
            self.string(topic)
            self.int32(len(partitions))
            for p in partitions:
                self.int32(p)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = memoryview(data), 0

    def _take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error:
            raise ValueError(f"consumer protocol: truncated at byte {self.pos}") from None
        self.pos += struct.calcsize(fmt)
        return value

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def _raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"consumer protocol: bad length {n} at byte {self.pos}")
        raw = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return raw

    def string(self) -> str | None:
        n = self.int16()
        return None if n == -1 else self._raw(n).decode()

    def nullable_bytes(self) -> bytes:
        n = self.int32()
        return b"" if n == -1 else self._raw(n)

    def topic_partitions(self) -> list[TopicPartition]:
        tps = []
        for _ in range(self.int32()):
            topic = self.string() or ""
            tps.extend(TopicPartition(topic, self.int32()) for _ in range(self.int32()))
        return tps


def encode_subscription(sub: Subscription, version: int = 3) -> bytes:
    """JoinGroup protocol metadata for `sub`, as Kafka's `ConsumerProtocol` writes it."""
    if version not in SUBSCRIPTION_VERSIONS:
        raise ValueError(f"unsupported ConsumerProtocolSubscription version {version}")
    w = _Writer()
    w.int16(version)
    w.int32(len(sub.topics))
    for topic in sub.topics:
        w.string(topic)
    w.nullable_bytes(sub.user_data)
    if version >= 1:
        w.topic_partitions(sub.owned_partitions)
    if version >= 2:
        w.int32(sub.generation_id)
    if version >= 3:
        w.string(None)  # rack_id
    return bytes(w.out)


def decode_subscription(data: bytes) -> tuple[int, Subscription]:
    """(version, Subscription) from JoinGroup metadata; fields of newer versions are ignored."""
    r = _Reader(data)
    version = r.int16()
    topics = tuple(r.string() or "" for _ in range(r.int32()))
    user_data = r.nullable_bytes()
    owned = tuple(r.topic_partitions()) if version >= 1 else ()
    generation_id = r.int32() if version >= 2 else -1
    return version, Subscription(topics, owned, user_data, generation_id)


def encode_assignment(
    partitions: Iterable[TopicPartition], user_data: bytes = b"", version: int = 0
) -> bytes:
    """SyncGroup assignment bytes for one member."""
    if version not in ASSIGNMENT_VERSIONS:
        raise ValueError(f"unsupported ConsumerProtocolAssignment version {version}")
    w = _Writer()
    w.int16(version)
    w.topic_partitions(partitions)
    w.nullable_bytes(user_data)
    return bytes(w.out)


def decode_assignment(data: bytes) -> tuple[int, list[TopicPartition], bytes]:
    """(version, partitions, user_data) from a SyncGroup assignment."""
    r = _Reader(data)
    version = r.int16()
    partitions = r.topic_partitions()
    return version, partitions, r.nullable_bytes()
