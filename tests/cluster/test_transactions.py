"""Transactions on three real brokers: the coordinator, the markers and failover.

A transactional id's coordinator is the broker leading its partition of
`__transaction_state` (TXN-9, TXN-20); a commit's markers go over the wire to whichever
brokers lead the transaction's partitions (TXN-22). Killing the coordinator or a
partition leader with SIGKILL in the middle of a stream of transactions loses no
committed transaction and shows no aborted one (TXN-21, TXN-22); a coordinator that took
over after the decision was logged writes the markers its predecessor could not (TXN-14);
a produce to a partition that is not in the producer's transaction is refused by the
partition's leader, which asks the coordinator on another broker (KIP-890, TXN-23).
"""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from kafka_ref.conformance.wire import produce_body
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import (
    AddPartitionsToTxnRequest,
    ApiKey,
    DescribeTransactionsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
)
from kafka_ref.txn.transaction_log import TRANSACTION_STATE_TOPIC, partition_for
from tests.cluster.conftest import BROKER_CONFIGS, wait_for
from tests.cluster.test_controller import create_topic
from tests.conftest import campaign
from tests.unit.server.test_txn import txn_batch

pytestmark = pytest.mark.timeout(180)

TXN_PARTITIONS = BROKER_CONFIGS["transaction.state.log.num.partitions"]


def producer(cluster, transactional_id: str) -> Producer:
    p = Producer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 30000,
            "topic.metadata.refresh.interval.ms": 1000,
            "message.timeout.ms": 30000,
        }
    )
    p.init_transactions(30)
    return p


def committed_values(
    cluster, topic: str, partitions: int, expected: int, timeout: float = 30.0
) -> list[str]:
    """Every value a read_committed consumer reads from `topic`, once it has `expected` and
    nothing more arrives for a moment (a duplicate or an aborted record would show). The
    consumer assigns itself the partitions: no group coordinator involved."""
    c = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": f"check-{uuid.uuid4()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    values: list[str] = []
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline, quiet_until = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                values.append(msg.value().decode())
            if len(values) >= expected:
                quiet_until = quiet_until or time.monotonic() + 1.5
                if time.monotonic() > quiet_until:
                    break
    finally:
        c.close()
    return values


def txn_leader(cluster, transactional_id: str) -> int:
    """The leader of the id's `__transaction_state` partition, created if need be."""
    wait_for(
        lambda: find_coordinator(cluster, cluster.live()[0], transactional_id)[0] == 0,
        what="the transaction coordinator",
    )
    return wait_for(lambda: cluster.state(*txn_partition(transactional_id)).leader, what="a leader")


def find_coordinator(cluster, broker_id: int, transactional_id: str) -> tuple[int, int]:
    body = FindCoordinatorRequest(key=transactional_id, key_type=1)
    answer = cluster.request(broker_id, ApiKey.FIND_COORDINATOR, body)
    return answer.error_code, answer.node_id


def txn_partition(transactional_id: str) -> tuple[str, int]:
    return TRANSACTION_STATE_TOPIC, partition_for(transactional_id, TXN_PARTITIONS)


def full_isrs(cluster, *tps: tuple[str, int]) -> None:
    wait_for(lambda: all(len(cluster.state(*tp).isr) == 3 for tp in tps), what=f"full ISRs {tps}")


@pytest.mark.spec("TXN-20", "TXN-22")
def test_commit_and_abort_across_partitions_led_by_three_brokers(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=3, rf=3)
    leaders = {cluster.state(topic_name, p).leader for p in range(3)}
    assert leaders == {1, 2, 3}, "each partition led by another broker"
    tid = f"tx-{topic_name}"
    p = producer(cluster, tid)
    state = cluster.state(*txn_partition(tid))
    assert len(state.replicas) == 3 and state.leader in (1, 2, 3)
    configs = cluster.zk.get_topic_config(TRANSACTION_STATE_TOPIC)
    assert (configs["cleanup.policy"], configs["min.insync.replicas"]) == ("compact", "2")
    assert len(cluster.zk.get_topic(TRANSACTION_STATE_TOPIC)[0]) == TXN_PARTITIONS
    answers = {find_coordinator(cluster, b, tid) for b in (1, 2, 3)}
    assert answers == {(0, state.leader)}, "every broker names the partition's leader"
    wanted = []
    for n in range(6):
        p.begin_transaction()
        values = [f"{n}-{part}" for part in range(3)]
        for part, value in enumerate(values):
            p.produce(topic_name, value.encode(), partition=part)
        if n % 2 == 0:
            p.commit_transaction(30)
            wanted += values
        else:
            assert p.flush(30) == 0  # written, then aborted (see the failover test)
            p.abort_transaction(30)
    got = committed_values(cluster, topic_name, 3, len(wanted))
    assert sorted(got) == sorted(wanted)


def end_transaction(p: Producer, commit: bool, timeout: float = 60.0) -> str:
    """Commit (or abort) through whatever fails meanwhile, as an application must:
    "committed", "aborted", or "unknown" when the producer could not learn the outcome."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if commit:
                p.commit_transaction(30)
                return "committed"
            p.abort_transaction(30)
            return "aborted"
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal():
                raise
            if error.txn_requires_abort():
                commit = False  # the transaction cannot commit: abort it
            elif not error.retriable():
                return "unknown"
    return "unknown"


@pytest.mark.spec("TXN-21", "TXN-22")
def test_no_committed_transaction_is_lost_when_the_coordinator_and_a_leader_die(
    cluster, topic_name
):
    transactions = campaign(24, 300)
    create_topic(cluster, topic_name, partitions=3, rf=3, configs={"min.insync.replicas": "2"})
    tid = f"tx-{topic_name}"
    p = producer(cluster, tid)
    outcome: dict[int, str] = {}
    killed: list[int] = []
    kills = (transactions // 3, 2 * transactions // 3)
    for n in range(transactions):
        p.begin_transaction()
        for part in range(3):
            p.produce(topic_name, f"{n}-{part}".encode(), partition=part)
        if n in kills:  # mid-transaction: a kill -9
            victim = txn_leader(cluster, tid) if not killed else cluster.state(topic_name, 0).leader
            for i in killed:  # the previous victim is back, in every ISR
                cluster.brokers[i].start()
            cluster.wait_registered()
            full_isrs(cluster, txn_partition(tid), *((topic_name, q) for q in range(3)))
            assert p.flush(30) == 0  # written: the commit meets the dead broker at once, before
            cluster.stop(victim, signal.SIGKILL)  # the controller notices (the session timeout)
            killed = [victim]
        # The transaction after a kill aborts: had the commit's marker been lost on the dead
        # broker, that abort's marker would end the commit's records there too.
        commit = n % 5 != 4 and n - 1 not in kills
        if not commit:  # written first (commit flushes by itself): librdkafka's abort right
            p.flush(30)  # after produce can race its own AddPartitionsToTxn, still being
            # refused while the previous commit's markers are in flight, with an EndTxn(abort)
            # that any coordinator refuses in PrepareCommit (INVALID_TXN_STATE, fatal)
        outcome[n] = end_transaction(p, commit)
    p.flush(30)
    for i in killed:
        cluster.brokers[i].start()
    cluster.wait_registered()
    committed = [n for n, o in outcome.items() if o == "committed"]
    assert len(committed) >= transactions // 2, outcome
    wanted = sum(3 for o in outcome.values() if o != "aborted")
    got = committed_values(cluster, topic_name, 3, wanted, timeout=60)
    seen: dict[int, list[str]] = {}
    for value in got:
        seen.setdefault(int(value.split("-")[0]), []).append(value)
    for n, values in seen.items():
        assert outcome[n] != "aborted", f"aborted transaction {n} visible: {values}"
        assert sorted(values) == [f"{n}-{q}" for q in range(3)], f"transaction {n}: {values}"
    lost = [n for n in committed if n not in seen]
    assert lost == [], f"committed transactions lost: {lost}"


@pytest.mark.spec("TXN-14", "TXN-21")
def test_a_new_coordinator_writes_the_markers_its_predecessor_could_not(cluster, topic_name):
    tid = f"tx-{topic_name}"
    coordinator = txn_leader(cluster, tid)
    full_isrs(cluster, txn_partition(tid))
    holder, spare = [b for b in (1, 2, 3) if b != coordinator]
    create_topic(cluster, topic_name, assignment=[[holder]])  # one replica: on `holder` only
    p = producer(cluster, tid)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic_name, b"%d" % i, partition=0)
    assert p.flush(30) == 0
    cluster.stop(holder, signal.SIGKILL)  # the markers cannot be delivered now
    wait_for(lambda: cluster.state(topic_name, 0).leader == -1, what="the partition offline")
    p.commit_transaction(30)  # the decision is logged and answered; the markers wait
    assert describe_state(cluster, coordinator, tid) == "PrepareCommit"
    cluster.stop(coordinator, signal.SIGKILL)  # and the coordinator dies before them
    wait_for(lambda: txn_leader(cluster, tid) == spare, what="the spare to lead the txn log")
    wait_for(
        lambda: describe_state(cluster, spare, tid) == "PrepareCommit",
        what="the new coordinator to load the decision",
    )
    cluster.brokers[holder].start()  # the partition comes back: the new coordinator's markers
    wait_for(
        lambda: describe_state(cluster, spare, tid) == "CompleteCommit",
        what="the markers and CompleteCommit",
        timeout=60,
    )
    assert sorted(committed_values(cluster, topic_name, 1, 3)) == ["0", "1", "2"]
    p.flush(5)


@pytest.mark.spec("TXN-21")
def test_a_decision_being_written_survives_the_controller_shrinking_its_isr(cluster, topic_name):
    """The commit's PrepareCommit waits for a follower that stopped (SIGSTOP); once its
    session expires the controller drops it from the ISR in a new leader epoch of the same
    leader. The coordinator keeps its state: the commit is answered as soon as the smaller
    ISR has the decision, though its markers wait for the stopped broker, the only replica
    of the transaction's partition. (Reloading on the new epoch failed the write, and the
    producer's retried EndTxn met CONCURRENT_TRANSACTIONS until the markers were out.)"""
    tid = f"tx-{topic_name}"
    coordinator = txn_leader(cluster, tid)
    full_isrs(cluster, txn_partition(tid))
    holder = next(b for b in (1, 2, 3) if b != coordinator)
    create_topic(cluster, topic_name, assignment=[[holder]])
    p = producer(cluster, tid)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic_name, b"%d" % i, partition=0)
    assert p.flush(30) == 0
    epoch = cluster.state(*txn_partition(tid)).leader_epoch
    os.kill(cluster.brokers[holder].pid, signal.SIGSTOP)
    try:
        p.commit_transaction(30)  # answered once the ISR without `holder` has the decision
        after = cluster.state(*txn_partition(tid))
        assert (after.leader, holder in after.isr) == (coordinator, False)
        assert after.leader_epoch > epoch, "the controller shrank the ISR in a new epoch"
        assert describe_state(cluster, coordinator, tid) == "PrepareCommit"  # markers wait
    finally:
        os.kill(cluster.brokers[holder].pid, signal.SIGCONT)
    cluster.wait_registered()
    wait_for(
        lambda: describe_state(cluster, coordinator, tid) == "CompleteCommit",
        what="the markers and CompleteCommit",
        timeout=60,
    )
    assert sorted(committed_values(cluster, topic_name, 1, 3)) == ["0", "1", "2"]


def describe_state(cluster, broker_id: int, tid: str) -> str | None:
    body = DescribeTransactionsRequest(transactional_ids=[tid])
    try:
        (state,) = cluster.request(broker_id, ApiKey.DESCRIBE_TRANSACTIONS, body).transaction_states
    except (OSError, KafkaError):  # not up (yet)
        return None
    return state.transaction_state if state.error_code == 0 else None


@pytest.mark.spec("TXN-23", "BROKER-72")
def test_a_leader_asks_the_coordinator_on_another_broker_before_a_first_write(cluster, topic_name):
    tid = f"tx-{topic_name}"
    coordinator = txn_leader(cluster, tid)
    leader = next(b for b in (1, 2, 3) if b != coordinator)
    replicas = [leader, *(b for b in (1, 2, 3) if b != leader)]  # acks=all waits for three
    create_topic(cluster, topic_name, assignment=[replicas, replicas])
    full_isrs(cluster, (topic_name, 0), (topic_name, 1))
    init = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000)
    answer = cluster.request(coordinator, ApiKey.INIT_PRODUCER_ID, init)
    pid, epoch = answer.producer_id, answer.producer_epoch
    add = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic_name, partitions=[0])
        ],
    )
    answer = cluster.request(coordinator, ApiKey.ADD_PARTITIONS_TO_TXN, add)
    assert answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0

    def produce(partition: int, sequence: int) -> int:
        body = produce_body(topic_name, partition, txn_batch(pid, epoch, sequence, b"v"))
        body.transactional_id = tid
        response = cluster.request(leader, ApiKey.PRODUCE, body)
        return response.responses[0].partition_responses[0].error_code

    # not in the transaction: TRANSACTION_ABORTABLE from Produce v11 (BROKER-72), which
    # cluster.request sends; INVALID_TXN_STATE below
    assert produce(1, 0) == ErrorCode.TRANSACTION_ABORTABLE
    assert produce(0, 0) == ErrorCode.NO_ERROR  # the coordinator, elsewhere, said yes


@pytest.mark.spec("IDEM-15")
def test_every_broker_hands_out_producer_ids_from_a_block_of_its_own(cluster):
    def producer_id(broker_id: int) -> int:
        body = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
        answer = cluster.request(broker_id, ApiKey.INIT_PRODUCER_ID, body)
        assert (answer.error_code, answer.producer_epoch) == (0, 0)
        return answer.producer_id

    ids = {b: (producer_id(b), producer_id(b)) for b in (1, 2, 3)}
    assert all(second == first + 1 for first, second in ids.values()), ids
    blocks = {first // 1000 for first, _ in ids.values()}  # blocks of 1000 from ZooKeeper
    assert len(blocks) == 3, f"two brokers share a block of producer ids: {ids}"


@pytest.mark.spec("IDEM-17")
def test_a_broker_that_is_not_the_ids_coordinator_answers_not_coordinator(cluster):
    tid = f"tx-elsewhere-{uuid.uuid4().hex[:6]}"
    coordinator = txn_leader(cluster, tid)
    init = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000)
    for broker in (b for b in (1, 2, 3) if b != coordinator):
        answer = cluster.request(broker, ApiKey.INIT_PRODUCER_ID, init)
        assert (answer.error_code, answer.producer_id) == (ErrorCode.NOT_COORDINATOR, -1)
    answer = wait_for(
        lambda: (
            (a := cluster.request(coordinator, ApiKey.INIT_PRODUCER_ID, init)).error_code == 0 and a
        ),
        what=f"broker {coordinator}, the coordinator of {tid}, to answer",
    )
    assert answer.producer_id >= 0 and answer.producer_epoch == 0
