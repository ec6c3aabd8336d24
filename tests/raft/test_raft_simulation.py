"""Raft's properties under every schedule hypothesis draws, in the deterministic simulation.

Each example is a world (quorum size, observers, seed, message loss, duplication,
reordering, crash rate) and a schedule of operator steps (tests/raft/schedules.py). The
checker watches every event for election safety, log matching, leader completeness and
state machine safety (RAFT-9..RAFT-12), on observers as on voters, and for an observer that
votes or stands for election (RAFT-18), and must never fire; after the schedule, `settle`
heals everything and a leader must commit a new entry on every voter, and every observer
must have it, within the bound (RAFT-13).

The search is derandomized: CI runs the same examples every time, a modest number. The long
form (`make test-long`, KAFKA_REF_LONG=1) runs many more.
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.sim.raft_cluster import RaftSimulation
from tests.conftest import campaign
from tests.raft.schedules import World, play, schedules, worlds

SEARCH = settings(
    max_examples=campaign(60, 5_000),
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.spec("RAFT-9", "RAFT-10")
@SEARCH
@given(world=worlds(), schedule=schedules())
def test_no_schedule_breaks_a_safety_property(world, schedule):
    with tempfile.TemporaryDirectory() as directory:
        play(directory, world, schedule)


@pytest.mark.spec("RAFT-11", "RAFT-12", "RAFT-18")
@SEARCH
@given(world=worlds(voters=(3, 5)), schedule=schedules())
def test_committed_entries_survive_every_schedule(world, schedule):
    """Leader completeness and state machine safety, and once the quorum settled every voter
    and every observer holds the same entries below the high watermark they all reached."""
    with tempfile.TemporaryDirectory() as directory:
        sim = play(directory, world, schedule)
        hw = min(node.client.high_watermark for node in sim.nodes.values())
        start = max(node.log.start_offset for node in sim.nodes.values())  # cut logs
        committed = [e for e in sim.entries(sim.leader()) if start <= e[0] < hw]
        assert len(committed) == hw - start and hw > 0
        for i in sim.nodes:
            assert [e for e in sim.entries(i) if start <= e[0] < hw] == committed
        # below the logs' start, the applications' states agree (rebuilt from snapshots)
        states = [[r for r in n.application.applied if r[0] < hw] for n in sim.nodes.values()]
        assert all(state == states[0] for state in states)


@pytest.mark.spec("RAFT-13")
@SEARCH
@given(world=worlds(), schedule=schedules())
def test_a_healed_quorum_elects_a_leader_and_commits(world, schedule):
    with tempfile.TemporaryDirectory() as directory:
        sim = play(directory, world, schedule)  # settle raises if no progress in the bound
        leaders = [i for i in sim.voter_ids if isinstance(sim.nodes[i].client.state, LeaderState)]
        assert leaders == [sim.leader()]


@pytest.mark.spec("RAFT-13")
@pytest.mark.parametrize("seed", range(12))
def test_settle_after_a_faulty_run(tmp_path, seed):
    world = World(3, seed, drop_rate=0.05, duplicate_rate=0.05, reorder=True, crash_rate=0.01)
    sim = world.simulation(tmp_path)
    sim.run(3_000)
    assert sim.settle(5_000) < 5_000


@pytest.mark.spec("RAFT-13")
def test_settle_fails_when_no_majority_can_be_reached(tmp_path):
    """The liveness check can fail: with two of three voters never started, nothing commits."""
    sim = RaftSimulation(tmp_path, voters=3, seed=1)
    sim.run(500)
    sim.crash(sim.leader())
    sim.crash(sim.followers()[0])
    sim.start = lambda node_id: None  # settle cannot bring them back
    with pytest.raises(AssertionError, match="liveness"):
        sim.settle(2_000)


def history(directory, seed: int) -> list[str]:
    world = World(5, seed, drop_rate=0.1, duplicate_rate=0.1, reorder=True, crash_rate=0.02)
    sim = world.simulation(directory)
    sim.run(2_000)
    sim.isolate(sim.leader())
    sim.run(1_000)
    sim.settle(5_000)
    return sim.history


@pytest.mark.spec("SIM-1")
def test_the_raft_simulation_replays_a_seed(tmp_path):
    assert history(tmp_path / "a", 3) == history(tmp_path / "b", 3)
    assert history(tmp_path / "c", 3) != history(tmp_path / "d", 4)
