"""What hypothesis draws to drive a `RaftSimulation`, and how a drawn schedule is played.

A **world** is the quorum's size, the seed and the network's and disks' faults: message
loss, duplication, reordering, and crashes that strike a node right after it handled a
message (its unflushed data lost). A **schedule** is a list of steps an operator might
take meanwhile: let time pass, crash a node (it stays down until started), restart one,
start one that is down, cut one off from the others, heal the network, make the leader
resign, append a batch at the leader. Nodes are picked by role (the leader, a follower, any
node), where the interesting histories are.

`play` runs the schedule with the checker watching every event (RAFT-9..RAFT-12) and the
logs compared after every step, then `settle`s: heal, start every node, and a leader must
commit a new entry on every voter within the bound (RAFT-13). A world and a schedule replay
the same history (SIM-1), so a counterexample hypothesis prints can be run again as is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypothesis import strategies as st

from kafka_ref.sim.raft_cluster import RaftSimConfig, RaftSimulation

SETTLE_BOUND_MS = 5_000  # after healing, an election and a commit take well under a second


@dataclass(frozen=True)
class World:
    voters: int
    seed: int
    drop_rate: float
    duplicate_rate: float
    reorder: bool
    crash_rate: float

    def simulation(self, directory: str | os.PathLike) -> RaftSimulation:
        config = RaftSimConfig(
            drop_rate=self.drop_rate,
            duplicate_rate=self.duplicate_rate,
            reorder=self.reorder,
            crash_rate=self.crash_rate,
        )
        return RaftSimulation(directory, voters=self.voters, seed=self.seed, config=config)


def worlds(
    voters: tuple[int, ...] = (1, 3, 3, 5),
    crash_rates: tuple[float, ...] = (0.0, 0.005, 0.02, 0.05),
) -> st.SearchStrategy[World]:
    """Quorums of `voters` voters whose nodes crash at one of `crash_rates` per message."""
    return st.builds(
        World,
        voters=st.sampled_from(voters),
        seed=st.integers(0, 2**16),
        drop_rate=st.sampled_from([0.0, 0.05, 0.2]),
        duplicate_rate=st.sampled_from([0.0, 0.05, 0.2]),
        reorder=st.booleans(),
        crash_rate=st.sampled_from(crash_rates),
    )


ROLE = st.sampled_from(["leader", "follower", "any"])
INDEX = st.integers(0, 4)

Step = tuple

RUN = st.tuples(st.just("run"), st.sampled_from([10, 50, 200, 500, 1_500]))
ISOLATE = st.tuples(st.just("isolate"), ROLE, INDEX)
HEAL = st.tuples(st.just("heal"))
APPEND = st.tuples(st.just("append"), st.integers(1, 5))
STEPS = st.one_of(
    RUN,
    st.tuples(st.just("crash"), ROLE, INDEX),
    st.tuples(st.just("restart"), ROLE, INDEX),
    st.tuples(st.just("start"), INDEX),
    ISOLATE,
    HEAL,
    st.tuples(st.just("resign")),
    APPEND,
)


def schedules(max_size: int = 15) -> st.SearchStrategy[list[Step]]:
    """Any steps."""
    return st.lists(STEPS, max_size=max_size)


def partition_schedules(max_size: int = 5) -> st.SearchStrategy[list[Step]]:
    """Episodes of partitions: run, cut a node off, run, heal; no crash by the schedule."""
    episode = st.tuples(RUN, ISOLATE, RUN, APPEND).map(lambda steps: [*steps, ("heal",)])
    return st.lists(episode, min_size=1, max_size=max_size).map(
        lambda episodes: [step for steps in episodes for step in steps]
    )


def pick(sim: RaftSimulation, role: str, index: int) -> int | None:
    """A node that is up, by role; None when there is none of that role."""
    if role == "leader":
        return sim.leader()
    up = [i for i in sim.voter_ids if i not in sim.down()]
    choices = sim.followers() if role == "follower" else up
    return choices[index % len(choices)] if choices else None


def play_step(sim: RaftSimulation, step: Step) -> None:
    action, *args = step
    if action == "run":
        sim.run(args[0])
    elif action == "crash":
        sim.crash(pick(sim, *args))
    elif action == "restart":
        sim.restart(pick(sim, *args))
    elif action == "start":
        down = sim.down()
        if down:
            sim.start(down[args[0] % len(down)])
    elif action == "isolate":
        sim.isolate(pick(sim, *args))
    elif action == "heal":
        sim.heal()
    elif action == "resign":
        sim.resign(sim.leader())
    elif action == "append":
        sim.append(args[0])
    sim.check()


def play(directory: str | os.PathLike, world: World, schedule: list[Step]) -> RaftSimulation:
    """Run `schedule` in `world`, then settle; raises what the checker or liveness finds."""
    sim = world.simulation(directory)
    for step in schedule:
        play_step(sim, step)
    sim.settle(SETTLE_BOUND_MS)
    return sim
