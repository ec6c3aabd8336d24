"""The controller's requests on the wire: LeaderAndIsr, UpdateMetadata and AlterPartition
between real broker processes, fenced by controller epochs and broker epochs.

Some tests play a controller whose requests arrive late: they build the requests the
controller builds (`ControllerBrokerRequestBatch`) with an older epoch and send them to a
real broker, which must refuse them and keep its state. The first test needs no forgery:
a real controller is paused past its ZooKeeper session, a successor acts, and when the old
one resumes the request it had queued is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import time
import uuid
from pathlib import Path

import pytest
from kazoo.exceptions import NoNodeError

from kafka_ref.client.connection import RequestTimedOutError
from kafka_ref.cluster.controller_channel import ControllerBrokerRequestBatch
from kafka_ref.cluster.metadata import BrokerEndpoint
from kafka_ref.cluster.zk_metadata import ZkClusterMetadata
from kafka_ref.cluster.zookeeper import KafkaZkClient, broker_path
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    AlterPartitionRequest,
    ApiKey,
    FindCoordinatorRequest,
    MetadataRequest,
)
from kafka_ref.security.listeners import EndPoint
from kafka_ref.tools.server_process import free_port
from tests.cluster.conftest import SESSION_TIMEOUT_MS, wait_for
from tests.cluster.test_controller import create_topic, leaders_in_metadata, wait_metadata_agrees
from tests.cluster.test_session_loss import paused

pytestmark = pytest.mark.timeout(180)


def send_as_controller(cluster, broker_id, kind, state, *, controller_epoch, broker_epoch=None):
    """Send `broker_id` one LeaderAndIsr or UpdateMetadata with `state`, as a controller of
    `controller_epoch` that believes the broker's epoch is `broker_epoch` (default: its
    current one). Returns the response. Like the real controller's, an UpdateMetadata lists
    every live broker: the receiver takes that list as the live brokers (CTRL-31)."""
    live = {b: cluster.zk.get_broker_and_epoch(b) for b in cluster.zk.get_broker_ids()}
    if broker_epoch is not None:
        live[broker_id] = (live[broker_id][0], broker_epoch)
    batch = ControllerBrokerRequestBatch(cluster.controller()[0], controller_epoch)
    if kind == "LeaderAndIsr":
        batch.add_leader_and_isr([broker_id], state)
    else:
        batch.add_update_metadata([broker_id], [state])
    ((_, (api_key, _version, body)),) = batch.requests(live)
    return cluster.request(broker_id, api_key, body)


def current_state(cluster, topic, partition):
    state, version = cluster.zk.get_partition_state(topic, partition, (1, 2, 3))
    return dataclasses.replace(state, zk_version=version)


@pytest.mark.spec("CTRL-19", "CTRL-4")
def test_a_deposed_controller_that_wakes_up_is_refused(cluster, topic_name):
    """The old controller queued two requests for broker `slow` (LeaderAndIsr, then
    UpdateMetadata) while `slow` was paused, and was itself paused before the second left.
    A successor takes over with a higher epoch and tells `slow`; when the old controller
    resumes, it sends what it still had, and `slow` refuses it."""
    old, epoch = cluster.controller()
    slow, third = [i for i in (1, 2, 3) if i != old]
    slow_pid, old_pid = cluster.brokers[slow].pid, cluster.brokers[old].pid
    os.kill(slow_pid, signal.SIGSTOP)  # shorter than its session: it stays registered
    try:
        # A new topic led by the controller's broker: it writes the state, then queues
        # LeaderAndIsr and UpdateMetadata for each replica; the one to `slow` waits.
        cluster.zk.create_topic(topic_name, str(uuid.uuid4()), {0: [old, slow, third]}, {})
        wait_for(lambda: cluster.state(topic_name, 0), what="the controller's first state")
        time.sleep(0.5)  # its event loop writes the LeaderAndIsr to `slow`'s socket
        os.kill(old_pid, signal.SIGSTOP)
    finally:
        os.kill(slow_pid, signal.SIGCONT)
    try:
        wait_for(
            lambda: (c := cluster.controller())[0] in (slow, third) and c[1] > epoch,
            timeout=6 * SESSION_TIMEOUT_MS / 1000,
            what="a successor controller",
        )
        wait_for(  # `slow` heard from the successor: the partition moved away from `old`
            lambda: leaders_in_metadata(cluster, slow, topic_name)[0][0] in (slow, third),
            what=f"broker {slow} to learn the new leader",
        )
    finally:
        os.kill(old_pid, signal.SIGCONT)
    # Whichever of its two requests had not reached `slow` before the pause is refused.
    refusal = re.compile(
        rf"refusing (LeaderAndIsr|UpdateMetadata)Request from controller {old} \(controller"
        rf" epoch {epoch}, .*: STALE_CONTROLLER_EPOCH$",
        re.M,
    )
    wait_for(lambda: refusal.search(cluster.brokers[slow].log()), what=f"broker {slow} to refuse")
    sent = f"controller {old} (epoch {epoch}): broker {slow} refused "
    wait_for(lambda: sent in cluster.brokers[old].log(), what=f"broker {old} to see it")
    # Nothing changed: ZooKeeper keeps the successor's decision, and so does every broker.
    state = cluster.state(topic_name, 0)
    assert state.leader != old and state.controller_epoch > epoch
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])


@pytest.mark.spec("CTRL-20")
def test_a_request_for_an_earlier_registration_is_refused(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    victim = next(i for i in (1, 2, 3) if i != cluster.controller()[0])
    _, old_epoch = cluster.zk.get_broker_and_epoch(victim)
    cluster.stop(victim)
    cluster.brokers[victim].start()
    cluster.wait_registered()
    _, new_epoch = cluster.zk.get_broker_and_epoch(victim)
    assert new_epoch > old_epoch  # a new registration, a new czxid (KIP-380)
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    # the victim back in the ISR first: from here on nothing changes the state but the test
    wait_for(
        lambda: sorted(current_state(cluster, topic_name, 0).isr) == [1, 2, 3],
        what=f"broker {victim} back in the ISR",
    )
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    before = leaders_in_metadata(cluster, victim, topic_name)
    state = current_state(cluster, topic_name, 0)
    ahead = dataclasses.replace(state, leader_epoch=state.leader_epoch + 7, isr=(state.leader,))
    _, controller_epoch = cluster.controller()
    for kind in ("LeaderAndIsr", "UpdateMetadata"):
        response = send_as_controller(
            cluster, victim, kind, ahead, controller_epoch=controller_epoch, broker_epoch=old_epoch
        )
        assert response.error_code == ErrorCode.STALE_BROKER_EPOCH, kind
    assert leaders_in_metadata(cluster, victim, topic_name) == before
    # The same request for the broker's current registration is applied: the check is
    # the broker epoch, nothing else (UpdateMetadata only: the cache, not the replicas).
    response = send_as_controller(
        cluster, victim, "UpdateMetadata", ahead, controller_epoch=controller_epoch
    )
    assert response.error_code == ErrorCode.NO_ERROR
    assert leaders_in_metadata(cluster, victim, topic_name)[0][1] == state.leader_epoch + 7
    # A leader's AlterPartition from its earlier registration: the controller refuses it too.
    leader = state.leader
    request = AlterPartitionRequest(
        broker_id=leader,
        broker_epoch=cluster.zk.get_broker_and_epoch(leader)[1] - 1,
        topics=[
            AlterPartitionRequest.TopicData(
                topic_name=topic_name,
                partitions=[
                    AlterPartitionRequest.PartitionData(
                        partition_index=0,
                        leader_epoch=state.leader_epoch,
                        new_isr=[leader],
                        partition_epoch=state.zk_version,
                    )
                ],
            )
        ],
    )
    answer = cluster.request(cluster.controller()[0], ApiKey.ALTER_PARTITION, request, version=0)
    assert answer.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert cluster.state(topic_name, 0).isr == state.isr


@pytest.mark.spec("CTRL-5", "CTRL-19")
def test_brokers_refuse_an_older_controller_and_ignore_older_states(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    state = current_state(cluster, topic_name, 0)
    _, controller_epoch = cluster.controller()
    ahead = dataclasses.replace(state, leader_epoch=state.leader_epoch + 1, isr=(state.leader,))
    behind = dataclasses.replace(state, leader_epoch=state.leader_epoch - 1, isr=(state.leader,))
    for i in (1, 2, 3):
        before = leaders_in_metadata(cluster, i, topic_name)
        for kind in ("LeaderAndIsr", "UpdateMetadata"):  # a deposed controller's request
            response = send_as_controller(
                cluster, i, kind, ahead, controller_epoch=controller_epoch - 1
            )
            assert response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH, (i, kind)
        # The current controller, but a state older than the applied one (a reordered or
        # repeated request): LeaderAndIsr refuses the partition, UpdateMetadata keeps the
        # newer state.
        response = send_as_controller(
            cluster, i, "LeaderAndIsr", behind, controller_epoch=controller_epoch
        )
        (partition,) = response.partition_errors
        assert partition.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        response = send_as_controller(
            cluster, i, "UpdateMetadata", behind, controller_epoch=controller_epoch
        )
        assert response.error_code == ErrorCode.NO_ERROR
        assert leaders_in_metadata(cluster, i, topic_name) == before  # epochs never go back
    assert f"ignoring stale state of {topic_name}-0" in cluster.brokers[1].log()


@pytest.mark.spec("CTRL-21", "CTRL-32")
def test_a_broker_that_just_started_knows_every_topic_in_its_first_metadata(cluster, topic_name):
    """Its first answer names every topic, each partition with a state at least as new as
    the one ZooKeeper held when it came back and no newer than ZooKeeper's after the answer:
    the answer waited for the controller's first UpdateMetadata, which the controller may
    follow with another decision on its return (electing it again, say), never miss a topic."""
    victim = next(i for i in (1, 2, 3) if i != cluster.controller()[0])
    cluster.stop(victim)
    create_topic(cluster, topic_name, partitions=2, rf=2)  # while it is away
    names = cluster.zk.get_all_topics()

    def states() -> dict:
        return {(t, p): cluster.state(t, p) for t in names for p in cluster.zk.get_topic(t)[0]}

    before = states()
    cluster.brokers[victim].start()  # returns as soon as it accepts a connection
    first = cluster.metadata(victim)
    after = states()
    topics = {t.name: t for t in first.topics}
    assert set(topics) == set(names)
    for name, topic in topics.items():
        assert topic.error_code == ErrorCode.NO_ERROR, name
        for p in topic.partitions:
            old, new = before[name, p.partition_index], after[name, p.partition_index]
            assert old.leader_epoch <= p.leader_epoch <= new.leader_epoch, name
            if p.leader_epoch == new.leader_epoch:
                assert p.leader_id == new.leader, name


@pytest.mark.spec("CTRL-32")
def test_a_registering_broker_takes_no_partition_state_from_zookeeper(
    cluster, topic_name, tmp_path
):
    """The picture of a broker 98 (a registration the test makes; nothing listens at its
    address) registers while ZooKeeper holds a state for every partition: it takes none of
    them, nor the live brokers, and a request answered from it waits until the controller's
    first UpdateMetadata has brought them (here, the test's)."""
    create_topic(cluster, topic_name, partitions=1, rf=3)
    state = current_state(cluster, topic_name, 0)
    zk = KafkaZkClient(cluster.zookeeper.connect)
    zk.start(timeout=30)
    try:
        picture = ZkClusterMetadata(zk, str(tmp_path), BrokerEndpoint(98, "127.0.0.1", free_port()))
        picture.register()
        assert picture.topic(topic_name) is not None  # the topics are read at start
        assert picture.partition_state(topic_name, 0) is None  # no state from ZooKeeper
        assert picture.brokers() == []

        async def a_request_waits_for_the_first_update_metadata() -> None:
            resumed: list[int] = []
            assert picture.hold(lambda: resumed.append(1))
            await asyncio.sleep(0.1)
            assert resumed == []
            picture.update_metadata([state], cluster.controller()[0])
            picture.update_live_brokers([(1, (EndPoint("PLAINTEXT", "PLAINTEXT", "h", 1),), None)])
            assert resumed == [1]
            assert not picture.hold(lambda: resumed.append(2))  # once told, never again

        asyncio.run(a_request_waits_for_the_first_update_metadata())
        assert picture.partition_state(topic_name, 0) == state
        assert [b.node_id for b in picture.brokers()] == [1]
    finally:
        zk.close()


@pytest.mark.spec("CTRL-32", "BROKER-48")
def test_a_restarted_broker_answers_metadata_once_a_controller_told_it(cluster, topic_name):
    """The controller's broker frozen, the leader of a partition stops and starts again:
    ZooKeeper still names it leader, nobody having acted on its leaving, and it has had no
    LeaderAndIsr. It must not answer Metadata from that state: while the frozen controller
    is still the controller (its epoch unchanged in ZooKeeper), its Metadata gets no answer.
    (Frozen past its session, the controller is replaced; the successor tells it.) Once a
    controller has told it, it answers, and serves what it then leads."""
    controller, epoch = cluster.controller()
    victim = next(i for i in (1, 2, 3) if i != controller)
    create_topic(cluster, topic_name, partitions=1, rf=1, assignment=[[victim]])
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    answer = None
    with paused(cluster.brokers[controller].pid):
        cluster.stop(victim)
        cluster.brokers[victim].start()  # returns as soon as it accepts a connection
        conn = cluster.connection(victim)
        try:
            answer = conn.request(ApiKey.METADATA, MetadataRequest(topics=None), timeout_s=1)
        except RequestTimedOutError:
            pass
        finally:
            conn.close()
        state = cluster.state(topic_name, 0)
        unchanged = cluster.controller() == (controller, epoch)  # still, after that read
    if unchanged:  # nobody acted on its leaving: ZooKeeper names it leader, as it did before
        assert state.leader == victim, state
        assert answer is None, f"answered before any controller told it: {answer}"
    wait_metadata_agrees(cluster, topic_name, 1, [victim])
    assert leaders_in_metadata(cluster, victim, topic_name)[0][0] == victim
    cluster.wait_registered()


def brokers_listed(cluster, broker_id):
    """{id: (host, port, rack)} of the brokers `broker_id`'s Metadata answer lists."""
    return {b.node_id: (b.host, b.port, b.rack) for b in cluster.metadata(broker_id).brokers}


def never_listed(cluster, broker_id, newcomer, seconds):
    """`broker_id` does not list `newcomer` in any answer for `seconds` (a watch on
    /brokers/ids would show it within milliseconds)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert newcomer not in brokers_listed(cluster, broker_id)
        time.sleep(0.05)


@pytest.mark.spec("CTRL-31", "SEC-2")
def test_brokers_learn_the_live_brokers_only_from_the_controllers_update_metadata(cluster):
    """A broker registers while the controller's broker is frozen (shorter than its session:
    it stays controller): the other brokers watch no /brokers/ids, so none lists it until
    the resumed controller's UpdateMetadata names it, with the endpoint of the listener the
    client came in on and its rack; its leaving, likewise, only once the controller says so.
    The newcomer is a registration the test writes; nothing listens at its address."""
    controller, _ = cluster.controller()
    other = next(i for i in (1, 2, 3) if i != controller)
    port = free_port()
    newcomer = BrokerEndpoint(
        99,
        "127.0.0.1",
        port,
        "rack-9",
        (
            EndPoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", port),
            EndPoint("EXTERNAL", "SSL", "external.example", 9093),
        ),
    )
    pid = cluster.brokers[controller].pid
    try:
        with paused(pid):
            cluster.zk.register_broker(newcomer)
            never_listed(cluster, other, 99, seconds=1.0)
        wait_for(
            lambda: brokers_listed(cluster, other).get(99) == ("127.0.0.1", port, "rack-9"),
            what=f"broker {other} to learn broker 99 from the controller",
        )
        with paused(pid):
            cluster.zk.zk.delete(broker_path(99))
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                assert 99 in brokers_listed(cluster, other)  # nobody has told it yet
                time.sleep(0.05)
        wait_for(
            lambda: 99 not in brokers_listed(cluster, other),
            what=f"broker {other} to learn from the controller that broker 99 left",
        )
    finally:
        with contextlib.suppress(NoNodeError):
            cluster.zk.zk.delete(broker_path(99))
        for i in (1, 2, 3):
            wait_for(lambda i=i: 99 not in brokers_listed(cluster, i), what=f"{i} to forget 99")


@pytest.mark.spec("CTRL-31")
def test_an_update_metadata_with_an_unreachable_live_broker_is_refused_whole(cluster, topic_name):
    """A live broker named with an unknown security protocol, or with no endpoint at all:
    INVALID_REQUEST, and neither the brokers nor the states it carried are applied."""
    create_topic(cluster, topic_name, partitions=1, rf=3)
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    state = current_state(cluster, topic_name, 0)
    ahead = dataclasses.replace(state, leader_epoch=state.leader_epoch + 1, isr=(state.leader,))
    controller, controller_epoch = cluster.controller()
    target = next(i for i in (1, 2, 3) if i != controller)
    live = {b: cluster.zk.get_broker_and_epoch(b) for b in cluster.zk.get_broker_ids()}
    before = brokers_listed(cluster, target), leaders_in_metadata(cluster, target, topic_name)

    def spoil_protocol(broker):
        broker.endpoints[0].security_protocol = 9

    def drop_endpoints(broker):
        broker.endpoints = []

    for spoil in (spoil_protocol, drop_endpoints):
        batch = ControllerBrokerRequestBatch(controller, controller_epoch)
        batch.add_update_metadata([target], [ahead])
        ((_, (api_key, _version, body)),) = batch.requests(live)
        spoil(body.live_brokers[0])
        response = cluster.request(target, api_key, body)
        assert response.error_code == ErrorCode.INVALID_REQUEST, spoil.__name__
        after = brokers_listed(cluster, target), leaders_in_metadata(cluster, target, topic_name)
        assert after == before, spoil.__name__


def find_coordinator(cluster, broker_id, group):
    return cluster.request(broker_id, ApiKey.FIND_COORDINATOR, FindCoordinatorRequest(key=group))


@pytest.mark.spec("CTRL-21", "BROKER-45")
def test_a_restarted_broker_never_tries_to_create_an_existing_internal_topic(cluster):
    """Its first FindCoordinator answers come from the topics it read at start and the states
    of the controller's first UpdateMetadata (CTRL-32): a coordinator at once, and no
    attempt to create `__consumer_offsets` again."""
    wait_for(  # the first FindCoordinator creates __consumer_offsets; it exists from now on
        lambda: find_coordinator(cluster, 1, "g").error_code == ErrorCode.NO_ERROR,
        what="a group coordinator",
    )
    victim = next(i for i in (1, 2, 3) if i != cluster.controller()[0])
    log_before = len(cluster.brokers[victim].log())
    cluster.stop(victim, signal.SIGKILL)
    cluster.brokers[victim].start(timeout=60)  # returns as soon as it accepts a connection
    answers = [find_coordinator(cluster, victim, f"g{group}") for group in range(6)]
    assert [a.error_code for a in answers] == [ErrorCode.NO_ERROR] * 6, answers
    cluster.wait_registered()
    assert "cannot create __consumer_offsets" not in cluster.brokers[victim].log()[log_before:]


def alter_partition(cluster, to, sender, topic, leader_epoch, isr, partition_epoch, epoch=None):
    request = AlterPartitionRequest(
        broker_id=sender,
        broker_epoch=cluster.zk.get_broker_and_epoch(sender)[1] if epoch is None else epoch,
        topics=[
            AlterPartitionRequest.TopicData(
                topic_name=topic,
                partitions=[
                    AlterPartitionRequest.PartitionData(
                        partition_index=0,
                        leader_epoch=leader_epoch,
                        new_isr=list(isr),
                        partition_epoch=partition_epoch,
                    )
                ],
            )
        ],
    )
    return cluster.request(to, ApiKey.ALTER_PARTITION, request, version=0)  # ZooKeeper mode's


@pytest.mark.spec("CTRL-22")
def test_leaders_change_their_isr_through_the_controller(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    state = current_state(cluster, topic_name, 0)
    controller = cluster.controller()[0]
    leader, follower = state.leader, next(r for r in state.replicas if r != state.leader)
    other = next(i for i in (1, 2, 3) if i != controller)

    def error(
        to=controller,
        sender=leader,
        epoch=state.leader_epoch,
        isr=state.isr,
        version=state.zk_version,
    ):
        response = alter_partition(cluster, to, sender, topic_name, epoch, isr, version)
        if response.error_code or not response.topics:
            return ErrorCode(response.error_code)
        return ErrorCode(response.topics[0].partitions[0].error_code)

    shrunk = tuple(r for r in state.isr if r != follower)
    assert error(to=other) == ErrorCode.NOT_CONTROLLER
    assert error(sender=follower, isr=shrunk) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error(epoch=state.leader_epoch - 1, isr=shrunk) == ErrorCode.FENCED_LEADER_EPOCH
    assert error(version=state.zk_version - 1, isr=shrunk) == ErrorCode.INVALID_UPDATE_VERSION
    assert error(isr=(*state.isr, 9)) == ErrorCode.OPERATION_NOT_ATTEMPTED  # 9: no replica
    without_leader = tuple(r for r in state.isr if r != leader)
    assert error(isr=without_leader) == ErrorCode.OPERATION_NOT_ATTEMPTED
    assert error(version=state.zk_version - 1) == ErrorCode.NO_ERROR  # the same ISR: a retry
    assert current_state(cluster, topic_name, 0) == state  # none of these wrote anything

    # A real change: a follower stops, the controller drops it (a new leader epoch); back, it
    # catches up and its leader adds it with AlterPartition: same leader epoch, new version.
    cluster.stop(follower)
    dropped = wait_for(
        lambda: (s := current_state(cluster, topic_name, 0)).isr == shrunk and s,
        what=f"broker {follower} out of the ISR",
    )
    assert dropped.leader_epoch == state.leader_epoch + 1
    cluster.brokers[follower].start()
    back = wait_for(
        lambda: follower in (s := current_state(cluster, topic_name, 0)).isr and s,
        what=f"broker {follower} back in the ISR",
    )
    assert (back.leader, back.leader_epoch) == (dropped.leader, dropped.leader_epoch)
    assert back.zk_version > dropped.zk_version
    controller_log = cluster.brokers[cluster.controller()[0]].log()
    assert f"{topic_name}-0 isr {list(back.isr)} (AlterPartition from {back.leader})" in (
        controller_log
    )
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])


@pytest.mark.spec("CTRL-21")
def test_stop_replica_deletes_a_replica_unless_its_leader_epoch_is_older(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    first = current_state(cluster, topic_name, 0)
    follower, third = [r for r in first.replicas if r != first.leader]
    cluster.stop(third)  # the controller shrinks the ISR: leader epoch 1, which -1 is not
    wait_for(lambda: current_state(cluster, topic_name, 0).leader_epoch > 0, what="epoch 1")
    cluster.brokers[third].start()
    cluster.wait_registered()
    wait_metadata_agrees(cluster, topic_name, 1, [follower])
    state = current_state(cluster, topic_name, 0)
    log_dir = Path(cluster.brokers[follower].data_dir) / f"{topic_name}-0"
    assert log_dir.is_dir()
    controller, controller_epoch = cluster.controller()

    def stop_replica(leader_epoch):
        batch = ControllerBrokerRequestBatch(controller, controller_epoch)
        batch.add_stop_replica(follower, topic_name, 0, leader_epoch)
        ((_, (api_key, _v, body)),) = batch.requests(
            {follower: cluster.zk.get_broker_and_epoch(follower)}
        )
        (answer,) = cluster.request(follower, api_key, body).partition_errors
        return ErrorCode(answer.error_code)

    assert stop_replica(state.leader_epoch - 1) == ErrorCode.FENCED_LEADER_EPOCH
    assert log_dir.is_dir()
    assert stop_replica(state.leader_epoch) == ErrorCode.NO_ERROR
    assert not log_dir.exists()  # deleted by the request, while the topic still exists
    assert topic_name in cluster.zk.get_all_topics()
