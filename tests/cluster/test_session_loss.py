"""A broker whose ZooKeeper session expires while it is frozen comes back (CTRL-13), and so
does a cluster whose ZooKeeper is frozen, while it runs or while a broker starts (CTRL-17, 18).

The broker process is stopped with SIGSTOP for longer than zookeeper.session.timeout.ms
(3 s here): ZooKeeper expires its session, so its ephemeral /brokers/ids/<id> (and
/controller, if it held it) vanish and the other brokers act as if it had died. SIGCONT
wakes it: kazoo reports the session LOST, opens a new session, and the broker must
register again, catch up, rejoin the ISRs, and not act as controller any more.

Forcing the expiry "the standard way" (a second client opened with the broker's session id
and password, then closed) needs the password, which only the broker's own client knows;
freezing the process expires the session the way a long GC pause or a frozen VM does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time

import pytest
from confluent_kafka import Producer
from kazoo.exceptions import ConnectionLoss, NoNodeError

from kafka_ref.cluster import zk_data as zkdata
from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.cluster.zk_metadata import ZkClusterMetadata
from kafka_ref.cluster.zookeeper import KafkaZkClient
from tests.cluster.conftest import SESSION_TIMEOUT_MS, wait_for
from tests.cluster.test_controller import create_topic, wait_metadata_agrees

pytestmark = pytest.mark.timeout(180)


def registration(cluster, broker_id):
    """(host, port, session id) of /brokers/ids/<id>, or None while it does not exist."""
    try:
        raw, stat = cluster.zk.zk.get(zkdata.broker_path(broker_id))
    except NoNodeError:
        return None
    data = json.loads(raw)
    return data["host"], data["port"], stat.ephemeralOwner


@pytest.mark.spec("CTRL-13", "CTRL-3")  # re-registering and rejoining the ISRs: CTRL-13 says both
def test_a_controller_whose_session_expired_registers_again_and_stays_deposed(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=3, rf=3)
    victim, epoch = cluster.controller()  # the frozen broker is the controller: both roles
    others = [i for i in (1, 2, 3) if i != victim]
    host, port, old_session = registration(cluster, victim)
    assert (host, port) == ("127.0.0.1", cluster.brokers[victim].port)
    led = [p for p in range(3) if cluster.state(topic_name, p).leader == victim]

    pid = cluster.brokers[victim].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(
            lambda: registration(cluster, victim) is None,
            timeout=4 * SESSION_TIMEOUT_MS / 1000,
            what=f"broker {victim}'s session to expire",
        )
        new, new_epoch = wait_for(
            lambda: (c := cluster.controller())[0] in others and c, what="a new controller"
        )
        assert new_epoch > epoch
        for p in range(3):  # its leaderships moved, it left every ISR
            wait_for(
                lambda p=p: (
                    (s := cluster.state(topic_name, p)).leader in others and victim not in s.isr
                ),
                what=f"partition {p} without broker {victim}",
            )
    finally:
        os.kill(pid, signal.SIGCONT)

    # Registered again, under a new session, with its endpoint.
    again = wait_for(lambda: registration(cluster, victim), what=f"broker {victim} again")
    assert again[:2] == (host, port) and again[2] != old_session
    assert cluster.brokers[victim].alive
    wait_for(
        lambda: all(victim in {b.node_id for b in cluster.metadata(i).brokers} for i in (1, 2, 3)),
        what=f"every broker to list broker {victim} in Metadata",
    )
    # It catches up and rejoins the ISR of every partition (RF 3), led by another broker.
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i in range(30):
        producer.produce(topic_name, value=b"after-%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    for p in range(3):
        wait_for(
            lambda p=p: victim in cluster.state(topic_name, p).isr,
            what=f"broker {victim} back in the ISR of partition {p}",
        )
    wait_metadata_agrees(cluster, topic_name, 3, [1, 2, 3])
    # Deposed: the controller and its epoch are the successor's, on every broker's answer.
    assert cluster.controller() == (new, new_epoch)
    assert {cluster.metadata(i).controller_id for i in (1, 2, 3)} == {new}
    for p in led:  # its old leaderships stay with the new leaders, under the new epoch
        state = cluster.state(topic_name, p)
        assert state.leader in others and state.controller_epoch >= new_epoch
    log = cluster.brokers[victim].log()
    assert f"broker {victim} resigns as controller (epoch {epoch})" in log
    assert f"broker {victim} is the controller, epoch" not in log.split("resigns")[-1]


class _LosesTheFirstReads(KafkaZkClient):
    """The real ZooKeeper client, except that once armed its next reads of a topic's config
    fail as a connection lost in the middle of a watch callback would."""

    def __init__(self, connect: str) -> None:
        super().__init__(connect)
        self.failures = 0

    def get_topic_config(self, topic: str):
        if self.failures:
            self.failures -= 1
            raise ConnectionLoss()
        return super().get_topic_config(topic)


@pytest.mark.spec("CTRL-13")
def test_a_watch_callback_survives_a_lost_connection(cluster, topic_name, tmp_path):
    """A ConnectionLoss in the middle of a topic watch's reads must not leave the picture
    stale: the callback reads again until it has the topic with its config."""
    create_topic(cluster, topic_name, partitions=1, rf=1, configs={"retention.ms": "12345"})
    zk = _LosesTheFirstReads(cluster.zookeeper.connect)
    zk.start(timeout=30)
    try:
        picture = ZkClusterMetadata(zk, str(tmp_path), BrokerEndpoint(99, "127.0.0.1", 1))
        picture._remove_topic(topic_name)  # read at start: forget it, the watch brings it
        data, stat = zk.zk.get(zkdata.topic_path(topic_name))
        zk.failures = 3
        picture._topic_watch(topic_name)(data, stat)
        assert zk.failures == 0
        assert picture.topic(topic_name).configs == {"retention.ms": "12345"}
    finally:
        zk.close()


@pytest.mark.spec("CTRL-17")
def test_a_broker_paused_while_it_waits_to_register_comes_up_when_resumed(cluster, topic_name):
    """kill -9, start again at once (the old registration lives until its session expires),
    and freeze the new process in that wait for longer than a session: its own session
    expires too. Resumed, it must wait out the lost connection and register, not exit."""
    victim = 3
    broker = cluster.brokers[victim]
    broker.stop(signal.SIGKILL)
    log_before = len(broker.log())
    starting = threading.Thread(target=broker.start, kwargs={"timeout": 60}, daemon=True)
    starting.start()
    wait_for(
        lambda: f"broker id {victim} is still registered; waiting" in broker.log()[log_before:],
        what=f"broker {victim} to wait for its old registration",
    )
    os.kill(broker.pid, signal.SIGSTOP)
    try:
        time.sleep(2 * SESSION_TIMEOUT_MS / 1000)  # the pause itself is the fault
    finally:
        os.kill(broker.pid, signal.SIGCONT)
    starting.join(60)
    assert broker.alive, broker.log()[log_before:]
    wait_for(lambda: registration(cluster, victim), what=f"broker {victim} registered")
    cluster.wait_registered()
    create_topic(cluster, topic_name, partitions=3, rf=3)
    wait_metadata_agrees(cluster, topic_name, 3, [1, 2, 3])


@contextlib.contextmanager
def paused(pid: int):
    """SIGSTOP `pid` for the body of the `with`: a long GC pause, a frozen VM."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def assert_serves_acks_all(cluster, topic_name: str) -> None:
    """Every partition (RF 3) takes an acks=all produce: leaders elected, ISRs complete."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i in range(30):
        producer.produce(topic_name, value=b"after-%d" % i, partition=i % 3)
    assert producer.flush(60) == 0


@pytest.mark.spec("CTRL-18")
def test_a_zookeeper_paused_longer_than_the_session_is_ridden_out(cluster, topic_name):
    """ZooKeeper itself frozen for three session timeouts: every broker loses its connection
    and, once ZooKeeper runs again, finds its session expired or not. Each must register (again),
    a controller must be elected, and acks=all produces must succeed; no broker exits."""
    create_topic(cluster, topic_name, partitions=3, rf=3)
    pids = {i: broker.pid for i, broker in cluster.brokers.items()}
    with paused(cluster.zookeeper.pid):
        time.sleep(3 * SESSION_TIMEOUT_MS / 1000)  # the pause itself is the fault
    cluster.wait_registered()  # every broker registered, a controller, all see each other
    assert {i: b.pid for i, b in cluster.brokers.items() if b.alive} == pids
    assert_serves_acks_all(cluster, topic_name)
    wait_metadata_agrees(cluster, topic_name, 3, [1, 2, 3])


@pytest.mark.spec("CTRL-17")
def test_a_broker_started_while_zookeeper_is_paused_waits_for_it(cluster, topic_name):
    """A broker starts while ZooKeeper is frozen for 35 s, longer than its session and than
    any connection timeout (30 s was the wait before this rule): it waits for ZooKeeper
    instead of giving up, then registers and serves."""
    victim = 3
    broker = cluster.brokers[victim]
    broker.stop()  # a clean stop: its registration goes at once
    wait_for(lambda: registration(cluster, victim) is None, what=f"broker {victim} gone")
    log_before = len(broker.log())
    starting = threading.Thread(target=broker.start, kwargs={"timeout": 120}, daemon=True)
    with paused(cluster.zookeeper.pid):
        starting.start()
        time.sleep(35)  # the pause itself is the fault
    starting.join(120)
    assert broker.alive, broker.log()[log_before:]
    cluster.wait_registered()
    create_topic(cluster, topic_name, partitions=3, rf=3)
    assert_serves_acks_all(cluster, topic_name)
