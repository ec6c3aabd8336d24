"""Metadata in a cluster: every broker reports the leader epochs, and they never go back.

Metadata v7 carries each partition's `leader_epoch` (KIP-320). A client that cached an
epoch uses it to tell a fresher answer from a stale one (librdkafka ignores a partition's
metadata whose epoch is older than the one it has), so a broker must never report an epoch
older than one it reported before: each broker answers from its own picture of ZooKeeper,
which only takes a partition state with a leader epoch at least the one it has (CTRL-5).
"""

from __future__ import annotations

import concurrent.futures
import signal
import threading
import time

import pytest

from kafka_ref.client.connection import BrokerConnection
from kafka_ref.errors import KafkaError
from kafka_ref.protocol.messages import ApiKey, MetadataRequest
from tests.cluster.conftest import wait_for
from tests.cluster.test_controller import create_topic, leaders_in_metadata

pytestmark = pytest.mark.timeout(120)


@pytest.mark.spec("CTRL-11", "CTRL-12")
def test_after_a_leader_kill_every_broker_reports_the_new_leader_with_a_higher_epoch(
    cluster, topic_name
):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    state = cluster.state(topic_name, 0)
    for b in (1, 2, 3):
        wait_for(
            lambda b=b: (
                leaders_in_metadata(cluster, b, topic_name)[0][:2]
                == (state.leader, state.leader_epoch)
            ),
            what=f"broker {b} to report leader {state.leader} in epoch {state.leader_epoch}",
        )
    victim, old_epoch = state.leader, state.leader_epoch
    cluster.stop(victim, signal.SIGKILL)
    survivors = [b for b in (1, 2, 3) if b != victim]
    last = dict.fromkeys(survivors, old_epoch)

    def moved(b: int) -> bool:
        leader, epoch, _ = leaders_in_metadata(cluster, b, topic_name)[0]
        assert epoch >= last[b], f"broker {b}'s epoch went back from {last[b]} to {epoch}"
        last[b] = epoch
        return leader not in (victim, -1) and epoch > old_epoch

    for b in survivors:
        wait_for(lambda b=b: moved(b), what=f"broker {b} to report a new leader")
    reported = {leaders_in_metadata(cluster, b, topic_name)[0][:2] for b in survivors}
    new = cluster.state(topic_name, 0)
    assert reported == {(new.leader, new.leader_epoch)}
    assert new.leader_epoch > old_epoch

    cluster.ensure_running()  # the killed broker comes back: it reports the new epoch too

    def restarted_epoch() -> int:  # until its watches deliver the topic, it has no partition
        return leaders_in_metadata(cluster, victim, topic_name).get(0, (-1, -1))[1]

    wait_for(
        lambda: restarted_epoch() >= new.leader_epoch,
        what=f"the restarted broker {victim} to report epoch {new.leader_epoch} or later",
    )


def metadata_answers(port: int, stop: threading.Event) -> list:
    """Every Metadata answer (all topics) a broker gives while `stop` is unset; a refused
    or dropped connection is no answer."""
    answers = []
    while not stop.is_set():
        try:
            conn = BrokerConnection("127.0.0.1", port).connect()
            try:
                answers.append(
                    conn.request(ApiKey.METADATA, MetadataRequest(topics=None), timeout_s=5)
                )
            finally:
                conn.close()
        except (OSError, KafkaError):
            pass
        time.sleep(0.02)
    return answers


@pytest.mark.spec("BROKER-48", "CTRL-14")
def test_a_broker_restarted_after_a_kill_answers_only_as_one_that_knows_the_cluster(
    cluster, topic_name
):
    """Killed with -9 and started again at once, a broker waits for its old registration to
    expire (the session timeout). It must not answer in that time as a broker that knows
    nothing (no brokers, no topics): every answer lists every live broker, itself included,
    the topic, and a leader that it lists."""
    create_topic(cluster, topic_name, partitions=3, rf=2)
    victim = cluster.state(topic_name, 0).leader
    broker = cluster.brokers[victim]
    cluster.stop(victim, signal.SIGKILL)
    stop = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answers = pool.submit(metadata_answers, broker.port, stop)
        broker.start()  # returns once the broker accepts connections
        wait_for(lambda: cluster.zk.get_broker_ids() == [1, 2, 3], what="the broker to register")
        time.sleep(1)
        stop.set()
        answers = answers.result()
    assert answers, "the restarted broker never answered"
    for answer in answers:
        listed = {b.node_id for b in answer.brokers}
        assert victim in listed and len(listed) >= 2, listed
        assert answer.controller_id in listed, (answer.controller_id, listed)
        topics = {t.name: t for t in answer.topics}
        assert topic_name in topics, sorted(topics)
        for p in topics[topic_name].partitions:
            assert p.leader_id in listed or (p.leader_id == -1 and p.error_code != 0), p
