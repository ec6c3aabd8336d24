"""The quorum replaces a dead leader promptly: the failover the controller quorum runs on.

When the leader of three voters dies, both followers reach their fetch timeout at about the
same moment, and each asks the other for a pre-vote while the other still believes in the
dead leader. A prospective voter that took the refusal's "the leader is 2" as news, and
went back to following the dead leader, would repeat this in step with the other for many
rounds (kafka-ref's first controller quorum on sockets did, taking up to 20 s). A prospective
voter keeps the leader it knew, waits out its own random election timeout, and one of the two
wins the next round (RAFT-4).
"""

from __future__ import annotations

import pytest

from kafka_ref.sim.raft_cluster import SIM_QUORUM_CONFIG, RaftSimulation

# a follower notices after the fetch timeout, then one pre-vote and one vote round, each
# within a random election timeout of at most 2 x election_timeout_ms
BOUND_MS = SIM_QUORUM_CONFIG.fetch_timeout_ms + 4 * SIM_QUORUM_CONFIG.election_timeout_ms


@pytest.mark.spec("RAFT-4")
@pytest.mark.parametrize("seed", range(12))
def test_a_dead_leader_is_replaced_within_a_few_timeouts(tmp_path, seed):
    sim = RaftSimulation(tmp_path, voters=3, seed=seed)
    sim.run(1_000)
    old = sim.leader()
    assert old is not None, sim.describe()
    epoch = sim.nodes[old].client.epoch
    sim.crash(old)
    waited = 0
    while waited < BOUND_MS:
        sim.run(10)
        waited += 10
        leader = sim.leader()
        if leader is not None and sim.nodes[leader].client.epoch > epoch:
            return
    raise AssertionError(f"no new leader {BOUND_MS} ms after the leader died\n{sim.describe()}")
