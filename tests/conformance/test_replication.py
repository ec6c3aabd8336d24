"""Replication, the ISR and the controller, judged over the wire on several brokers.

The tests take `brokers` (several brokers of one cluster: the target's own, or a 3-broker
cluster of its kind that the suite starts once per session) or `cluster` (one whose brokers
the suite may kill, stop and pause). Everything is seen as a client sees it: Metadata v7
for leaders, epochs and ISRs, Produce, Fetch, ListOffsets and OffsetsForLeaderEpoch on the
brokers Metadata names, and a real producer (confluent-kafka) for the crash test, whose
history the Jepsen-style checker judges. What only kafka-ref's internals show (znodes,
checkpoint files, the follower's truncation) stays in tests/cluster/.
"""

from __future__ import annotations

import threading
import time

import pytest

from kafka_ref.conformance.cluster import wait_for
from kafka_ref.conformance.history import History, check
from kafka_ref.conformance.wire import Wire, batch, decode_batches, fetch_body, produce_body
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, OffsetsForLeaderEpochRequest

pytestmark = pytest.mark.timeout(120)

STRICT = {"min.insync.replicas": "2"}


def produce(w: Wire, topic: str, partition: int, value: bytes, acks: int = -1, timeout_ms=10000):
    body = produce_body(topic, partition, batch([value]), acks, timeout_ms)
    return w.request(ApiKey.PRODUCE, 7, body).responses[0].partition_responses[0]


def fetch_at_epoch(w: Wire, topic: str, partition: int, offset: int, epoch: int):
    """A consumer's Fetch v10 carrying `current_leader_epoch` (KIP-320)."""
    body = fetch_body([(topic, partition, offset)], max_wait_ms=100, current_leader_epoch=epoch)
    return w.request(ApiKey.FETCH, 10, body).responses[0].partitions[0]


def epoch_end(w: Wire, topic: str, partition: int, current: int, asked: int):
    """OffsetsForLeaderEpoch v2 as a consumer: (error_code, leader_epoch, end_offset)."""
    req = OffsetsForLeaderEpochRequest
    body = req(
        topics=[
            req.OffsetForLeaderTopic(
                topic=topic,
                partitions=[
                    req.OffsetForLeaderPartition(
                        partition=partition, current_leader_epoch=current, leader_epoch=asked
                    )
                ],
            )
        ]
    )
    p = w.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, body).topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


def values(w: Wire, topic: str, partition: int) -> list[bytes]:
    return [r.value for r in w.read_all(topic, partition)]


def read_committed_by_now(w: Wire, topic: str, partition: int, wanted: set, timeout=15.0):
    """The records up to the HW once they hold `wanted`, or after `timeout` whatever they
    are: a new leader learns the HW from its followers' first fetches (ISR-4), so what the
    old leader acknowledged becomes visible on it a moment after the election; and a
    broker Metadata already names leader may not yet serve as one (NOT_LEADER_OR_FOLLOWER,
    which clients retry)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            records = w.read_all(topic, partition)
        except AssertionError:  # a fetch error: not leader yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        if wanted <= {r.value for r in records} or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


@pytest.mark.spec("CTRL-2")
def test_every_broker_names_the_same_controller(brokers):
    # each broker asked five times: the same controller in every answer (a broker that
    # named one at random would agree with the others only by chance, and not for long)
    answers = [brokers.metadata([], via=i) for i in brokers.ids() for _ in range(5)]
    assert len({m.controller_id for m in answers}) == 1, [m.controller_id for m in answers]
    assert answers[0].controller_id in brokers.ids()


@pytest.mark.spec("CTRL-1", "CTRL-8", "CTRL-10", "CTRL-11", "REPL-8")
def test_every_broker_agrees_and_followers_refuse_clients(brokers, target):
    ids = brokers.ids()
    topic = target.topic_name("repl")
    assert brokers.create_topic(topic, len(ids), 3) == 0
    # CTRL-1: every broker lists every broker
    answers = [brokers.metadata([topic], via=i) for i in ids]
    assert all(sorted(b.node_id for b in m.brokers) == ids for m in answers)
    assert all(m.controller_id in ids for m in answers)
    # CTRL-8, CTRL-11: three distinct replicas, all in sync, the same picture everywhere;
    # one partition per broker: the preferred leaders are spread evenly
    views = [
        {
            p.partition_index: (p.leader_id, p.replica_nodes, sorted(p.isr_nodes))
            for p in m.topics[0].partitions
        }
        for m in answers
    ]
    assert all(v == views[0] for v in views), views
    for leader, replicas, isr in views[0].values():
        assert len(set(replicas)) == 3 and isr == sorted(replicas) and leader in replicas
    assert sorted(replicas[0] for _, replicas, _ in views[0].values()) == ids
    # CTRL-10, REPL-8: a follower refuses Produce, Fetch and ListOffsets for the partition
    leader, replicas, _ = views[0][0]
    follower = next(r for r in replicas if r != leader)
    with brokers.wire(follower) as w:
        assert produce(w, topic, 0, b"x").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert w.fetch(topic, 0, 0).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert w.list_offset(topic, 0, -1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with brokers.wire(leader) as w:
        assert produce(w, topic, 0, b"x").error_code == 0
        assert values(w, topic, 0) == [b"x"]
    # CTRL-8: more replicas than brokers cannot be placed
    with brokers.any_wire() as w:
        too_many = w.create_topic(target.topic_name("rf"), 1, replication_factor=len(ids) + 1)
    assert too_many == ErrorCode.INVALID_REPLICATION_FACTOR


@pytest.mark.spec("REPL-3", "REPL-2", "REPL-4", "REPL-11")
def test_the_hw_waits_for_a_silent_isr_member(cluster, target):
    """A follower paused (SIGSTOP) stays in the ISR until its ZooKeeper session times out
    (3 s): meanwhile the HW must not pass its LEO, whatever the other follower has."""
    topic = target.topic_name("hw")
    assert cluster.create_topic(topic, 1, 3) == 0
    part = cluster.wait_leader(topic, 0)
    leader = part.leader_id
    silent = next(r for r in part.replica_nodes if r != leader)
    with cluster.wire(leader) as w:
        assert produce(w, topic, 0, b"committed").error_code == 0  # every replica has it
    for attempt in range(3):
        committed = attempt + 1  # every earlier attempt's record is committed by now
        with cluster.wire(leader) as w:
            wait_for(lambda c=committed: w.list_offset(topic, 0, -1).offset == c, what="HW")
            cluster.pause(silent)
            try:
                answer = produce(w, topic, 0, b"lagging-%d" % attempt, timeout_ms=1000)
                consumer = w.fetch(topic, 0, committed)
                latest = w.list_offset(topic, 0, -1).offset
                still_in_isr = silent in cluster.partition(topic, 0, via=leader).isr_nodes
            finally:
                cluster.resume(silent)
        if still_in_isr:
            break  # the check ran while the paused follower was an ISR member
    else:
        pytest.fail("the paused follower left the ISR before each check ended")
    # REPL-3, REPL-2: the HW stays at the silent member's LEO; consumers see nothing above
    assert (consumer.error_code, consumer.high_watermark) == (0, committed)
    assert decode_batches(consumer.records) == []
    assert latest == committed
    # REPL-4, REPL-11: acks=all cannot complete without the silent member; it times out
    assert answer.error_code == ErrorCode.REQUEST_TIMED_OUT, answer
    # REPL-11: the record was in the leader's log; once the follower fetches it, committed
    with cluster.wire(leader) as w:
        wait_for(lambda: w.list_offset(topic, 0, -1).offset == committed + 1, what="the HW")
        assert values(w, topic, 0)[-1] == b"lagging-%d" % attempt


@pytest.mark.spec("REPL-5", "CTRL-6", "CTRL-11")
def test_acks_all_is_refused_when_the_isr_is_below_min_insync_replicas(cluster, target):
    topic = target.topic_name("minisr")
    assert cluster.create_topic(topic, 1, 3, **STRICT) == 0
    part = cluster.wait_leader(topic, 0)
    leader, followers = part.leader_id, [r for r in part.replica_nodes if r != part.leader_id]
    with cluster.wire(leader) as w:
        assert produce(w, topic, 0, b"committed").error_code == 0
        for f in followers:
            cluster.stop(f)
        # CTRL-6, CTRL-11: the leader stays; the stopped brokers leave the ISR, offline
        shrunk = wait_for(
            lambda: (p := cluster.partition(topic, 0, via=leader)).isr_nodes == [leader] and p,
            what="the ISR to shrink to the leader",
        )
        assert shrunk.leader_id == leader and sorted(shrunk.offline_replicas) == sorted(followers)
        # REPL-5: acks=all refused and nothing written; acks=1 still appends
        refused = wait_for(
            lambda: (r := produce(w, topic, 0, b"refused")).error_code != 0 and r,
            timeout=10,
            what="acks=all to be refused",
        )
        assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert produce(w, topic, 0, b"acks-1", acks=1).error_code == 0
        # appended, but not committed while the ISR is under min.insync.replicas
        assert values(w, topic, 0) == [b"committed"]
        cluster.start_broker(followers[0])  # back in the ISR: the HW moves on
        got = read_committed_by_now(w, topic, 0, {b"acks-1"}, timeout=30)
        assert [r.value for r in got] == [b"committed", b"acks-1"]


@pytest.mark.spec("ISR-6", "CTRL-6", "CTRL-11")
def test_a_partition_whose_isr_is_dead_waits_offline_for_an_isr_member(cluster, target):
    """Replication factor 2: the follower stops, the ISR shrinks to the leader, the leader
    dies. The follower comes back, but it may lack acknowledged records: without unclean
    election the partition stays offline until the last ISR member returns."""
    topic = target.topic_name("offline")
    assert cluster.create_topic(topic, 1, 2) == 0
    part = cluster.wait_leader(topic, 0)
    last = part.leader_id
    (follower,) = [r for r in part.replica_nodes if r != last]
    (witness,) = [b for b in cluster.ids() if b not in part.replica_nodes]
    with cluster.wire(last) as w:
        assert produce(w, topic, 0, b"committed").error_code == 0
    cluster.stop(follower)
    wait_for(
        lambda: cluster.partition(topic, 0, via=witness).isr_nodes == [last],
        what="the ISR to shrink to the leader",
    )
    cluster.kill(last)
    offline = wait_for(
        lambda: (p := cluster.partition(topic, 0, via=witness)).leader_id == -1 and p,
        what="the partition to go offline",
    )
    assert offline.error_code == ErrorCode.LEADER_NOT_AVAILABLE  # CTRL-11
    # the last ISR member is remembered: in the ISR, or (Kafka 4, KIP-966) in the
    # eligible leader replicas, which Metadata v7 does not show, with an empty ISR
    recorded = offline.isr_nodes
    assert recorded in ([last], [])
    cluster.start_broker(follower)
    wait_for(
        lambda: follower in {b.node_id for b in cluster.metadata([], witness).brokers},
        what="the follower to register again",
    )
    # The controller handles events in order: once a topic created after the follower's
    # return has a leader, the controller has seen the follower come back.
    assert cluster.create_topic(target.topic_name("after"), 1, 1) == 0
    still = cluster.partition(topic, 0, via=witness)
    assert (still.leader_id, still.isr_nodes) == (-1, recorded), "a replica outside the ISR led"
    cluster.start_broker(last)
    back = cluster.wait_leader(topic, 0)
    assert back.leader_id == last and back.leader_epoch > part.leader_epoch
    with cluster.wire(last) as w:
        got = read_committed_by_now(w, topic, 0, {b"committed"})
    assert [r.value for r in got] == [b"committed"]


@pytest.mark.spec("CTRL-3", "CTRL-6", "CTRL-7", "CTRL-11", "CTRL-12", "REPL-1", "REPL-8", "TRUNC-4")
def test_when_the_controller_dies_its_partitions_move_and_old_epochs_are_fenced(cluster, target):
    topic = target.topic_name("ctrl")
    assert cluster.create_topic(topic, 3, 3) == 0
    before = {p: cluster.wait_leader(topic, p) for p in range(3)}
    controller = cluster.metadata([]).controller_id
    victim = next(p for p, m in before.items() if m.leader_id == controller)
    sent = {p: [b"p%d-%d" % (p, i) for i in range(5)] for p in range(3)}
    for p, meta in before.items():
        with cluster.wire(meta.leader_id) as w:
            assert all(produce(w, topic, p, v).error_code == 0 for v in sent[p])
    cluster.kill(controller)
    # CTRL-3: another broker becomes controller
    wait_for(
        lambda: cluster.metadata([]).controller_id not in (controller, -1), what="a new controller"
    )
    # CTRL-6, CTRL-7, CTRL-12: the dead broker's partition gets a leader from the ISR with a
    # higher epoch; no partition's epoch goes backwards
    after = cluster.wait_leader(topic, victim, not_on=(controller,))
    old_epoch, new_epoch = before[victim].leader_epoch, after.leader_epoch
    assert new_epoch > old_epoch
    assert controller not in after.isr_nodes and controller in after.offline_replicas  # CTRL-11
    for p in range(3):
        assert cluster.partition(topic, p).leader_epoch >= before[p].leader_epoch
    with cluster.wire(after.leader_id) as w:
        # REPL-1: the new leader serves what the old one acknowledged, in the same order
        got = read_committed_by_now(w, topic, victim, set(sent[victim]))
        assert [r.value for r in got] == sent[victim]
        # REPL-8: a consumer still on the old epoch is fenced; one ahead is told to wait
        stale = fetch_at_epoch(w, topic, victim, 0, old_epoch)
        assert stale.error_code == ErrorCode.FENCED_LEADER_EPOCH
        ahead = fetch_at_epoch(w, topic, victim, 0, new_epoch + 1)
        assert ahead.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert fetch_at_epoch(w, topic, victim, 0, new_epoch).error_code == 0
        code, _, _ = epoch_end(w, topic, victim, current=old_epoch, asked=old_epoch)
        assert code == ErrorCode.FENCED_LEADER_EPOCH
        # TRUNC-4: the old epoch ends where the new leader's epoch started; the current
        # epoch ends at the log end
        assert epoch_end(w, topic, victim, new_epoch, old_epoch) == (0, old_epoch, 5)
        assert epoch_end(w, topic, victim, new_epoch, new_epoch) == (0, new_epoch, 5)


@pytest.mark.spec("REPL-4", "CTRL-6", "HIST-3")
def test_no_acknowledged_write_is_lost_when_the_leader_is_killed_mid_stream(cluster, target):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic, partitions = target.topic_name("crash"), 2
    assert cluster.create_topic(topic, partitions, 3, **STRICT) == 0
    victim = cluster.wait_leader(topic, 0).leader_id
    idempotent = target.has("idempotence")  # else a retry may append twice: at least once
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "enable.idempotence": idempotent,
            "message.timeout.ms": 30000,
            "retry.backoff.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    history, stop = History(), threading.Event()

    def delivered(err, msg) -> None:
        key = (topic, msg.partition())
        if err is None:
            history.send("producer", key, msg.value(), msg.offset())
        else:  # a send that timed out may still have been written: its outcome is unknown
            history.send("producer", key, msg.value(), None)

    def stream() -> None:
        i = 0
        while not stop.is_set():
            producer.produce(topic, b"%d" % i, partition=i % partitions, on_delivery=delivered)
            producer.poll(0.005)
            i += 1
        producer.flush(40)

    thread = threading.Thread(target=stream)
    thread.start()
    try:
        time.sleep(1.5)
        cluster.kill(victim)  # mid-stream
        cluster.wait_leader(topic, 0, not_on=(victim,))
        time.sleep(1.5)  # the stream goes on to the new leader
    finally:
        stop.set()
        thread.join(60)
    acked = [op for op in history.ops if getattr(op, "status", None) == "ok"]
    assert len(acked) > 50, f"only {len(acked)} sends acknowledged"
    for p in range(partitions):
        leader = cluster.wait_leader(topic, p, not_on=(victim,)).leader_id
        wanted = {op.value for op in acked if op.key == (topic, p)}
        with cluster.wire(leader) as w:
            records = read_committed_by_now(w, topic, p, wanted)
        history.poll("reader", {(topic, p): [(r.offset, r.value) for r in records]})
    result = check(history)
    anomalies = result.kinds() - (set() if idempotent else {"duplicate"})
    assert not anomalies, str(result)
    assert result.unseen == {}, f"acknowledged but not committed: {result.unseen}"


@pytest.mark.spec("CTRL-1", "ISR-2")
def test_a_broker_silent_past_its_session_is_dropped_and_comes_back(cluster, target):
    """A follower is paused (SIGSTOP) until the others stop listing it: its session
    expired. Resumed, it registers again and rejoins the ISR once caught up."""
    topic = target.topic_name("session")
    assert cluster.create_topic(topic, 1, 3) == 0
    leader = cluster.wait_leader(topic, 0).leader_id
    frozen = next(i for i in cluster.ids() if i != leader)
    others = [i for i in cluster.ids() if i != frozen]
    cluster.pause(frozen)
    try:
        for i in others:  # CTRL-1: its registration ends with its session
            wait_for(
                lambda i=i: frozen not in cluster.registered(i),
                what=f"broker {i} to drop broker {frozen}",
            )
        wait_for(
            lambda: frozen not in cluster.partition(topic, 0, via=leader).isr_nodes,
            what="the ISR to drop it",
        )
        with cluster.wire(leader) as w:
            assert produce(w, topic, 0, b"while away").error_code == 0
    finally:
        cluster.resume(frozen)
    everyone = set(cluster.ids())
    for i in cluster.ids():
        wait_for(lambda i=i: cluster.registered(i) == everyone, what=f"broker {i} to list all")
    # ISR-2: it follows the leader again and rejoins the ISR once caught up
    wait_for(
        lambda: frozen in cluster.partition(topic, 0, via=leader).isr_nodes,
        what=f"broker {frozen} to rejoin the ISR",
    )


@pytest.mark.spec("CTRL-13")
def test_a_controller_whose_session_expired_registers_again_and_stays_deposed(cluster):
    """The controller's broker is paused (SIGSTOP) until the others stop listing it and
    name a successor. Resumed, it must come back as an ordinary broker."""
    frozen = cluster.metadata([]).controller_id
    others = [i for i in cluster.ids() if i != frozen]
    cluster.pause(frozen)
    try:
        for i in others:
            wait_for(
                lambda i=i: (
                    frozen not in cluster.registered(i)
                    and cluster.metadata([], i).controller_id in others
                ),
                what=f"broker {i} to drop broker {frozen}",
            )
        successor = cluster.metadata([], others[0]).controller_id
    finally:
        cluster.resume(frozen)
    everyone = set(cluster.ids())
    for i in cluster.ids():
        wait_for(lambda i=i: cluster.registered(i) == everyone, what=f"broker {i} to list all")
    # every broker, the resumed one included, names the successor
    assert {cluster.metadata([], i).controller_id for i in cluster.ids()} == {successor}
