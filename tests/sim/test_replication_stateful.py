"""Hypothesis hunts for lost acknowledged writes and diverging replicas in the simulator.

One `RuleBasedStateMachine` drives a 3-broker `SimCluster` (RF 3, acks=1 and acks=all
producers) through random steps: produce, let time pass, kill -9 a broker, start it
again (or both at once), shut one down cleanly, cut one off from the others, heal. Brokers
are picked by role (leader, next leader, other), which is where the failures hide. After
every step two invariants are checked:

* **no acknowledged write is lost** (KIP-101's failure): every acks=all write is at its
  offset in the log of the current leader;
* **Log Matching** (Raft's property): no two live replicas hold different records at an
  offset below both their high watermarks.

The same machine runs under both truncation rules. With `high-watermark` hypothesis must
find a counterexample (KIP-101 Scenario 1 in some disguise: a follower restarts, cuts its
log to a stale HW, and is elected) and the test prints it. With `leader-epoch` no
counterexample exists.

Faults here are process crashes (kill -9), which keep what reached the page cache. A power
loss that drops unflushed data on several replicas can lose an acknowledged write under
any truncation rule, since Kafka acknowledges before fsync (KIP-966); the
explicit examples in test_kip101.py cover power loss.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kafka_ref.sim import SimCluster

BROKERS = range(3)
WHO = st.sampled_from(["leader", "next", "other"])


def make_machine(truncation: str) -> type[RuleBasedStateMachine]:
    class ReplicationMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.cluster = SimCluster(brokers=3, seed=0, truncation=truncation)
            self.values = itertools.count()

        def teardown(self) -> None:
            self.cluster.close()

        def _up(self, broker: int) -> bool:
            return self.cluster.brokers[broker].alive

        @rule(n=st.integers(1, 3), acks=st.sampled_from(["all", 1]))
        def produce(self, n: int, acks) -> None:
            for _ in range(n):
                self.cluster.produce(b"v%d" % next(self.values), acks=acks)

        @rule(ms=st.sampled_from([5, 30, 100, 400, 1_000]))
        def run(self, ms: int) -> None:
            self.cluster.run(ms)

        def _pick(self, who: str, *, alive: bool = True) -> int | None:
            """A broker by its role, so that the search hits leaders and would-be leaders
            as often as it matters: the leader, the next leader (the first other replica
            in assignment order), or the other one."""
            leader = self.cluster.leader()
            others = [b for b in BROKERS if b != leader]
            choice = {"leader": leader, "next": others[0], "other": others[-1]}[who]
            if choice is None or self._up(choice) != alive:
                return None
            return choice

        @rule(who=WHO)
        def crash(self, who: str) -> None:
            if (broker := self._pick(who)) is not None:
                self.cluster.crash(broker)

        @rule(who=WHO)
        def restart(self, who: str) -> None:
            """kill -9 and start again at once: back before the session expires."""
            if (broker := self._pick(who)) is not None:
                self.cluster.restart(broker)

        @rule(broker=st.sampled_from(BROKERS))
        def start(self, broker: int) -> None:
            if not self._up(broker):
                self.cluster.start(broker)

        @rule(who=WHO)
        def stop(self, who: str) -> None:
            if (broker := self._pick(who)) is not None:
                self.cluster.stop(broker)

        @rule(who=WHO)
        def isolate(self, who: str) -> None:
            if (broker := self._pick(who)) is not None:
                self.cluster.isolate(broker)

        @precondition(lambda self: bool(self.cluster.network._cut))
        @rule()
        def heal(self) -> None:
            self.cluster.heal()

        @invariant()
        def no_acknowledged_write_is_lost(self) -> None:
            lost = self.cluster.lost_writes()
            assert not lost, (
                f"acked writes lost: {[(w.value, w.offset) for w in lost]}\n"
                + self.cluster.describe()
                + "\n"
                + "\n".join(self.cluster.history[-40:])
            )

        @invariant()
        def replicas_agree_below_their_high_watermarks(self) -> None:
            found = self.cluster.divergence()
            assert not found, f"divergence: {found}\n" + self.cluster.describe()

    ReplicationMachine.__name__ = f"ReplicationMachine_{truncation.replace('-', '_')}"
    return ReplicationMachine


# The hunt is derandomized (the same search on every run) and does not shrink: shrinking a
# 30-step simulation can take minutes, and the history printed with the failure already
# tells the story.
HUNT = settings(
    max_examples=400,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.spec("TRUNC-2", "TRUNC-1")
def test_hypothesis_finds_data_loss_with_high_watermark_truncation(capsys):
    machine = make_machine("high-watermark")
    with pytest.raises(AssertionError) as failure:
        run_state_machine_as_test(machine, settings=HUNT)
    message = str(failure.value)
    assert "acked writes lost" in message or "divergence" in message
    with capsys.disabled():
        print("\nhigh-watermark truncation, counterexample found by hypothesis:\n" + message)


@pytest.mark.spec("TRUNC-5", "TRUNC-6", "REPL-3", "ISR-2", "ISR-3", "REPL-4")
def test_leader_epoch_truncation_loses_no_acked_write_and_never_diverges():
    run_state_machine_as_test(
        make_machine("leader-epoch"), settings=settings(stateful_step_count=30)
    )
