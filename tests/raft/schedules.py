"""What hypothesis draws to drive a `RaftSimulation`, and how a drawn schedule is played.

A **world** is the quorum's size, how many observers follow it (RAFT-18), the seed and the
network's and disks' faults: message loss, duplication, reordering, and crashes that strike
a node right after it handled a message (its unflushed data lost). In most worlds the nodes
also write snapshots every few hundred bytes committed and cut their logs behind them at
once or soon (RAFT-21, RAFT-22), so that a node that was away, crashed or cut off must
catch up by FetchSnapshot (RAFT-23) and rebuild from it (RAFT-24). A **schedule** is a list
of steps an operator might take meanwhile: let time pass, crash a node (it stays down until
started), restart one, start one that is down, cut one off from the others, heal the
network, make the leader resign, append a batch at the leader. Nodes are picked by role
(the leader, a follower, an observer, any node), where the interesting histories are.

`play` runs the schedule with the checker watching every event (RAFT-9..RAFT-12, RAFT-18)
and the logs compared after every step, then `settle`s: heal, start every node, and a
leader must commit a new entry on every voter, and every observer must have it, within the
bound (RAFT-13). A world and a schedule replay
the same history (SIM-1), so a counterexample hypothesis prints can be run again as is.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from hypothesis import strategies as st

from kafka_ref.sim.raft_cluster import SIM_QUORUM_CONFIG, RaftSimConfig, RaftSimulation

SETTLE_BOUND_MS = 5_000  # after healing, an election and a commit take well under a second
SNAPSHOT_RETENTION_MS = 400  # a log whose first record is older is cut at its latest snapshot


@dataclass(frozen=True)
class World:
    voters: int
    seed: int
    drop_rate: float
    duplicate_rate: float
    reorder: bool
    crash_rate: float
    observers: int = 0
    snapshot_bytes: int | None = None  # committed bytes between snapshots; None: Kafka's
    retention_bytes: int = SIM_QUORUM_CONFIG.max_retention_bytes  # the log cut past this

    def simulation(self, directory: str | os.PathLike) -> RaftSimulation:
        quorum = SIM_QUORUM_CONFIG
        if self.snapshot_bytes is not None:
            quorum = dataclasses.replace(
                quorum,
                max_bytes_between_snapshots=self.snapshot_bytes,
                max_retention_bytes=self.retention_bytes,
                max_retention_ms=SNAPSHOT_RETENTION_MS,
            )
        config = RaftSimConfig(
            drop_rate=self.drop_rate,
            duplicate_rate=self.duplicate_rate,
            reorder=self.reorder,
            crash_rate=self.crash_rate,
            quorum=quorum,
        )
        return RaftSimulation(
            directory,
            voters=self.voters,
            observers=self.observers,
            seed=self.seed,
            config=config,
        )


def worlds(
    voters: tuple[int, ...] = (1, 3, 3, 5),
    crash_rates: tuple[float, ...] = (0.0, 0.005, 0.02, 0.05),
    observers: tuple[int, ...] = (0, 1, 2),
    snapshot_bytes: tuple[int | None, ...] = (None, 150, 600),
) -> st.SearchStrategy[World]:
    """Quorums of `voters` voters, followed by `observers` observers, whose nodes crash at
    one of `crash_rates` per message, and snapshot every `snapshot_bytes` committed."""
    return st.builds(
        World,
        voters=st.sampled_from(voters),
        observers=st.sampled_from(observers),
        seed=st.integers(0, 2**16),
        drop_rate=st.sampled_from([0.0, 0.05, 0.2]),
        duplicate_rate=st.sampled_from([0.0, 0.05, 0.2]),
        reorder=st.booleans(),
        crash_rate=st.sampled_from(crash_rates),
        snapshot_bytes=st.sampled_from(snapshot_bytes),
        retention_bytes=st.sampled_from([0, 1_500]),
    )


ROLE = st.sampled_from(["leader", "follower", "observer", "any"])
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
    up = [i for i in sim.nodes if i not in sim.down()]
    choices = {"follower": sim.followers(), "observer": sim.observers()}.get(role, up)
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
