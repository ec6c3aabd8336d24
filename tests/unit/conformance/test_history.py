"""The history checker on hand-built histories: each anomaly is found, a clean run passes.

This is mutation testing of the oracle (CONF-3's idea applied to the checker): a checker
that reports nothing would make every conformance run using it green.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.conformance.history import (
    ABORTED,
    COMMITTED,
    FAILED,
    UNKNOWN,
    History,
    check,
)

K = ("t", 0)


def clean() -> History:
    h = History()
    for i in range(4):
        h.send("p", K, f"v{i}", offset=i)
    h.poll("c", {K: [(0, "v0"), (1, "v1")]})
    h.poll("c", {K: [(2, "v2"), (3, "v3")]})
    return h


@pytest.mark.spec("HIST-1", "HIST-2", "HIST-3", "HIST-4", "HIST-5", "HIST-6")
def test_a_clean_history_is_valid():
    result = check(clean())
    assert result.valid, str(result)
    assert result.unseen == {}


@pytest.mark.spec("HIST-3")
def test_a_clean_history_with_an_unknown_send_and_lag_is_valid():
    h = History()
    h.send("p", K, "a", offset=0)
    h.send("p", K, "b", offset=None)  # a timeout: maybe written, maybe not
    h.send("p", K, "c", offset=2)
    h.poll("c", {K: [(0, "a")]})  # lagging: c not read yet, and that is not a loss
    result = check(h)
    assert result.valid, str(result)
    assert result.unseen == {K: {"c"}}


@pytest.mark.spec("HIST-1")
def test_two_values_at_one_offset_are_inconsistent():
    h = clean()
    h.poll("c2", {K: [(1, "other")]})
    found = check(h).anomalies["inconsistent-offsets"]
    assert found == [{"key": K, "offset": 1, "values": ["other", "v1"]}]


@pytest.mark.spec("HIST-2")
def test_one_value_at_two_offsets_is_a_duplicate():
    h = clean()
    h.send("p", K, "v4", offset=4)
    h.poll("c2", {K: [(3, "v3"), (4, "v4"), (5, "v4")]})
    assert "duplicate" in check(h).kinds()


@pytest.mark.spec("HIST-3")
def test_an_acknowledged_write_read_past_is_lost():
    h = History()
    for i in range(3):
        h.send("p", K, f"v{i}", offset=i)
    h.poll("c", {K: [(0, "v0"), (2, "v2")]})  # v1 acknowledged at 1, never read
    result = check(h)
    assert result.anomalies["lost-write"] == [{"key": K, "value": "v1", "offset": 1}]


@pytest.mark.spec("HIST-4")
def test_a_consumer_skipping_or_going_back_is_flagged():
    h = clean()
    h.poll("c2", {K: [(0, "v0")]})
    h.poll("c2", {K: [(2, "v2")]})  # skipped v1
    h.poll("c2", {K: [(1, "v1")]})  # went back
    kinds = check(h).kinds()
    assert {"poll-skip", "nonmonotonic-poll"} <= kinds


@pytest.mark.spec("HIST-4")
def test_an_assign_resets_the_poll_order():
    h = clean()
    h.assign("c", [K])  # seek to the beginning: reading v0 again is fine
    h.poll("c", {K: [(0, "v0")]})
    assert check(h).valid


@pytest.mark.spec("HIST-5")
def test_a_later_send_at_a_lower_offset_is_nonmonotonic():
    h = History()
    h.send("p", K, "a", offset=5)
    h.send("p", K, "b", offset=3)
    assert "nonmonotonic-send" in check(h).kinds()


@pytest.mark.spec("HIST-6")
def test_reading_an_aborted_or_failed_value_is_an_aborted_read():
    h = clean()
    h.send("p", K, "bad", status=FAILED)
    h.poll("c2", {K: [(4, "bad")]})
    assert "aborted-read" in check(h).kinds()
    h2 = clean()
    assert "aborted-read" in check(h2, aborted={"v3"}).kinds()


# ---------------------------------------------------------------------- transactions
K0, K1 = ("t", 0), ("t", 1)


def two_partition_txn(h: History, txn: str, outcome: str, values=("a", "b"), at: int = 0):
    """`txn` writes values[0] to K0 and values[1] to K1 at offset `at` (its marker at+1)."""
    h.send("p", K0, values[0], offset=at, txn=txn)
    h.send("p", K1, values[1], offset=at, txn=txn)
    h.end_txn("p", txn, outcome)


@pytest.mark.spec("HIST-16")
def test_a_read_committed_poll_of_an_aborted_transaction_is_an_aborted_read():
    h = History()
    two_partition_txn(h, "T1", ABORTED)
    h.send("q", K0, "x", offset=2)
    h.poll("uncommitted", {K0: [(0, "a"), (2, "x")]})  # read_uncommitted may see it
    h.poll("committed", {K0: [(2, "x")]}, read_committed=True)
    assert check(h).valid, str(check(h))
    h.poll("bad", {K0: [(0, "a")]}, read_committed=True)
    assert check(h).anomalies["aborted-read"] == [
        {"process": "bad", "key": K0, "offset": 0, "value": "a", "txn": "T1"}
    ]


@pytest.mark.spec("HIST-17")
def test_part_of_a_committed_transaction_read_past_is_a_torn_transaction():
    h = History()
    two_partition_txn(h, "T1", COMMITTED)
    h.send("q", K0, "x", offset=2)
    h.send("q", K1, "y", offset=2)
    h.poll("c", {K0: [(0, "a"), (2, "x")], K1: [(2, "y")]}, read_committed=True)
    found = check(h).anomalies["torn-transaction"]
    assert found == [{"process": "c", "txn": "T1", "missing": [(K1, "b")], "read": [(K0, "a")]}]


@pytest.mark.spec("HIST-17")
def test_a_reader_that_has_not_yet_read_past_a_transaction_is_not_torn():
    h = History()
    two_partition_txn(h, "T1", COMMITTED)
    h.send("q", K0, "x", offset=2)
    h.poll("c", {K0: [(0, "a"), (2, "x")]}, read_committed=True)  # K1 not read yet: lag
    assert check(h).valid, str(check(h))


@pytest.mark.spec("HIST-18")
def test_a_committed_record_read_past_but_never_read_is_a_lost_committed_write():
    h = History()
    h.send("p", K0, "a", offset=0, txn="T1")
    h.end_txn("p", "T1", COMMITTED)
    h.send("q", K0, "x", offset=2)
    h.poll("c", {K0: [(2, "x")]}, read_committed=True)
    result = check(h)
    assert result.anomalies["lost-committed-write"] == [
        {"process": "c", "key": K0, "value": "a", "offset": 0, "txn": "T1"}
    ]
    assert "torn-transaction" not in result.kinds()  # one record: nothing to tear


@pytest.mark.spec("HIST-16", "HIST-18")
def test_an_unknown_outcome_read_by_a_read_committed_poll_counts_as_committed():
    h = History()
    two_partition_txn(h, "T1", UNKNOWN)
    two_partition_txn(h, "T2", UNKNOWN, values=("c", "d"), at=2)  # never read: not judged
    h.send("q", K0, "x", offset=4)
    h.poll("c", {K0: [(0, "a"), (4, "x")]}, read_committed=True)  # skips T2's c: fine
    h.poll("c", {K1: [(0, "b")]}, read_committed=True)
    assert check(h).valid, str(check(h))
    h.poll("d", {K0: [(4, "x")]}, read_committed=True)  # read past T1's a (committed)
    assert "lost-committed-write" in check(h).kinds()


@pytest.mark.spec("HIST-3", "HIST-4")
def test_a_read_committed_reader_stepping_over_aborted_records_is_no_skip_or_loss():
    h = History()
    h.send("q", K0, "x", offset=0)
    h.send("p", K0, "a", offset=1, txn="T1")
    h.end_txn("p", "T1", ABORTED)
    h.send("q", K0, "y", offset=3)
    h.poll("c", {K0: [(0, "x")]}, read_committed=True)
    h.poll("c", {K0: [(3, "y")]}, read_committed=True)
    assert check(h).valid, str(check(h))
    h.poll("u", {K0: [(0, "x")]})
    h.poll("u", {K0: [(3, "y")]})  # read_uncommitted must see the aborted record
    assert "poll-skip" in check(h).kinds()


@pytest.mark.spec("HIST-19")
def test_transactions_reading_each_others_writes_are_a_g1c_cycle():
    h = History()
    h.send("p1", K0, "a", offset=0, txn="T1")
    h.send("p2", K1, "b", offset=0, txn="T2")
    h.poll("p1", {K1: [(0, "b")]}, read_committed=True, txn="T1")  # T1 read T2's write
    h.poll("p2", {K0: [(0, "a")]}, read_committed=True, txn="T2")  # and T2 read T1's
    h.end_txn("p1", "T1", COMMITTED)
    h.end_txn("p2", "T2", COMMITTED)
    assert check(h).anomalies["G1c"] == [{"cycle": ["T1", "T2", "T1"]}]


@pytest.mark.spec("HIST-19")
def test_a_chain_of_reads_from_is_no_cycle_and_a_longer_cycle_is_found():
    h = History()
    for i, key in enumerate((K0, K1, K0)):  # T0 -> T1 -> T2: each reads its predecessor
        h.send(f"p{i}", key, f"v{i}", offset=i, txn=f"T{i}")
        h.end_txn(f"p{i}", f"T{i}", COMMITTED)
        if i:
            h.poll(
                f"p{i}",
                {(K0, K1, K0)[i - 1]: [(i - 1, f"v{i - 1}")]},
                read_committed=True,
                txn=f"T{i}",
            )
    assert check(h).valid, str(check(h))
    h.poll("p0", {K0: [(2, "v2")]}, read_committed=True, txn="T0")  # T0 read T2: a cycle
    assert check(h).anomalies["G1c"] == [{"cycle": ["T0", "T1", "T2", "T0"]}]


@pytest.mark.spec("HIST-16")
def test_an_unknown_transaction_outcome_is_refused():
    with pytest.raises(ValueError, match="outcome"):
        History().end_txn("p", "T1", "maybe")


# ------------------------------------------------- valid transactional histories (hypothesis)
class CorrectBroker:
    """Two partitions that behave as Kafka's do: transactional records take offsets as they
    are produced, a marker ends a transaction in each of its partitions, read_committed
    readers read up to the LSO and drop the records of aborted transactions."""

    def __init__(self) -> None:
        self.logs: dict = {K0: [], K1: []}  # key -> [(txn or None, value or None)]
        self.first: dict = {}  # (txn, key) -> first offset while open
        self.outcome: dict = {}
        self.position: dict = {}  # (reader, key) -> next offset

    def lso(self, key) -> int:
        return min([o for (_, k), o in self.first.items() if k == key], default=len(self.logs[key]))

    def send(self, txn, key, value) -> int:
        self.first.setdefault((txn, key), len(self.logs[key])) if txn else None
        self.logs[key].append((txn, value))
        return len(self.logs[key]) - 1

    def end(self, txn, commit: bool) -> None:
        self.outcome[txn] = COMMITTED if commit else ABORTED
        for key in (K0, K1):
            if self.first.pop((txn, key), None) is not None:
                self.logs[key].append((txn, None))  # the marker

    def read_committed(self, reader, key) -> list:
        start, end = self.position.get((reader, key), 0), self.lso(key)
        self.position[(reader, key)] = end
        return [
            (o, v)
            for o, (t, v) in enumerate(self.logs[key][start:end], start)
            if v is not None and (t is None or self.outcome[t] == COMMITTED)
        ]


ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["send", "plain", "end", "poll", "transform"]),
        st.integers(0, 2),
        st.sampled_from([K0, K1]),
        st.booleans(),
        st.booleans(),
    ),
    max_size=60,
)


@pytest.mark.spec("HIST-16", "HIST-19")
@given(ACTIONS)
def test_histories_of_a_correct_broker_have_no_transactional_anomaly(actions):
    broker, h, count = CorrectBroker(), History(), itertools.count()
    open_txn: dict[int, str] = {}

    def txn_of(p: int) -> str:
        return open_txn.setdefault(p, f"T{p}-{next(count)}")

    def end(p: int, commit: bool, known: bool) -> None:
        txn = open_txn.pop(p)
        broker.end(txn, commit)
        h.end_txn(f"p{p}", txn, (COMMITTED if commit else ABORTED) if known else UNKNOWN)

    for action, p, key, flag, known in actions:
        value = f"v{next(count)}"
        if action == "send":
            txn = txn_of(p)
            h.send(f"p{p}", key, value, offset=broker.send(txn, key, value), txn=txn)
        elif action == "plain":
            h.send(f"q{p}", key, value, offset=broker.send(None, key, value))
        elif action == "end" and p in open_txn:
            end(p, flag, known)
        elif action in ("poll", "transform"):  # a transform reads inside p's transaction
            txn = txn_of(p) if action == "transform" else None
            reader = f"p{p}" if txn else f"c{p}"
            h.poll(reader, {key: broker.read_committed(reader, key)}, read_committed=True, txn=txn)
    for p in sorted(open_txn):
        end(p, True, True)
    for key in (K0, K1):
        h.poll("final", {key: broker.read_committed("final", key)}, read_committed=True)
    result = check(h)
    assert result.valid, str(result)
