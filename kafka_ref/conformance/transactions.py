"""Transactions at the wire level: a transactional producer driven one request at a time,
and a read_committed reader.

A real transactional client (librdkafka, kafka-python) hides every step of KIP-98 and
never misbehaves on purpose, so it cannot play the *zombie*: the old instance of a
producer that keeps writing after a new instance with the same `transactional.id` fenced
it. `TxnProducer` can. It speaks to the transaction coordinator (FindCoordinator with key
type 1) and to the partition leader with exactly the requests a client sends:
InitProducerId, AddPartitionsToTxn, Produce of transactional batches (producer id, epoch,
per-partition sequence) and EndTxn; each method returns the error code, so a test can
check what a fenced producer is told.

`read_committed` reads a partition as a read_committed consumer does: Fetch with
`isolation_level=1` up to the last stable offset, and the broker's list of aborted
transactions applied by kafka-ref's own consumer code (`kafka_ref.client.consumer_fetch`), so
aborted records and markers are dropped exactly as a client drops them. A broker that
leaves out the aborted transactions is then seen to return aborted data, as a real
consumer would see it.

Errors the protocol calls retriable (the coordinator is loading, or the previous
transaction is still being completed) are retried until a deadline, as clients do.

With `transaction_version=2` the producer speaks transactions v2 (KIP-890 part 2), as the
Java client does against a cluster that finalized it: `add` sends nothing (Produce v12 has
the leader add the partition), EndTxn is v5 and its answer gives the epoch of the next
transaction, which starts every partition at sequence 0 again.
"""

from __future__ import annotations

import time
from typing import Any

from kafka_ref.client.connection import CLIENT_VERSIONS
from kafka_ref.client.consumer_fetch import CompletedFetch
from kafka_ref.common import TopicPartition
from kafka_ref.conformance.wire import Wire, batch, retrying
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    AddPartitionsToTxnRequest,
    ApiKey,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
)
from kafka_ref.txn import transaction_version as tv

READ_COMMITTED = 1
FENCED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED})
RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)
TXN_APIS = (
    ApiKey.FIND_COORDINATOR,
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.ADD_PARTITIONS_TO_TXN,
    ApiKey.END_TXN,
)


def negotiate(wire: Wire) -> dict[int, int]:
    """API key -> the highest version both a client and the broker speak, as a client picks
    it from ApiVersions (some brokers answer only the newer versions well). A client's
    versions are our clients' (AddPartitionsToTxn v4+ is the brokers' own form, KIP-890)."""
    ours = {key: high for key, (_, high) in CLIENT_VERSIONS.items()}
    theirs = {k.api_key: k.max_version for k in wire.api_versions(0).api_keys}
    return {key: min(ours[key], theirs.get(key, 0)) for key in TXN_APIS}


def finalized_transaction_version(wire: Wire) -> int:
    """The cluster's finalized `transaction.version` from ApiVersions v4 (0 when none is
    finalized, or the broker shows no features), as the Java producer reads it."""
    answer = wire.api_versions(4)
    levels = {f.name: f.max_version_level for f in answer.finalized_features}
    return levels.get(tv.FEATURE_NAME, tv.TV_0)


def _retrying(send) -> Any:
    """Call `send()` until its answer's error is not retriable or the deadline passes."""
    return retrying(send, RETRIABLE)


class TxnProducer:
    """One instance of a transactional producer, over its own connections."""

    def __init__(
        self,
        host: str,
        port: int,
        transactional_id: str,
        timeout_ms: int = 60000,
        transaction_version: int = tv.TV_1,
    ) -> None:
        self.transactional_id, self.timeout_ms = transactional_id, timeout_ms
        self.v2 = tv.supports_epoch_bump(transaction_version)
        self.leader = Wire(host, port)
        self.versions = negotiate(self.leader)
        if self.v2:
            self.versions[ApiKey.END_TXN] = tv.END_TXN_V2_VERSION
        found = _retrying(
            lambda: self.leader.request(
                ApiKey.FIND_COORDINATOR,
                self.versions[ApiKey.FIND_COORDINATOR],
                FindCoordinatorRequest(key=transactional_id, key_type=1),
            )
        )
        if found.error_code != 0:
            raise RuntimeError(f"FindCoordinator({transactional_id}): error {found.error_code}")
        self.coordinator = Wire(
            host if found.host in ("localhost", "127.0.0.1") else found.host, found.port
        )
        self.producer_id = self.epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}

    def close(self) -> None:
        self.leader.close()
        self.coordinator.close()

    def __enter__(self) -> TxnProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def init(self) -> int:
        """InitProducerId: this instance's producer id and (bumped) epoch; the error code."""
        body = InitProducerIdRequest(
            transactional_id=self.transactional_id, transaction_timeout_ms=self.timeout_ms
        )
        answer = _retrying(
            lambda: self.coordinator.request(
                ApiKey.INIT_PRODUCER_ID, self.versions[ApiKey.INIT_PRODUCER_ID], body
            )
        )
        if answer.error_code == 0:
            self.producer_id, self.epoch = answer.producer_id, answer.producer_epoch
            self.sequences.clear()  # a new epoch starts every partition at sequence 0
        return answer.error_code

    def add(self, topic: str, *partitions: int) -> int:
        """AddPartitionsToTxn; the first error code of any partition, or 0."""
        return next((code for code in self.add_each(topic, *partitions).values() if code), 0)

    def add_each(self, topic: str, *partitions: int) -> dict[int, int]:
        """AddPartitionsToTxn; each partition's error code. Under transactions v2 nothing is
        sent: the partition leader adds the partition at the first Produce."""
        if self.v2:
            return dict.fromkeys(partitions, 0)
        body = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(
                    name=topic, partitions=list(partitions)
                )
            ],
        )
        version = self.versions[ApiKey.ADD_PARTITIONS_TO_TXN]
        answer = _retrying(
            lambda: _AddAnswer(
                self.coordinator.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, body)
            )
        )
        return answer.codes

    def produce(self, topic: str, partition: int, values: list[bytes]) -> Any:
        """One transactional batch of `values`; the partition's produce response."""
        answer = self.send_batch(topic, partition, self._batch(topic, partition, values))
        if answer.error_code == 0:
            self.sequences[(topic, partition)] += len(values)
        return answer

    def delayed_batch(self, topic: str, partition: int, values: list[bytes]) -> bytes:
        """A batch the producer sent but the network holds back: its sequence is taken, and
        `send_batch` delivers it whenever the test decides it arrives."""
        records = self._batch(topic, partition, values)
        self.sequences[(topic, partition)] += len(values)
        return records

    def _batch(self, topic: str, partition: int, values: list[bytes]) -> bytes:
        return batch(
            values,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequences.setdefault((topic, partition), 0),
            is_transactional=True,
        )

    def send_batch(self, topic: str, partition: int, records: bytes) -> Any:
        """Produce `records` (v12 under transactions v2); the partition's response."""
        version = tv.PRODUCE_V2_VERSION if self.v2 else 7
        return self.leader.produce(
            topic, partition, records, version=version, transactional_id=self.transactional_id
        )

    def end(self, commit: bool) -> int:
        """EndTxn: the error code (0 once the decision is durable)."""
        body = EndTxnRequest(
            transactional_id=self.transactional_id,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            committed=commit,
        )
        version = self.versions[ApiKey.END_TXN]
        answer = _retrying(lambda: self.coordinator.request(ApiKey.END_TXN, version, body))
        if answer.error_code == 0 and self.v2:  # the next transaction's id and epoch
            self.producer_id, self.epoch = answer.producer_id, answer.producer_epoch
            self.sequences.clear()
        return answer.error_code

    def transaction(self, topic: str, values: dict[int, list[bytes]], commit: bool) -> None:
        """Add the partitions of `values`, write them, and end the transaction; asserts that
        every step succeeded."""
        assert self.add(topic, *values) == 0, "AddPartitionsToTxn failed"
        for partition, vs in values.items():
            assert self.produce(topic, partition, vs).error_code == 0, "produce failed"
        assert self.end(commit) == 0, "EndTxn failed"


class _AddAnswer:
    """AddPartitionsToTxn answers per partition; the request fails together, so its error
    (what `_retrying` looks at) is the first partition's error."""

    def __init__(self, response: Any) -> None:
        self.codes = {
            p.partition_index: p.partition_error_code
            for t in response.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }
        self.error_code = next((code for code in self.codes.values() if code), 0)


def read_committed(wire: Wire, topic: str, partition: int, start: int = 0) -> tuple[list, int]:
    """(the values a read_committed consumer reads from `start`, the last stable offset).

    Fetches until the LSO the broker reports; a record is kept only if kafka-ref's
    consumer (CompletedFetch) keeps it with the broker's aborted transactions list."""
    values, offset, lso = [], start, -1
    while True:
        data = wire.fetch(topic, partition, offset, isolation_level=READ_COMMITTED)
        assert data.error_code == 0, f"read_committed fetch at {offset}: error {data.error_code}"
        lso = data.last_stable_offset
        if offset >= lso:
            return values, lso
        fetched = CompletedFetch(
            TopicPartition(topic, partition), offset, data, read_committed=True
        )
        values += [(r.offset, r.value) for r in fetched.take(1 << 30)]
        if fetched.next_fetch_offset <= offset:
            return values, lso  # nothing readable below the LSO at this offset
        offset = fetched.next_fetch_offset


def settled(wire: Wire, topic: str, partition: int, timeout_s: float = 10.0) -> tuple[int, int]:
    """Wait until every transaction of the partition is decided and its marker written: the
    LSO (ListOffsets latest under read_committed) equals the log end. Returns both."""
    deadline = time.monotonic() + timeout_s
    while True:
        end = wire.list_offset(topic, partition, -1).offset
        lso = wire.list_offset(topic, partition, -1, isolation_level=READ_COMMITTED).offset
        if lso == end or time.monotonic() > deadline:
            return lso, end
        time.sleep(0.05)


def wait_for_lso(
    wire: Wire, topic: str, partition: int, at_least: int, timeout_s: float = 10.0
) -> int:
    """ListOffsets latest under read_committed until it reaches `at_least` (EndTxn answers
    once the decision is durable; the markers follow); the last answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        lso = wire.list_offset(topic, partition, -1, isolation_level=READ_COMMITTED).offset
        if lso >= at_least or time.monotonic() > deadline:
            return lso
        time.sleep(0.05)
