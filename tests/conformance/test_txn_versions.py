"""The transaction APIs at the versions a client uses against `transaction.version` 1.

A client of a Kafka whose finalized `transaction.version` is 1 sends InitProducerId v5,
AddOffsetsToTxn v4, TxnOffsetCommit v4 and EndTxn v4 at most (the Java client's
`LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2`); those versions only allow an error a
coordinator does not answer to clients, so a whole transaction runs at them as at the
versions before (TXN-85). ListTransactions v2 filters by a regular expression (TXN-86).
"""

from __future__ import annotations

import time

import pytest

from kafka_ref.conformance.groups import coordinator
from kafka_ref.conformance.transactions import TxnProducer
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode as E
from kafka_ref.protocol.messages import (
    AddOffsetsToTxnRequest,
    ApiKey,
    ListTransactionsRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)

TV1_VERSIONS = {
    ApiKey.INIT_PRODUCER_ID: 5,
    ApiKey.ADD_OFFSETS_TO_TXN: 4,
    ApiKey.TXN_OFFSET_COMMIT: 4,
    ApiKey.END_TXN: 4,
}


@pytest.fixture
def topic(target, wire):
    target.require("transactions", "groups", "create-topics")
    name = target.topic_name("txnv")
    assert wire.create_topic(name, 1) == 0
    return name


def fetch_committed(w: Wire, group: str, topic: str) -> tuple[int, int]:
    """OffsetFetch v7 with require_stable: (error, offset) of partition 0."""
    body = OffsetFetchRequest(
        group_id=group,
        require_stable=True,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
    )
    answer = w.request(ApiKey.OFFSET_FETCH, 7, body).topics[0].partitions[0]
    return answer.error_code, answer.committed_offset


@pytest.mark.spec("TXN-85", "TXN-16", "TXN-84")
def test_a_transaction_with_offsets_at_the_versions_of_transaction_version_1(target, topic):
    target.require_versions(*TV1_VERSIONS.items(), (ApiKey.OFFSET_FETCH, 7))
    group = target.group_name("txnv-group")
    with TxnProducer(target.host, target.port, target.group_name("txnv")) as producer:
        producer.versions.update(TV1_VERSIONS)
        assert producer.init() == 0
        assert producer.add(topic, 0) == 0
        deadline = time.monotonic() + 10  # a new topic's leader may not be known yet
        while (error := producer.produce(topic, 0, [b"out"]).error_code) in (
            E.NOT_LEADER_OR_FOLLOWER,
            E.UNKNOWN_TOPIC_OR_PARTITION,
        ) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert error == 0
        body = AddOffsetsToTxnRequest(
            transactional_id=producer.transactional_id,
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            group_id=group,
        )
        answer = producer.coordinator.request(ApiKey.ADD_OFFSETS_TO_TXN, 4, body)
        assert answer.error_code == 0
        with target.wire() as w:
            host, port = coordinator(w, group)
        with Wire(target.host if host in ("localhost", "127.0.0.1") else host, port) as g:
            commit = TxnOffsetCommitRequest(
                transactional_id=producer.transactional_id,
                group_id=group,
                producer_id=producer.producer_id,
                producer_epoch=producer.epoch,
                topics=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                        name=topic,
                        partitions=[
                            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                                partition_index=0, committed_offset=17, committed_metadata=""
                            )
                        ],
                    )
                ],
            )
            answer = g.request(ApiKey.TXN_OFFSET_COMMIT, 4, commit)
            assert answer.topics[0].partitions[0].error_code == 0
            assert fetch_committed(g, group, topic) == (E.UNSTABLE_OFFSET_COMMIT, -1)
            assert producer.end(commit=True) == 0  # EndTxn v4
            deadline = time.monotonic() + 10
            while fetch_committed(g, group, topic) != (0, 17):
                assert time.monotonic() < deadline, "the committed offsets never became stable"
                time.sleep(0.1)


@pytest.mark.spec("TXN-86")
def test_list_transactions_v2_matches_the_whole_transactional_id(target, wire, topic):
    target.require_versions((ApiKey.LIST_TRANSACTIONS, 2))
    base = target.group_name("pattern")
    producers = [TxnProducer(target.host, target.port, f"{base}-{x}") for x in ("a", "b")]
    try:
        for producer in producers:
            assert producer.init() == 0

        def listed(pattern: str | None) -> tuple[int, list[str]]:
            body = ListTransactionsRequest(transactional_id_pattern=pattern)
            answer = wire.request(ApiKey.LIST_TRANSACTIONS, 2, body)
            ids = sorted(s.transactional_id for s in answer.transaction_states)
            return answer.error_code, [i for i in ids if i.startswith(base)]

        assert listed(None) == (0, [f"{base}-a", f"{base}-b"])
        assert listed(f"{base}-(a|c)") == (0, [f"{base}-a"])
        assert listed("pattern") == (0, [])  # a part of the id does not match
        assert listed("[")[0] == E.INVALID_REGULAR_EXPRESSION
    finally:
        for producer in producers:
            producer.close()
