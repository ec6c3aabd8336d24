"""Differential testing: one sequence of requests, two brokers, the same answers.

A rule in spec/ says what Kafka does in a situation somebody thought of. Differential testing
asks Kafka itself about situations nobody thought of: hypothesis draws a sequence of
requests (topics created, deleted and grown; batches of every shape produced, well formed or
broken; fetches, offset lookups and record deletions at every offset; idempotent and
transactional producers; a consumer group's member and its commits), sends the same sequence
to Apache Kafka and to the broker under test, each on names of its own, and compares the
answers step by step. Before comparing, each answer is put into a normal form without what
two correct brokers may answer differently (DIFF-2):

* throttle times, error messages, node ids, hosts, ports, racks, cluster ids;
* generated ids: producer ids, member ids and topic ids are replaced by the order in which
  they first appeared in the sequence (`pid#0`, `member#1`), so "the same id twice" still
  shows;
* wall-clock times: record timestamps are relative to the sequence's start, and a time the
  broker set (LogAppendTime) becomes `broker-time`;
* bytes: fetched records are decoded (kafka_ref.conformance.records, written from the format's
  definition), so two brokers that frame the same records in the same batches agree however
  they cut a fetch at its size limit.

The first answer that differs is a divergence: a bug, a rule to write, or a freedom of the
protocol to add to the normal form with its reason. Both brokers get the same API versions,
drawn per request from the range both of them serve, so every version in common is tried.

    python -m kafka_ref.conformance.differential --sequences 200 --seed 1 \\
        --a apache_kafka --b kafka_ref

Rules: DIFF-1, DIFF-2 (spec/conformance.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import random
import struct
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafka_ref.config import TOPIC_CONFIGS
from kafka_ref.conformance import records as raw
from kafka_ref.conformance.wire import Wire
from kafka_ref.protocol import frames
from kafka_ref.protocol import messages as m
from kafka_ref.protocol.errors import ProtocolError
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.protocol.schema import Message, Struct
from kafka_ref.txn import transaction_version as tv

# What both brokers run with (standard Kafka broker configs), so that a group forms at once
# and the internal topics are small.
BROKER_CONFIGS: dict[str, object] = {
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 2,
    "transaction.state.log.num.partitions": 2,
    "auto.create.topics.enable": "true",
    "num.partitions": 1,
}

# Feature levels Apache Kafka is formatted with for the comparison: without eligible leader
# replicas (KIP-966), which kafka-ref does not have yet and which changes what a topic's
# min.insync.replicas is described as (a dynamic cluster default instead of the default).
FEATURES = {"eligible.leader.replicas.version": 0}

TOPICS = 3  # topic indexes 0..2 may be created; index 3 never is (an unknown topic)
GROUPS = 2
PRODUCERS = 2
SETTLE_SECONDS = 15.0
# Errors a client retries, the coordinator's "not yet": a step retries them for a while, as a
# client would, so that the answer compared is the one a client ends with.
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
CONCURRENT_TRANSACTIONS = 51
GONE, EXISTS = -1, -2  # what `Session.wait_topic` may wait for besides a partition count


def make(kind: Message | type[Struct], **values: Any) -> Struct:
    """A message, or one of its structs, from the fields it declares (others are dropped), so
    that one builder serves every version of a message, older or newer."""
    declared = kind.cls.__slots__ if isinstance(kind, Message) else kind.__slots__
    return kind(**{name: value for name, value in values.items() if name in declared})


# ---------------------------------------------------------------------------- the session
class Closed(enum.Enum):
    """The broker closed the connection instead of answering."""

    CONNECTION = "connection closed"


@dataclass
class Producer:
    producer_id: int = -1
    epoch: int = -1
    transactional_id: str | None = None
    sequences: dict[tuple[int, int], int] = field(default_factory=dict)
    partitions: set[tuple[int, int]] = field(default_factory=set)  # added to the transaction


@dataclass
class Member:
    member_id: str = ""
    generation: int = -1


@dataclass
class Names:
    """What one sequence's answers are put in normal form against: the prefix of its names,
    the time it started, and the generated ids it has seen (kind -> id -> order of appearance)."""

    namespace: str
    base_ms: int
    ids: dict[str, dict[object, int]] = field(default_factory=dict)

    def generated(self, kind: str, value: object) -> str:
        """`kind#N`: the N-th distinct id of this kind the sequence has seen."""
        seen = self.ids.setdefault(kind, {})
        return f"{kind}#{seen.setdefault(value, len(seen))}"


class Session:
    """One broker, one sequence: a connection, the sequence's names, what it has learned."""

    def __init__(self, host: str, port: int, namespace: str, versions: dict[int, tuple[int, int]]):
        self.host, self.port, self.namespace = host, port, namespace
        self.versions = versions
        self.wire = Wire(host, port)  # the steps' requests
        self.helper: Wire | None = None  # lookups and waits, apart from the steps' connection
        self.names = Names(namespace, int(time.time() * 1000))
        self.base_ms = self.names.base_ms
        self.requests = 0
        self.producers: dict[int, Producer] = {}
        self.members: dict[int, Member] = {}
        self.coordinators: set[str] = set()  # groups whose coordinator was looked up

    def close(self) -> None:
        self.wire.close()
        if self.helper is not None:
            self.helper.close()

    def ask(self, api_key: int, version: int, body: Struct) -> Any:
        """A request of the session's own (a lookup, a wait), on a connection of its own, so
        that a step that made the broker close the steps' connection does not disturb it."""
        for attempt in range(2):
            try:
                if self.helper is None:
                    self.helper = Wire(self.host, self.port)
                return self.helper.request(api_key, version, body)
            except (OSError, ProtocolError):
                if self.helper is not None:
                    self.helper.close()
                self.helper = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def topic(self, index: int) -> str:
        return f"{self.namespace}-t{index}"

    def group(self, index: int) -> str:
        """The group's name; the first time, its coordinator is looked up as a client does."""
        name = f"{self.namespace}-g{index}"
        if name not in self.coordinators:
            self.find_coordinator(name, 0)
            self.coordinators.add(name)
        return name

    def version(self, api_key: int, choice: int, highest: int | None = None) -> int | None:
        """The version `choice` picks in the range both brokers serve, up to `highest` (None:
        no common one)."""
        low, high = self.versions.get(api_key, (0, -1))
        if highest is not None:
            high = min(high, highest)
        if low > high:
            return None
        return low + choice % (high - low + 1)

    def request(self, api_key: int, choice: int, body: Struct, highest: int | None = None) -> Any:
        """Send one request at the chosen version; the answer, or Closed when the broker
        closed the connection (the session reconnects for the next step)."""
        version = self.version(api_key, choice, highest)
        if version is None:
            return "no common version"
        self.requests += 1
        try:
            return self.wire.request(api_key, version, body)
        except (OSError, ProtocolError, struct.error):
            self.wire.close()
            self.wire = Wire(self.host, self.port)
            return Closed.CONNECTION

    def send_only(self, api_key: int, choice: int, body: Struct) -> Any:
        """A request that gets no answer (Produce with acks=0)."""
        version = self.version(api_key, choice)
        if version is None:
            return "no common version"
        self.requests += 1
        try:
            self.wire.sock.sendall(frames.encode_request(api_key, version, 0, "diff", body))
        except OSError:
            self.wire.close()
            self.wire = Wire(self.host, self.port)
            return Closed.CONNECTION
        return "no answer (acks=0)"

    def retrying(self, send: Callable[[], Any], codes: set[int] = RETRIABLE) -> Any:
        """`send()` again while any error in its answer is in `codes`, for up to
        SETTLE_SECONDS."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            answer = send()
            if not errors_of(answer) & codes or time.monotonic() > deadline:
                return answer
            time.sleep(0.05)

    def find_coordinator(self, key: str, key_type: int) -> None:
        """FindCoordinator until the coordinator is known, as a client asks before any group
        or transaction request (it also makes the broker create its internal topic)."""
        body = make(m.FindCoordinatorRequest, key=key, key_type=key_type, coordinator_keys=[key])
        self.retrying(lambda: self.ask(ApiKey.FIND_COORDINATOR, 1, body))

    # ------------------------------------------------------------ waiting for the broker
    def topic_state(self, index: int) -> tuple[int, int]:
        """(error code, partitions with a leader) of a topic, by Metadata."""
        body = make(
            m.MetadataRequest,
            topics=[make(m.MetadataRequest.MetadataRequestTopic, name=self.topic(index))],
            allow_auto_topic_creation=False,
        )
        answer = self.ask(ApiKey.METADATA, 5, body)
        topic = answer.topics[0]
        return topic.error_code, sum(1 for p in topic.partitions if p.leader_id >= 0)

    def wait_topic(self, index: int, partitions: int, seconds: float = SETTLE_SECONDS) -> None:
        """Until the topic has `partitions` partitions with leaders, for at most `seconds`:
        GONE waits until it is unknown, EXISTS until it has any."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            code, led = self.topic_state(index)
            if partitions == GONE and code == 3:  # UNKNOWN_TOPIC_OR_PARTITION
                return
            present = led == partitions or (partitions == EXISTS and code == 0 and led > 0)
            if present and self.leaders_serve(index, led):
                return
            time.sleep(0.05)

    def leaders_serve(self, index: int, partitions: int) -> bool:
        """Whether every partition's leader serves it already: Metadata may name a leader a
        moment before that broker acts as one (a KRaft broker applies the metadata log)."""
        for partition in range(partitions):
            if self.list_offset(index, partition, -1, 0).error_code != 0:
                return False
        return True

    def list_offset(self, index: int, partition: int, timestamp: int, isolation: int) -> Any:
        """One partition's ListOffsets v2 answer, on the session's own connection."""
        body = make(
            m.ListOffsetsRequest,
            replica_id=-1,
            isolation_level=isolation,
            topics=[
                make(
                    m.ListOffsetsRequest.ListOffsetsTopic,
                    name=self.topic(index),
                    partitions=[
                        make(
                            m.ListOffsetsRequest.ListOffsetsPartition,
                            partition_index=partition,
                            timestamp=timestamp,
                        )
                    ],
                )
            ],
        )
        return self.ask(ApiKey.LIST_OFFSETS, 2, body).topics[0].partitions[0]

    def last_offsets(self, index: int, partition: int) -> tuple[int, int]:
        """(high watermark, last stable offset) of a partition."""
        hw = self.list_offset(index, partition, -1, 0).offset
        return hw, self.list_offset(index, partition, -1, 1).offset

    def settle(self, partitions: set[tuple[int, int]]) -> None:
        """Until every partition's transaction markers are written: LSO = HW."""
        deadline = time.monotonic() + SETTLE_SECONDS
        for topic, partition in partitions:
            while time.monotonic() < deadline:
                hw, lso = self.last_offsets(topic, partition)
                if hw == lso:
                    break
                time.sleep(0.05)


def errors_of(answer: Any) -> set[int]:
    """Every error code in an answer, at the top or in its topics, partitions or groups."""
    if isinstance(answer, list):
        return set().union(*(errors_of(item) for item in answer))
    if not isinstance(answer, Struct):
        return set()
    found = set()
    for attr in answer.__slots__:
        value = getattr(answer, attr)
        if attr.endswith("error_code") and isinstance(value, int):
            found.add(value)
        elif isinstance(value, Struct | list):
            found |= errors_of(value)
    return found


def warm_up(address: tuple[str, int]) -> None:
    """Have a broker create and load its internal topics before the first sequence, as a
    client's first group and transaction would, so that no sequence starts on a broker
    still loading them."""
    session = Session(*address, f"warm{uuid.uuid4().hex[:6]}", {})
    try:
        session.group(0)
        session.find_coordinator(f"{session.namespace}-txn", 1)
        body = make(m.DescribeGroupsRequest, groups=[session.group(0)])
        session.retrying(lambda: session.ask(ApiKey.DESCRIBE_GROUPS, 0, body))
    finally:
        session.close()


# ---------------------------------------------------------------------------- the normal form
IGNORED = {
    "batch_index_error_message",
    "throttle_time_ms",
    "error_message",
    "node_id",
    "host",
    "port",
    "rack",
    "cluster_id",
    "controller_id",
    "brokers",
    "node_endpoints",
    "session_id",
    "preferred_read_replica",
    "cluster_authorized_operations",
    "topic_authorized_operations",
    "client_host",
    "client_id",
    "coordinator_key",
    "tagged_fields",
    "unknown_tagged_fields",
}
NAME_KEYS = {"name", "topic", "group_id", "partition_index"}
# Nullable lists whose null a client reads as empty (Kafka sends null aborted transactions for
# a partition in error, an empty list where kafka-ref has nothing to list).
NULL_AS_EMPTY = {"aborted_transactions"}
GENERATED = {
    "producer_id": "pid",
    "member_id": "member",
    "leader": "member",
    "topic_id": "topic-id",
    "group_instance_id": "instance",
    # node ids: Kafka's first node is 1, a kafka-ref broker's 0 unless configured
    "leader_id": "node",
    "replica_nodes": "node",
    "isr_nodes": "node",
    "offline_replicas": "node",
    "eligible_leader_replicas": "node",
    "last_known_elr": "node",
}


def normal(names: Names, value: Any, name: str = "") -> Any:
    """The normal form of an answer (see the module docstring): plain values, comparable."""
    if isinstance(value, Closed):
        return value.value
    if value is None and name in NULL_AS_EMPTY:
        return []
    if name == "configs" and isinstance(value, list):
        # Only the topic configs kafka-ref has: Kafka lists those of its other features
        # too (tiered storage, compression levels, replication throttles, ...).
        value = [c for c in value if getattr(c, "name", None) in TOPIC_CONFIGS]
    if isinstance(value, Struct):
        return {
            attr: normal(names, getattr(value, attr), attr)
            for attr in value.__slots__
            if attr not in IGNORED
        }
    if isinstance(value, list):
        items = [normal(names, item, name) for item in value]
        # A broker may list topics, partitions or groups in any order (Kafka's answers to
        # Metadata and AddPartitionsToTxn follow hash sets, not the request); a client finds
        # each by its name or index.
        if items and all(isinstance(i, dict) and NAME_KEYS & i.keys() for i in items):
            items.sort(key=lambda i: str([i.get(k) for k in sorted(NAME_KEYS & i.keys())]))
        return items
    if name == "records":
        return batches(names, value)
    if name in GENERATED and value not in (None, "", -1) and not isinstance(value, bool):
        if name == "topic_id" and value == uuid.UUID(int=0):
            return "zero"
        return names.generated(GENERATED[name], value)
    if name in ("log_append_time_ms", "timestamp") and isinstance(value, int) and value > 0:
        return relative_time(names, value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, str):
        return value.replace(names.namespace, "NS")
    return value


def relative_time(names: Names, ms: int) -> object:
    """A time as an offset from the sequence's start, or `broker-time` for a time the broker
    took from its clock during the sequence."""
    delta = ms - names.base_ms
    if -1000 <= delta <= 120_000 and delta not in TIMESTAMP_DELTAS:
        return "broker-time"
    return delta


def batches(names: Names, data: Any) -> Any:
    """Fetched records, decoded: per whole batch its offsets, kind and records."""
    if data is None:
        return None
    out = []
    for batch in raw.parse_batches(bytes(data)):
        append_time = bool(batch.attributes & 0x08)
        out.append(
            {
                "base_offset": batch.base_offset,
                "last_offset": batch.base_offset + batch.last_offset_delta,
                "codec": batch.attributes & 0x07,
                "transactional": bool(batch.attributes & 0x10),
                "control": bool(batch.attributes & 0x20),
                "append_time": append_time,
                "producer": normal(names, batch.producer_id, "producer_id"),
                "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence,
                "records": [
                    (
                        r["offset"],
                        r["key"],
                        r["value"],
                        tuple(r["headers"]),
                        "broker-time" if append_time else r["timestamp"] - names.base_ms,
                    )
                    for r in batch.records
                ],
            }
        )
    return out


# ---------------------------------------------------------------------------- the steps
# Record timestamps a step may give, relative to the sequence's start: now, a day ago, two
# hours ahead (Kafka 4 refuses more than message.timestamp.after.max.ms = 1 h ahead).
TIMESTAMP_DELTAS = (0, -86_400_000, 7_200_000)
DEFECTS = (None, "crc", "count", "length", "magic1", "control", "transactional", "pid-no-seq")


@dataclass(frozen=True)
class Shape:
    """A batch a producer might send, well formed or with one defect."""

    records: int
    codec: int
    keyed: bool
    headers: bool
    timestamp: int  # index into TIMESTAMP_DELTAS
    defect: str | None
    seed: int

    def encode(self, session: Session, **header: int) -> bytes:
        rng = random.Random(self.seed)
        records = [
            raw.RawRecord(
                key=b"k%d" % rng.randrange(4) if self.keyed else None,
                value=b"v" * rng.randrange(1, 30),
                headers=[("h", b"%d" % i)] if self.headers else [],
                timestamp_delta=i,
            )
            for i in range(self.records)
        ]
        attributes = self.codec
        if self.defect == "control":
            attributes |= 0x20
        if self.defect == "transactional":
            attributes |= 0x10
        options: dict[str, Any] = dict(header)
        if self.defect == "pid-no-seq":
            options.update(producer_id=1000, producer_epoch=0, base_sequence=-1)
        if self.defect == "count":
            options["records_count"] = self.records + 1
        base = session.base_ms + TIMESTAMP_DELTAS[self.timestamp]
        data = raw.raw_batch(records, attributes=attributes, base_timestamp=base, **options)
        if self.defect == "crc":
            data = data[:17] + bytes([data[17] ^ 0xFF]) + data[18:]
        if self.defect == "length":
            data = data[:8] + struct.pack(">i", len(data) - 12 + 7) + data[12:]
        if self.defect == "magic1":
            data = data[:16] + b"\x01" + data[17:]
        return data


def produce_request(
    session: Session, topic: int, partition: int, data: bytes, acks: int, txn: str | None = None
) -> Struct:
    return make(
        m.ProduceRequest,
        transactional_id=txn,
        acks=acks,
        timeout_ms=10000,
        topic_data=[
            make(
                m.ProduceRequest.TopicProduceData,
                name=session.topic(topic),
                partition_data=[
                    make(m.ProduceRequest.PartitionProduceData, index=partition, records=data)
                ],
            )
        ],
    )


@dataclass(frozen=True)
class CreateTopic:
    topic: int
    partitions: int
    replication: int
    compacted: bool
    append_time: bool
    v: int

    def run(self, s: Session) -> Any:
        configs = {}
        if self.compacted:
            configs["cleanup.policy"] = "compact"
        if self.append_time:
            configs["message.timestamp.type"] = "LogAppendTime"
        body = make(
            m.CreateTopicsRequest,
            topics=[
                make(
                    m.CreateTopicsRequest.CreatableTopic,
                    name=s.topic(self.topic),
                    num_partitions=self.partitions,
                    replication_factor=self.replication,
                    assignments=[],
                    configs=[
                        make(m.CreateTopicsRequest.CreatableTopicConfig, name=k, value=v)
                        for k, v in configs.items()
                    ],
                )
            ],
            timeout_ms=10000,
            validate_only=False,
        )
        answer = s.request(ApiKey.CREATE_TOPICS, self.v, body)
        if not isinstance(answer, Closed | str) and answer.topics[0].error_code == 0:
            s.wait_topic(self.topic, self.partitions)
        return answer


@dataclass(frozen=True)
class DeleteTopic:
    topic: int
    v: int

    def run(self, s: Session) -> Any:
        name = s.topic(self.topic)
        body = make(
            m.DeleteTopicsRequest,
            topic_names=[name],
            topics=[make(m.DeleteTopicsRequest.DeleteTopicState, name=name)],
            timeout_ms=10000,
        )
        answer = s.request(ApiKey.DELETE_TOPICS, self.v, body)
        if not isinstance(answer, Closed | str) and answer.responses[0].error_code == 0:
            s.wait_topic(self.topic, GONE)
        return answer


@dataclass(frozen=True)
class CreatePartitions:
    topic: int
    count: int
    v: int

    def run(self, s: Session) -> Any:
        body = make(
            m.CreatePartitionsRequest,
            topics=[
                make(
                    m.CreatePartitionsRequest.CreatePartitionsTopic,
                    name=s.topic(self.topic),
                    count=self.count,
                    assignments=None,
                )
            ],
            timeout_ms=10000,
            validate_only=False,
        )
        answer = s.request(ApiKey.CREATE_PARTITIONS, self.v, body)
        if not isinstance(answer, Closed | str) and answer.results[0].error_code == 0:
            s.wait_topic(self.topic, self.count)
        return answer


@dataclass(frozen=True)
class Produce:
    topic: int
    partition: int
    shape: Shape
    acks: int
    v: int

    def run(self, s: Session) -> Any:
        body = produce_request(s, self.topic, self.partition, self.shape.encode(s), self.acks)
        if self.acks == 0:
            return s.send_only(ApiKey.PRODUCE, self.v, body)
        return s.request(ApiKey.PRODUCE, self.v, body)


@dataclass(frozen=True)
class Fetch:
    topic: int
    partition: int
    offset: int
    isolation: int
    partition_max_bytes: int
    v: int

    def run(self, s: Session) -> Any:
        body = make(
            m.FetchRequest,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=self.isolation,
            session_id=0,
            session_epoch=-1,
            topics=[
                make(
                    m.FetchRequest.FetchTopic,
                    topic=s.topic(self.topic),
                    partitions=[
                        make(
                            m.FetchRequest.FetchPartition,
                            partition=self.partition,
                            current_leader_epoch=-1,
                            fetch_offset=self.offset,
                            log_start_offset=-1,
                            partition_max_bytes=self.partition_max_bytes,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
        )
        return s.request(ApiKey.FETCH, self.v, body)


@dataclass(frozen=True)
class ListOffsets:
    topic: int
    partition: int
    timestamp: int  # -1 latest, -2 earliest, -3 max timestamp, else an index of TIMESTAMP_DELTAS
    isolation: int
    v: int

    def run(self, s: Session) -> Any:
        when = self.timestamp
        if when >= 0:
            when = s.base_ms + TIMESTAMP_DELTAS[when % len(TIMESTAMP_DELTAS)]
        body = make(
            m.ListOffsetsRequest,
            replica_id=-1,
            isolation_level=self.isolation,
            topics=[
                make(
                    m.ListOffsetsRequest.ListOffsetsTopic,
                    name=s.topic(self.topic),
                    partitions=[
                        make(
                            m.ListOffsetsRequest.ListOffsetsPartition,
                            partition_index=self.partition,
                            timestamp=when,
                        )
                    ],
                )
            ],
        )
        return s.request(ApiKey.LIST_OFFSETS, self.v, body)


@dataclass(frozen=True)
class Metadata:
    topics: tuple[int, ...]
    auto_create: bool
    v: int

    def run(self, s: Session) -> Any:
        body = make(
            m.MetadataRequest,
            topics=[
                make(m.MetadataRequest.MetadataRequestTopic, name=s.topic(t)) for t in self.topics
            ],
            allow_auto_topic_creation=self.auto_create,
        )
        answer = s.request(ApiKey.METADATA, self.v, body)
        version = s.version(ApiKey.METADATA, self.v)
        creating = self.auto_create or (version is not None and version < 4)  # v0-v3 always
        if creating and not isinstance(answer, Closed | str):
            # A broker may create the topic after answering (a KRaft broker asks its
            # controller): the next step must find it, on either broker.
            for topic in self.topics:
                s.wait_topic(topic, EXISTS, seconds=3.0)
        return answer


@dataclass(frozen=True)
class DeleteRecords:
    topic: int
    partition: int
    offset: int
    v: int

    def run(self, s: Session) -> Any:
        body = make(
            m.DeleteRecordsRequest,
            topics=[
                make(
                    m.DeleteRecordsRequest.DeleteRecordsTopic,
                    name=s.topic(self.topic),
                    partitions=[
                        make(
                            m.DeleteRecordsRequest.DeleteRecordsPartition,
                            partition_index=self.partition,
                            offset=self.offset,
                        )
                    ],
                )
            ],
            timeout_ms=10000,
        )
        return s.request(ApiKey.DELETE_RECORDS, self.v, body)


@dataclass(frozen=True)
class InitProducer:
    producer: int
    transactional: bool
    v: int

    def run(self, s: Session) -> Any:
        txn = f"{s.namespace}-txn{self.producer}" if self.transactional else None
        if txn is not None:
            s.find_coordinator(txn, 1)
        body = make(m.InitProducerIdRequest, transactional_id=txn, transaction_timeout_ms=60000)
        answer = s.retrying(lambda: s.request(ApiKey.INIT_PRODUCER_ID, self.v, body))
        if not isinstance(answer, Closed | str) and answer.error_code == 0:
            s.producers[self.producer] = Producer(answer.producer_id, answer.producer_epoch, txn)
        return answer


@dataclass(frozen=True)
class ProducerProduce:
    """A batch of an initialised producer: at its next sequence, or a duplicate, a gap, or
    sequence 0 again; in its epoch or an older one; transactional if the producer is."""

    producer: int
    topic: int
    partition: int
    records: int
    sequence: str  # next | duplicate | gap | zero
    old_epoch: bool
    v: int

    def run(self, s: Session) -> Any:
        p = s.producers.get(self.producer)
        if p is None:
            return "producer not initialised"
        key = (self.topic, self.partition)
        nxt = p.sequences.get(key, 0)
        sequence = {
            "next": nxt,
            "duplicate": max(nxt - self.records, 0),
            "gap": nxt + 3,
            "zero": 0,
        }[self.sequence]
        epoch = p.epoch - 1 if self.old_epoch and p.epoch > 0 else p.epoch
        records = [
            raw.RawRecord(None, b"p%d" % i, [], timestamp_delta=i) for i in range(self.records)
        ]
        attributes = 0x10 if p.transactional_id else 0
        data = raw.raw_batch(
            records,
            attributes=attributes,
            base_timestamp=s.base_ms,
            producer_id=p.producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
        )
        body = produce_request(s, self.topic, self.partition, data, -1, p.transactional_id)
        answer = s.request(ApiKey.PRODUCE, self.v, body)
        if isinstance(answer, Closed | str):
            return answer
        code = answer.responses[0].partition_responses[0].error_code
        if code == 0 and sequence == nxt:
            p.sequences[key] = nxt + self.records
        return answer


@dataclass(frozen=True)
class AddPartitions:
    producer: int
    topic: int
    added: tuple[int, ...]  # the partitions added
    v: int

    def run(self, s: Session) -> Any:
        p = s.producers.get(self.producer)
        if p is None or p.transactional_id is None:
            return "no transactional producer"
        body = make(
            m.AddPartitionsToTxnRequest,
            v3_and_below_transactional_id=p.transactional_id,
            v3_and_below_producer_id=p.producer_id,
            v3_and_below_producer_epoch=p.epoch,
            v3_and_below_topics=[
                make(
                    m.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic,
                    name=s.topic(self.topic),
                    partitions=list(self.added),
                )
            ],
        )
        # v4 and later are the brokers' own form (KIP-890's verification), not a client's.
        answer = s.retrying(
            lambda: s.request(ApiKey.ADD_PARTITIONS_TO_TXN, self.v, body, highest=3),
            RETRIABLE | {CONCURRENT_TRANSACTIONS},
        )
        if not isinstance(answer, Closed | str):
            codes = [
                r.partition_error_code
                for t in answer.results_by_topic_v3_and_below
                for r in t.results_by_partition
            ]
            if all(code == 0 for code in codes):
                p.partitions |= {(self.topic, q) for q in self.added}
        return answer


@dataclass(frozen=True)
class EndTxn:
    producer: int
    commit: bool
    v: int

    def run(self, s: Session) -> Any:
        p = s.producers.get(self.producer)
        if p is None or p.transactional_id is None:
            return "no transactional producer"
        body = make(
            m.EndTxnRequest,
            transactional_id=p.transactional_id,
            producer_id=p.producer_id,
            producer_epoch=p.epoch,
            committed=self.commit,
        )
        answer = s.retrying(
            lambda: s.request(ApiKey.END_TXN, self.v, body), RETRIABLE | {CONCURRENT_TRANSACTIONS}
        )
        if not isinstance(answer, Closed | str) and answer.error_code == 0:
            s.settle(p.partitions)
            p.partitions = set()
            if self.v >= tv.END_TXN_V2_VERSION:  # transactions v2: the next epoch (TXN-92)
                p.producer_id, p.epoch = answer.producer_id, answer.producer_epoch
                p.sequences = {}
        return answer


@dataclass(frozen=True)
class JoinGroup:
    """A consumer joins a group alone: JoinGroup (MEMBER_ID_REQUIRED, then again with the
    id), then SyncGroup with the assignment it computed as the leader."""

    group: int
    v: int

    def run(self, s: Session) -> Any:
        member = s.members.setdefault(self.group, Member())

        def join() -> Any:
            body = make(
                m.JoinGroupRequest,
                group_id=s.group(self.group),
                session_timeout_ms=30000,
                rebalance_timeout_ms=30000,
                member_id=member.member_id,
                protocol_type="consumer",
                protocols=[
                    make(m.JoinGroupRequest.JoinGroupRequestProtocol, name="range", metadata=b"m")
                ],
            )
            return s.retrying(lambda: s.request(ApiKey.JOIN_GROUP, self.v, body))

        first = join()
        answers = [first]
        if getattr(first, "error_code", None) == 79:  # MEMBER_ID_REQUIRED (KIP-394)
            member.member_id = first.member_id
            answers.append(join())
        joined = answers[-1]
        if isinstance(joined, Closed | str) or joined.error_code != 0:
            return answers
        member.member_id, member.generation = joined.member_id, joined.generation_id
        body = make(
            m.SyncGroupRequest,
            group_id=s.group(self.group),
            generation_id=member.generation,
            member_id=member.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[
                make(
                    m.SyncGroupRequest.SyncGroupRequestAssignment,
                    member_id=member.member_id,
                    assignment=b"a",
                )
            ],
        )
        answers.append(s.request(ApiKey.SYNC_GROUP, self.v, body))
        return answers


@dataclass(frozen=True)
class CommitOffset:
    group: int
    topic: int
    partition: int
    offset: int
    as_member: bool  # the group's member and generation, or a simple consumer (-1, "")
    v: int

    def run(self, s: Session) -> Any:
        member = s.members.get(self.group, Member()) if self.as_member else Member()
        body = make(
            m.OffsetCommitRequest,
            group_id=s.group(self.group),
            generation_id_or_member_epoch=member.generation,
            generation_id=member.generation,
            member_id=member.member_id,
            topics=[
                make(
                    m.OffsetCommitRequest.OffsetCommitRequestTopic,
                    name=s.topic(self.topic),
                    partitions=[
                        make(
                            m.OffsetCommitRequest.OffsetCommitRequestPartition,
                            partition_index=self.partition,
                            committed_offset=self.offset,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                    ],
                )
            ],
        )
        return s.retrying(lambda: s.request(ApiKey.OFFSET_COMMIT, self.v, body))


@dataclass(frozen=True)
class FetchOffsets:
    group: int
    topic: int
    v: int

    def run(self, s: Session) -> Any:
        body = make(
            m.OffsetFetchRequest,
            group_id=s.group(self.group),
            topics=[
                make(
                    m.OffsetFetchRequest.OffsetFetchRequestTopic,
                    name=s.topic(self.topic),
                    partition_indexes=[0, 1],
                )
            ],
            require_stable=False,
        )
        return s.retrying(lambda: s.request(ApiKey.OFFSET_FETCH, self.v, body))


@dataclass(frozen=True)
class Heartbeat:
    group: int
    v: int

    def run(self, s: Session) -> Any:
        member = s.members.get(self.group, Member())
        body = make(
            m.HeartbeatRequest,
            group_id=s.group(self.group),
            generation_id=member.generation,
            member_id=member.member_id,
        )
        return s.retrying(lambda: s.request(ApiKey.HEARTBEAT, self.v, body))


@dataclass(frozen=True)
class LeaveGroup:
    group: int
    v: int

    def run(self, s: Session) -> Any:
        member = s.members.pop(self.group, Member())
        body = make(
            m.LeaveGroupRequest,
            group_id=s.group(self.group),
            member_id=member.member_id,
            members=[make(m.LeaveGroupRequest.MemberIdentity, member_id=member.member_id)],
        )
        return s.retrying(lambda: s.request(ApiKey.LEAVE_GROUP, self.v, body))


@dataclass(frozen=True)
class DescribeGroup:
    group: int
    v: int

    def run(self, s: Session) -> Any:
        body = make(m.DescribeGroupsRequest, groups=[s.group(self.group)])
        return s.retrying(lambda: s.request(ApiKey.DESCRIBE_GROUPS, self.v, body))


@dataclass(frozen=True)
class DeleteGroup:
    group: int
    v: int

    def run(self, s: Session) -> Any:
        body = make(m.DeleteGroupsRequest, groups_names=[s.group(self.group)])
        answer = s.retrying(lambda: s.request(ApiKey.DELETE_GROUPS, self.v, body))
        s.members.pop(self.group, None)
        return answer


STEPS = (
    CreateTopic,
    DeleteTopic,
    CreatePartitions,
    Produce,
    Fetch,
    ListOffsets,
    Metadata,
    DeleteRecords,
    InitProducer,
    ProducerProduce,
    AddPartitions,
    EndTxn,
    JoinGroup,
    CommitOffset,
    FetchOffsets,
    Heartbeat,
    LeaveGroup,
    DescribeGroup,
    DeleteGroup,
)


# ---------------------------------------------------------------------------- comparing
@dataclass
class Divergence:
    index: int
    step: Any
    a: Any
    b: Any
    known: str | None = None  # the rule that documents it, for a known divergence


def _produce_codes(answer: Any) -> list[int]:
    if not isinstance(answer, dict):
        return []
    return [p["error_code"] for t in answer["responses"] for p in t["partition_responses"]]


# Divergences kafka-ref documents (a rule that says "Kafka: diverges", with the reason): the
# rule, and how to recognise the first answer it changes. The rest of such a sequence is not
# compared: the two brokers' states differ from there on.
KNOWN_DIVERGENCES: tuple[tuple[str, Callable[[Any, Any, Any], bool]], ...] = (
    # IDEM-7: a producer without state on the partition may only start at sequence 0 in
    # kafka-ref (Kafka 2.x's UNKNOWN_PRODUCER_ID); Kafka 2.5+ takes any first sequence.
    (
        "IDEM-7",
        lambda step, a, b: (
            isinstance(step, ProducerProduce)
            and _produce_codes(a) == [0]
            and _produce_codes(b) == [59]
        ),
    ),
)


def known_divergence(step: Any, a: Any, b: Any) -> str | None:
    """The rule that documents this divergence, or None if none does."""
    return next((rule for rule, matches in KNOWN_DIVERGENCES if matches(step, a, b)), None)

    def __str__(self) -> str:
        lines = [f"step {self.index} {self.step}:"]
        lines += [f"  {path}: A {x!r}, B {y!r}" for path, x, y in differences(self.a, self.b)]
        return "\n".join(lines)


def differences(a: Any, b: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """The leaves where two normal forms differ, with their paths."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for key in a:
            yield from differences(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{path}[{i}]")
    elif a != b:
        yield path or ".", a, b


def run(
    host: str, port: int, steps: list[Any], namespace: str, versions: dict
) -> tuple[list[Any], int]:
    """Every step's normal-form answer from one broker, and the number of requests sent."""
    session = Session(host, port, namespace, versions)
    try:
        return [normal(session.names, step.run(session)) for step in steps], session.requests
    finally:
        session.close()


def common_versions(*addresses: tuple[str, int]) -> dict[int, tuple[int, int]]:
    """Per API key, the versions every broker serves (Produce from v3: v0-v2 only refuse)."""
    ranges: list[dict[int, tuple[int, int]]] = []
    for host, port in addresses:
        with Wire(host, port) as wire:
            keys = wire.api_versions(0).api_keys
        ranges.append({k.api_key: (k.min_version, k.max_version) for k in keys})
    common = {}
    for key in set.intersection(*(set(r) for r in ranges)):
        low = max(r[key][0] for r in ranges)
        high = min(r[key][1] for r in ranges)
        if key == ApiKey.PRODUCE:
            low = max(low, 3)
        common[key] = (low, high)
    return common


def compare(
    steps: list[Any], a: tuple[str, int], b: tuple[str, int], versions: dict
) -> tuple[Divergence | None, int]:
    """Run `steps` on both brokers (fresh names on each); the first divergence, if any
    (`known` names the rule of a documented one), and the number of requests sent."""
    namespace = f"d{uuid.uuid4().hex[:10]}"
    answers_a, sent_a = run(*a, steps, namespace + "a", versions)
    answers_b, sent_b = run(*b, steps, namespace + "b", versions)
    for index, (step, x, y) in enumerate(zip(steps, answers_a, answers_b, strict=True)):
        if x != y:
            return Divergence(index, step, x, y, known_divergence(step, x, y)), sent_a + sent_b
    return None, sent_a + sent_b


# What each field of a step may be, simplest first (hypothesis shrinks towards the first);
# a choice listed twice is drawn twice as often by the command line's random sequences.
CHOICES: dict[str, tuple[Any, ...]] = {
    "topic": (0, 0, 1, 2, 3),
    "partitions": (1, 1, 2, 3, 0),
    "replication": (1, 1, 1, 2),
    "compacted": (False, False, False, True),
    "append_time": (False, False, False, True),
    "count": (1, 2, 3, 4),
    "partition": (0, 0, 0, 1, 2, 5),
    "acks": (1, -1, -1, 0, 2),
    "offset": (0, 0, 1, 2, 3, 5, 8, 13, -1),
    "isolation": (0, 1),
    "partition_max_bytes": (1 << 20, 1 << 20, 100, 1),
    "timestamp": (-1, -2, -3, 0, 1, 2),
    "topics": tuple((a,) for a in range(TOPICS + 1))
    + tuple((a, b) for a in range(TOPICS + 1) for b in range(TOPICS + 1) if a != b),
    "added": ((0,), (1,), (2,), (0, 1), (0, 2), (1, 2)),
    "auto_create": (False, False, True),
    "producer": tuple(range(PRODUCERS)),
    "transactional": (False, True, True),
    "records": (1, 2, 3),
    "sequence": ("next", "next", "next", "duplicate", "gap", "zero"),
    "old_epoch": (False, False, False, False, True),
    "commit": (True, True, False),
    "group": tuple(range(GROUPS)),
    "as_member": (False, True),
    "v": tuple(range(100)),
}
SHAPE_CHOICES: dict[str, tuple[Any, ...]] = {
    "records": (1, 2, 3, 4),
    "codec": (0, 0, 1, 2, 3, 4),
    "keyed": (False, True),
    "headers": (False, False, True),
    "timestamp": tuple(range(len(TIMESTAMP_DELTAS))),
    "defect": DEFECTS[:1] * 6 + DEFECTS[1:],
    "seed": tuple(range(1000)),
}


def build(cls: type, choose: Callable[[tuple[Any, ...]], Any]) -> Any:
    """A step of type `cls`, each field picked by `choose` from its CHOICES: the command
    line's random draws and the tests' hypothesis draws share one definition of a step."""
    values = {}
    for f in dataclasses.fields(cls):
        if f.name == "shape":
            values[f.name] = Shape(**{k: choose(v) for k, v in SHAPE_CHOICES.items()})
        else:
            values[f.name] = choose(CHOICES[f.name])
    return cls(**values)


def opening(choose: Callable[[tuple[Any, ...]], Any]) -> CreateTopic:
    """The step most sequences start with: topic 0 created, so that what follows has data
    to work on (without it most steps of a short sequence would meet an unknown topic)."""
    return CreateTopic(
        topic=0,
        partitions=choose((1, 2, 3)),
        replication=1,
        compacted=choose(CHOICES["compacted"]),
        append_time=choose(CHOICES["append_time"]),
        v=choose(CHOICES["v"]),
    )


def random_steps(rng: random.Random, length: int) -> Iterator[Any]:
    """A random sequence of `length` steps, as the command line draws it: most open with
    topic 0 created."""
    if rng.random() < 0.8:
        yield opening(rng.choice)
        length -= 1
    for _ in range(length):
        yield build(rng.choice(STEPS), rng.choice)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_ref.conformance.differential")
    parser.add_argument("--a", required=True, metavar="HOST:PORT")
    parser.add_argument("--b", required=True, metavar="HOST:PORT")
    parser.add_argument("--sequences", type=int, default=100)
    parser.add_argument("--length", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="print the steps before each")
    args = parser.parse_args(argv)
    a = (args.a.rpartition(":")[0], int(args.a.rpartition(":")[2]))
    b = (args.b.rpartition(":")[0], int(args.b.rpartition(":")[2]))
    versions = common_versions(a, b)
    warm_up(a)
    warm_up(b)
    rng = random.Random(args.seed)
    sent = diverged = known = 0
    for number in range(args.sequences):
        steps = list(random_steps(rng, rng.randint(1, args.length)))
        found, requests = compare(steps, a, b, versions)
        sent += requests
        if found and found.known:
            known += 1
        elif found:
            diverged += 1
            print(f"sequence {number}: {found}", flush=True)
            if args.verbose:
                for index, step in enumerate(steps[: found.index]):
                    print(f"    {index}: {step}")
    print(
        f"{args.sequences} sequences, {sent} requests, {diverged} diverged, "
        f"{known} ended at a documented divergence"
    )
    return 1 if diverged else 0


if __name__ == "__main__":
    sys.exit(main())
