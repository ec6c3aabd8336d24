"""Observers: nodes outside the voter set that follow the log without a say in it (KIP-595's
observers, the brokers of a KRaft cluster).

One observer at a time first: it looks for the leader through a bootstrap server, follows
it, goes back to a bootstrap server when its leader falls silent, and never votes nor
stands for election (RAFT-18). Then the leader's side: it serves observers, describes them,
forgets the silent ones, and counts them neither in the high watermark nor in its check of
the quorum (RAFT-19). Last, observers in the simulation: they hold and apply what the
voters committed, and follow a new leader after a failover.
"""

from __future__ import annotations

import uuid

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.raft.control_records import data_batch
from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.epoch_state import UnattachedState
from kafka_ref.raft.follower_state import FollowerState
from kafka_ref.raft.leader_state import OBSERVER_SESSION_TIMEOUT_MS, LeaderState
from kafka_ref.raft.listener import CommittedBatch, LeaderAndEpoch
from kafka_ref.raft.messages import FetchRequest, FetchResponse, VoteRequest
from kafka_ref.sim.raft_cluster import SIM_QUORUM_CONFIG, RaftSimConfig, RaftSimulation
from tests.raft.voters import CONFIG, Voter


class Application:
    """A listener that keeps what it is told."""

    def __init__(self) -> None:
        self.records: list[tuple[int, bytes | None]] = []
        self.leaders: list[LeaderAndEpoch] = []

    def handle_commit(self, batch: CommittedBatch) -> None:
        self.records.extend(batch.records)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leaders.append(leader)


def fetches(node: Voter) -> list[tuple[int, FetchRequest]]:
    return [(dst, m) for dst, m in node.sent if isinstance(m, FetchRequest)]


def answer(node: Voter, source: int, now_ms: int, **fields) -> None:
    """Answer the one fetch in flight, as `source`."""
    [(_, (request, _))] = node.client._in_flight.items()
    response = FetchResponse(correlation_id=request.correlation_id, **fields)
    node.client.handle(source, response, now_ms)


# ---------------------------------------------------------------------- one observer


@pytest.mark.spec("RAFT-18")
def test_an_observer_looks_for_the_leader_and_never_stands_for_election(tmp_path):
    observer = Voter(tmp_path, local_id=3)  # voters 0, 1, 2
    client = observer.client
    assert not client.quorum.is_voter
    assert isinstance(client.state, UnattachedState) and client.state.deadline_ms() is None
    for now in range(0, 10_000, 10):  # fifty election timeouts, nobody answering
        client.poll(now)
        assert len(client._in_flight) <= 1  # one fetch at a time
    assert {type(m) for _, m in observer.sent} == {FetchRequest}  # no pre-vote, no vote
    assert {dst for dst, _ in observer.sent} == {0, 1, 2}  # bootstrap servers drawn at random
    assert all(m.replica_id == 3 for _, m in observer.sent)
    assert isinstance(client.state, UnattachedState) and client.epoch == 0


@pytest.mark.spec("RAFT-18")
def test_an_answer_naming_the_leader_makes_the_observer_its_follower(tmp_path):
    observer = Voter(tmp_path, local_id=7)
    application = Application()
    observer.client.register(application)
    observer.client.poll(0)
    [(asked, fetch)] = fetches(observer)
    assert fetch.current_leader_epoch == 0
    answer(
        observer, asked, 5, error_code=ErrorCode.FENCED_LEADER_EPOCH, leader_id=1, leader_epoch=4
    )
    state = observer.client.state
    assert isinstance(state, FollowerState) and (state.epoch, state.leader_id) == (4, 1)
    [_, (dst, fetch)] = fetches(observer)  # its next fetch, sent at once, to the leader
    assert (dst, fetch.current_leader_epoch, fetch.fetch_offset) == (1, 4, 0)
    batch = data_batch([b"a", b"b"], 4, 0)
    answer(
        observer,
        1,
        6,
        error_code=ErrorCode.NO_ERROR,
        leader_id=1,
        leader_epoch=4,
        high_watermark=2,
        records=batch,
    )
    assert (observer.log.end_offset, observer.client.high_watermark) == (2, 2)
    assert application.records == [(0, b"a"), (1, b"b")]  # its application applies them
    assert application.leaders == [LeaderAndEpoch(NOT_SET, 0), LeaderAndEpoch(1, 4)]


@pytest.mark.spec("RAFT-18")
def test_an_observer_whose_leader_is_silent_asks_a_bootstrap_server(tmp_path):
    observer = Voter(tmp_path, local_id=3, bootstrap=(0, 2))
    observer.client._maybe_transition(1, 4, 0)  # it follows 1 in epoch 4
    now = 0
    while now < CONFIG.fetch_timeout_ms:  # 1 never answers
        observer.client.poll(now)
        now += 10
    assert {dst for dst, _ in fetches(observer)} == {1}
    assert isinstance(observer.client.state, FollowerState)  # it starts no election
    observer.sent.clear()
    while not fetches(observer):
        observer.client.poll(now)
        now += 10
    [(dst, _)] = fetches(observer)
    assert dst in (0, 2)  # not the silent leader
    answer(
        observer, dst, now, error_code=ErrorCode.FENCED_LEADER_EPOCH, leader_id=2, leader_epoch=5
    )
    state = observer.client.state
    assert isinstance(state, FollowerState) and (state.epoch, state.leader_id) == (5, 2)


@pytest.mark.spec("RAFT-18")
def test_an_observer_grants_no_vote_but_learns_the_epoch(tmp_path):
    observer = Voter(tmp_path, local_id=3)
    for pre_vote in (True, False):
        request = VoteRequest("", 3, 5, 1, -1, 0, pre_vote, correlation_id=1)
        response = observer.ask(1, request)
        assert not response.vote_granted and response.error_code == ErrorCode.NO_ERROR
    assert observer.client.epoch == 5  # the real request's later epoch is adopted (RAFT-2)
    assert observer.client.state.voted_id == NOT_SET
    assert observer.store.read_election_state().voted_id == NOT_SET


# ---------------------------------------------------------------------- the leader


def leader_of(voters=(0, 1, 2)) -> LeaderState:
    return LeaderState(7, voters, 0, 0, voters, now_ms=0, check_quorum_timeout_ms=300)


@pytest.mark.spec("RAFT-19")
def test_observers_count_neither_in_the_high_watermark_nor_in_the_check_of_the_quorum():
    leader = leader_of()
    leader.update_local_state(10)
    directory = uuid.uuid4()
    leader.update_replica_state(3, 10, 200, directory)
    leader.update_replica_state(4, 10, 200)
    assert leader.maybe_update_high_watermark(0) == 0  # two observers: no majority of voters
    assert leader.check_quorum_deadline_ms == 300  # nor a quorum that still fetches
    assert 3 not in leader.acknowledged
    leader.update_replica_state(1, 10, 250)
    assert leader.maybe_update_high_watermark(0) == 10
    assert leader.check_quorum_deadline_ms == 550
    observer = leader.observer_states(250)[3]
    assert (observer.end_offset, observer.last_fetch_ms, observer.last_caught_up_ms) == (
        10,
        200,
        200,
    )
    assert observer.directory_id == directory
    assert set(leader.replicas) == {0, 1, 2}


@pytest.mark.spec("RAFT-19")
def test_the_leader_forgets_a_silent_observer_and_tracks_no_anonymous_fetcher():
    leader = leader_of()
    leader.update_local_state(1)
    leader.update_replica_state(3, 1, 1_000)
    leader.update_replica_state(4, 1, 2_000)
    leader.update_replica_state(-1, 1, 2_000)  # a fetcher with no node id
    assert set(leader.observer_states(1_000 + OBSERVER_SESSION_TIMEOUT_MS - 1)) == {3, 4}
    assert set(leader.observer_states(1_000 + OBSERVER_SESSION_TIMEOUT_MS)) == {4}


@pytest.mark.spec("RAFT-19")
def test_the_leader_serves_an_observer_the_records_it_serves_a_voter(tmp_path):
    voter = Voter(tmp_path / "leader", local_id=0, voters=(0,))
    voter.client.poll(500)  # a lone voter leads at once
    voter.client.append([b"x"], 500)
    hw = voter.client.high_watermark
    directory = uuid.uuid4()
    request = FetchRequest(
        "", 5, voter.client.epoch, 0, -1, 1 << 20, correlation_id=3, replica_directory_id=directory
    )
    response = voter.ask(5, request, 600)
    assert response.error_code == ErrorCode.NO_ERROR and response.records
    assert voter.client.high_watermark == hw  # fetching at 0 lowered nothing, raised nothing
    state = voter.client.state
    assert isinstance(state, LeaderState)
    assert state.observers[5].end_offset == 0 and state.observers[5].directory_id == directory


# ---------------------------------------------------------------------- in the simulation


@pytest.mark.spec("RAFT-18", "RAFT-12", "RAFT-17")
@pytest.mark.parametrize("seed", range(4))
def test_observers_hold_and_apply_what_the_voters_committed(tmp_path, seed):
    config = RaftSimConfig(drop_rate=0.05, duplicate_rate=0.05, reorder=True)
    sim = RaftSimulation(tmp_path, voters=3, observers=2, seed=seed, config=config)
    sim.run(2_000)
    sim.settle(5_000)
    leader = sim.nodes[sim.leader()]
    for observer in sim.observer_ids:
        node = sim.nodes[observer]
        assert isinstance(node.client.state, FollowerState)
        hw = node.client.high_watermark
        assert hw > 10 and sim.entries(observer)[:hw] == sim.entries(leader.node_id)[:hw]
        applied = node.application.applied
        assert applied and applied == leader.application.applied[: len(applied)]


@pytest.mark.spec("RAFT-18")
@pytest.mark.parametrize("seed", range(6))
def test_observers_follow_the_new_leader_after_a_failover(tmp_path, seed):
    sim = RaftSimulation(tmp_path, voters=3, observers=2, seed=seed)
    sim.run(1_000)
    old = sim.leader()
    epoch = sim.nodes[old].client.epoch
    sim.crash(old)
    # the voters elect within a few timeouts; each observer hears of it at its next
    # question to a bootstrap server, one fetch timeout after its leader fell silent
    bound = 2 * SIM_QUORUM_CONFIG.fetch_timeout_ms + 4 * SIM_QUORUM_CONFIG.election_timeout_ms
    for _ in range(0, bound, 10):
        sim.run(10)
        leader = sim.leader()
        if leader is None or sim.nodes[leader].client.epoch == epoch:
            continue
        states = [sim.nodes[i].client.state for i in sim.observer_ids]
        if all(s.leader_id == leader and s.epoch > epoch for s in states):
            return
    raise AssertionError(f"observers still follow the dead leader\n{sim.describe()}")
