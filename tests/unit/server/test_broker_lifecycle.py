"""A KRaft broker's lifecycle (server/broker_lifecycle.py) against a real QuorumController:
registration, heartbeats, unfencing once caught up, controlled shutdown."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafka_ref.cluster.embedded import ensure_directory_id
from kafka_ref.errors import ErrorCode
from kafka_ref.metadata import directory_id
from kafka_ref.metadata.controller import cluster_control as cc
from kafka_ref.metadata.image import Endpoint
from kafka_ref.protocol.messages import ApiKey, BrokerHeartbeatResponse, BrokerRegistrationResponse
from kafka_ref.security.listeners import EndPoint
from kafka_ref.server.broker_lifecycle import (
    SUPPORTED_FEATURES,
    BrokerLifecycleManager,
    BrokerState,
    HeartbeatReply,
    next_state,
    registration_body,
)
from kafka_ref.server.node_to_controller import ControllerUnavailableError
from kafka_ref.tools.storage import meta_properties
from tests.unit.metadata.controller.harness import CLUSTER_ID, Harness

pytestmark = pytest.mark.timeout(30)

S = BrokerState


@pytest.mark.spec("KBROKER-9")
def test_the_states_follow_the_controllers_answers():
    caught_up = HeartbeatReply(is_caught_up=True, is_fenced=True, should_shut_down=False)
    unfenced = HeartbeatReply(is_caught_up=True, is_fenced=False, should_shut_down=False)
    behind = HeartbeatReply(is_caught_up=False, is_fenced=True, should_shut_down=False)
    go = HeartbeatReply(is_caught_up=True, is_fenced=True, should_shut_down=True)
    assert next_state(S.STARTING, behind) == S.STARTING
    assert next_state(S.STARTING, caught_up) == S.RECOVERY
    assert next_state(S.STARTING, unfenced) == S.RECOVERY  # one step at a time, as Kafka
    assert next_state(S.RECOVERY, caught_up) == S.RECOVERY  # still fenced
    assert next_state(S.RECOVERY, unfenced) == S.RUNNING
    assert next_state(S.RUNNING, caught_up) == S.RUNNING
    assert next_state(S.PENDING_CONTROLLED_SHUTDOWN, unfenced) == S.PENDING_CONTROLLED_SHUTDOWN
    assert next_state(S.PENDING_CONTROLLED_SHUTDOWN, go) == S.SHUTTING_DOWN


class Controller:
    """The active controller behind a channel: a QuorumController whose records commit at
    once, answering BrokerRegistration and BrokerHeartbeat as Kafka's ControllerApis does."""

    def __init__(self, harness: Harness) -> None:
        self.h = harness
        self.requests: list[tuple[int, object]] = []
        self.down = False  # no controller reachable: requests fail

    async def request(self, api_key: int, version: int, body):
        await asyncio.sleep(0)
        self.requests.append((api_key, body))
        if self.down:
            raise ControllerUnavailableError("no controller")
        now = self.h.now
        if api_key == ApiKey.BROKER_REGISTRATION:
            request = cc.BrokerRegistrationRequest(
                body.broker_id,
                body.cluster_id,
                body.incarnation_id,
                tuple(
                    Endpoint(e.name, e.host, e.port, e.security_protocol) for e in body.listeners
                ),
                {f.name: (f.min_supported_version, f.max_supported_version) for f in body.features},
                body.rack,
                log_dirs=tuple(body.log_dirs),
            )
            reply = self.h.commit(self.h.qc.register_broker(request, now))
            return BrokerRegistrationResponse(
                error_code=reply.error.code, broker_epoch=reply.broker_epoch
            )
        assert api_key == ApiKey.BROKER_HEARTBEAT
        request = cc.BrokerHeartbeatRequest(
            body.broker_id,
            body.broker_epoch,
            body.current_metadata_offset,
            body.want_fence,
            body.want_shut_down,
            tuple(body.offline_log_dirs),
        )
        reply = self.h.commit(self.h.qc.broker_heartbeat(request, now))
        return BrokerHeartbeatResponse(
            error_code=reply.error.code,
            is_caught_up=reply.is_caught_up,
            is_fenced=reply.is_fenced,
            should_shut_down=reply.should_shut_down,
        )

    def heartbeats(self) -> list:
        return [b for k, b in self.requests if k == ApiKey.BROKER_HEARTBEAT]


ENDPOINTS = [EndPoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092)]


def manager(controller: Controller, broker_id: int, applied: list[int], ready: list[bool]):
    return BrokerLifecycleManager(
        broker_id,
        CLUSTER_ID,
        uuid.uuid4(),
        controller,
        lambda: applied[0],
        lambda: ready[0],
        heartbeat_interval_ms=20,
    )


@pytest.mark.spec("KBROKER-7")
def test_the_registration_names_the_incarnation_listeners_and_features():
    incarnation = uuid.uuid4()
    body = registration_body(3, CLUSTER_ID, incarnation, ENDPOINTS, "rack-a")
    assert (body.broker_id, body.cluster_id, body.incarnation_id) == (3, CLUSTER_ID, incarnation)
    assert [(x.name, x.host, x.port, x.security_protocol) for x in body.listeners] == [
        ("PLAINTEXT", "127.0.0.1", 9092, 0)
    ]
    assert body.rack == "rack-a"
    features = {f.name: (f.min_supported_version, f.max_supported_version) for f in body.features}
    assert features == dict(SUPPORTED_FEATURES)
    # a cluster formatted with Kafka 4.4's defaults takes it
    h = Harness(brokers=0)
    reply = asyncio.run(Controller(h).request(ApiKey.BROKER_REGISTRATION, 4, body))
    assert reply.error_code == ErrorCode.NO_ERROR and reply.broker_epoch >= 0
    assert h.image.brokers[3].fenced and h.image.brokers[3].incarnation_id == incarnation


@pytest.mark.spec("KBROKER-7", "KBROKER-9")
def test_a_broker_is_unfenced_once_caught_up_and_ready_and_heartbeats_its_offset():
    h = Harness(brokers=0)
    controller = Controller(h)
    applied, ready = [-1], [False]

    async def scenario() -> None:
        lifecycle = manager(controller, 1, applied, ready)
        controller.down = True  # no controller yet: the registration is tried again
        lifecycle.start(registration_body(1, CLUSTER_ID, lifecycle.incarnation_id, ENDPOINTS, None))
        await asyncio.sleep(0.05)
        assert lifecycle.broker_epoch == -1
        controller.down = False
        while lifecycle.broker_epoch < 0:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        # registered, not caught up: fenced, STARTING
        assert lifecycle.state == S.STARTING and h.image.brokers[1].fenced
        assert controller.heartbeats()[-1].want_fence
        applied[0] = h.qc.next_offset - 1  # the image has caught up...
        await asyncio.sleep(0.1)
        assert lifecycle.state == S.RECOVERY and h.image.brokers[1].fenced  # ...not ready yet
        ready[0] = True
        await asyncio.wait_for(lifecycle.unfenced.wait(), 5)
        assert lifecycle.state == S.RUNNING and not h.image.brokers[1].fenced
        last = controller.heartbeats()[-1]
        assert (last.broker_epoch, last.want_fence) == (lifecycle.broker_epoch, False)
        assert last.current_metadata_offset == applied[0]
        await lifecycle.close()

    asyncio.run(scenario())


@pytest.mark.spec("KBROKER-13")
def test_a_controlled_shutdown_waits_until_the_controller_moved_the_leaderships():
    h = Harness(brokers=3)  # brokers 0, 1 and 2, unfenced
    controller = Controller(h)
    applied, ready = [-1], [True]

    async def others() -> None:
        """Brokers 0, 1, 2 and the new one's image keep up with the log."""
        while True:
            for broker_id in (0, 1, 2):
                h.heartbeat(broker_id)
            applied[0] = h.qc.next_offset - 1
            await asyncio.sleep(0.01)

    async def scenario() -> None:
        keeping_up = asyncio.get_running_loop().create_task(others())
        lifecycle = manager(controller, 3, applied, ready)
        lifecycle.start(registration_body(3, CLUSTER_ID, lifecycle.incarnation_id, ENDPOINTS, None))
        await asyncio.wait_for(lifecycle.unfenced.wait(), 5)
        h.create_assigned("t", {0: [3, 1, 2]})  # broker 3 leads
        assert h.partition("t").leader == 3
        assert await lifecycle.controlled_shutdown(timeout_s=5)
        assert h.partition("t").leader != 3 and 3 not in h.partition("t").isr
        wanted = [b for b in controller.heartbeats() if b.want_shut_down]
        assert wanted and lifecycle.state == S.SHUTTING_DOWN
        assert h.image.brokers[3].fenced  # let go: fenced, its leaderships elsewhere
        keeping_up.cancel()
        await lifecycle.close()

    asyncio.run(scenario())


@pytest.mark.spec("KBROKER-13")
def test_a_controlled_shutdown_gives_up_after_its_timeout():
    h = Harness(brokers=0)
    controller = Controller(h)

    async def scenario() -> None:
        lifecycle = manager(controller, 1, [h.qc.next_offset], [True])
        lifecycle.start(registration_body(1, CLUSTER_ID, lifecycle.incarnation_id, ENDPOINTS, None))
        while lifecycle.broker_epoch < 0:
            await asyncio.sleep(0.01)
        controller.down = True  # the controllers are gone
        assert not await lifecycle.controlled_shutdown(timeout_s=0.2)
        await lifecycle.close()

    asyncio.run(scenario())


@pytest.mark.spec("KBROKER-21")
def test_a_failed_directory_is_named_by_a_heartbeat_sent_at_once(tmp_path):
    # the directory ids come from meta.properties; one formatted without gets one written
    paths = [tmp_path / "a.properties", tmp_path / "b.properties"]
    paths[0].write_text(meta_properties(CLUSTER_ID, 1))
    paths[1].write_text(f"node.id=1\nversion=1\ncluster.id={CLUSTER_ID}\n")
    dirs = [ensure_directory_id(str(p)) for p in paths]
    assert dirs == [ensure_directory_id(str(p)) for p in paths]  # read back the same
    assert len(set(dirs)) == 2 and not any(directory_id.reserved(d) for d in dirs)
    assert "directory.id=" in paths[1].read_text()
    h = Harness(brokers=2)
    controller = Controller(h)
    offline: list = []

    async def scenario() -> None:
        lifecycle = BrokerLifecycleManager(
            2,
            CLUSTER_ID,
            uuid.uuid4(),
            controller,
            lambda: h.qc.next_offset - 1,
            lambda: True,
            heartbeat_interval_ms=60_000,  # no heartbeat but the ones asked for
            offline_dirs=lambda: offline,
        )
        incarnation = lifecycle.incarnation_id
        registration = registration_body(2, CLUSTER_ID, incarnation, ENDPOINTS, None, log_dirs=dirs)
        lifecycle.start(registration)
        while lifecycle.broker_epoch < 0:
            await asyncio.sleep(0.01)
        lifecycle.wake()  # caught up
        await asyncio.wait_for(lifecycle.unfenced.wait(), 5)
        assert h.image.brokers[2].directories == tuple(dirs)
        h.create_assigned("t", {0: [2, 0, 1]})
        topic_id = h.image.topic_by_name("t").id
        h.commit(
            h.qc.assign_replicas_to_dirs(2, lifecycle.broker_epoch, {dirs[0]: {topic_id: [0]}})
        )
        sent = len(controller.heartbeats())
        offline.append(dirs[0])
        lifecycle.propagate_directory_failure(dirs[0])
        while len(controller.heartbeats()) == sent:
            await asyncio.sleep(0.01)  # at once, not a minute later
        assert controller.heartbeats()[-1].offline_log_dirs == [dirs[0]]
        p = h.partition("t")
        assert p.leader != 2 and 2 not in p.isr and not h.image.brokers[2].fenced
        assert h.image.brokers[2].directories == (dirs[1],)
        await lifecycle.close()

    asyncio.run(scenario())
