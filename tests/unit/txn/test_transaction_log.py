"""The `__transaction_state` records and a transactional id's home partition
(spec/transactions.md TXN-9, TXN-10), checked against bytes built by hand from Kafka's
`TransactionLogKey.json` and `TransactionLogValue.json`."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.txn import transaction_log as tlog
from kafka_ref.txn.transaction_metadata import TransactionMetadata, TransactionState


def kstring(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


@pytest.mark.spec("TXN-9")
def test_a_transactional_id_lives_where_kafka_puts_it():
    # abs(hashCode) % 50, hashCode computed as Java's String.hashCode
    assert tlog.partition_for("my-txn", 50) == abs(hash_java("my-txn")) % 50
    assert tlog.partition_for("my-group", 50) == 12  # a negative hash: Math.abs, not & 0x7fff..
    assert tlog.partition_for("", 50) == 0
    assert tlog.partition_for("a", 50) == 47  # "a".hashCode() == 97
    assert tlog.partition_for("ab", 50) == 5  # 97 * 31 + 98 == 3105
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0
    assert tlog.partition_for("polygenelubricants", 50) == 0
    assert tlog.TRANSACTION_STATE_TOPIC == "__transaction_state"


def hash_java(s: str) -> int:
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@pytest.mark.spec("TXN-10")
def test_key_bytes_are_version_0_and_the_id():
    assert tlog.key_bytes("my-txn") == b"\x00\x00" + kstring("my-txn")
    assert tlog.read_key(b"\x00\x00" + kstring("my-txn")) == "my-txn"
    with pytest.raises(tlog.UnknownTxnRecordVersionError):
        tlog.read_key(b"\x00\x01" + kstring("my-txn"))


@pytest.mark.spec("TXN-10")
def test_value_bytes_match_kafkas_version_0_layout():
    meta = TransactionMetadata(
        "t", 1000, 3, 60_000, TransactionState.ONGOING, {("b", 1), ("a", 2), ("a", 0)}, 10, 20
    )
    expected = (
        struct.pack(">hqhib", 0, 1000, 3, 60_000, 1)
        + struct.pack(">i", 2)  # two topics
        + kstring("a")
        + struct.pack(">iii", 2, 0, 2)
        + kstring("b")
        + struct.pack(">ii", 1, 1)
        + struct.pack(">qq", 20, 10)  # last update, start
    )
    assert tlog.value_bytes(meta) == expected
    assert tlog.read_value("t", expected) == meta


@pytest.mark.spec("TXN-10")
def test_an_empty_transaction_writes_null_partitions():
    meta = TransactionMetadata("t", 7, 0, 1000, TransactionState.EMPTY, set(), -1, 5)
    assert tlog.value_bytes(meta) == struct.pack(">hqhibiqq", 0, 7, 0, 1000, 0, -1, 5, -1)
    complete = TransactionMetadata("t", 7, 0, 1000, TransactionState.COMPLETE_COMMIT, set(), 1, 5)
    assert tlog.value_bytes(complete)[17:21] == struct.pack(">i", 0)  # an empty array


@pytest.mark.spec("TXN-10")
def test_version_1_values_written_by_kafka_with_tagged_fields_are_read():
    # Flexible: compact string (len+1), compact arrays (len+1), tagged fields at the end
    # (tag 0 previousProducerId = 999 as 8 bytes, tag 2 clientTransactionVersion = 2).
    value = (
        struct.pack(">hqhib", 1, 1000, 4, 30_000, 2)
        + bytes([2])  # one topic
        + bytes([2])
        + b"a"
        + bytes([3])
        + struct.pack(">ii", 0, 1)
        + bytes([0])
        + struct.pack(">qq", 50, 40)
        + bytes([2, 0, 8])
        + struct.pack(">q", 999)
        + bytes([2, 2])
        + struct.pack(">h", 2)
    )
    meta = tlog.read_value("t", value)
    assert (meta.producer_id, meta.producer_epoch, meta.txn_timeout_ms) == (1000, 4, 30_000)
    assert meta.state == TransactionState.PREPARE_COMMIT
    assert meta.partitions == {("a", 0), ("a", 1)}
    assert (meta.txn_last_update_timestamp, meta.txn_start_timestamp) == (50, 40)


@pytest.mark.spec("TXN-10")
def test_replaying_records_keeps_the_last_state_per_id_and_tombstones_remove():
    def rec(tid, state, epoch):
        meta = TransactionMetadata(tid, 1, epoch, 1000, state, set(), -1, epoch)
        return tlog.key_bytes(tid), tlog.value_bytes(meta)

    records = [
        rec("a", TransactionState.EMPTY, 0),
        rec("b", TransactionState.EMPTY, 0),
        rec("a", TransactionState.EMPTY, 1),
        (tlog.key_bytes("b"), None),
    ]
    loaded = tlog.fold(records).transactions
    assert list(loaded) == ["a"] and loaded["a"].producer_epoch == 1


@pytest.mark.spec("TXN-10")
@given(
    st.builds(
        TransactionMetadata,
        transactional_id=st.text(min_size=1, max_size=20),
        producer_id=st.integers(0, 2**63 - 1),
        producer_epoch=st.integers(0, 32767),
        txn_timeout_ms=st.integers(1, 2**31 - 1),
        state=st.sampled_from([s for s in TransactionState if s != TransactionState.EMPTY]),
        partitions=st.sets(st.tuples(st.sampled_from(["a", "b", "t-1"]), st.integers(0, 99))),
        txn_start_timestamp=st.integers(-1, 2**62),
        txn_last_update_timestamp=st.integers(-1, 2**62),
    )
)
def test_values_round_trip(meta):
    assert tlog.read_value(meta.transactional_id, tlog.value_bytes(meta)) == meta
