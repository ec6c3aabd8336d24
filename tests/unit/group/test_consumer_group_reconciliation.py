"""Reconciliation under KIP-848, as properties: clients that join, leave, crash and revoke
slowly, against a real coordinator (spec/consumer_group.md, CGRP-5..CGRP-7).

Each client is modelled as Kafka's consumers behave: it owns the partitions it is using;
when an answer brings a new assignment it either applies it at once (revoking what is gone,
starting what is new) or later (a slow `onPartitionsRevoked`), and every heartbeat reports
what it owns. A crashed client owns nothing (it stopped) and the coordinator fences it when
its session expires. The properties are checked after every step, on the clients' side:

* no partition is owned by two live clients at once (revoke before assign);
* the epoch a member hears never goes back;
* once membership stops changing and every client applies its answers, the group is
  Stable: every member at the group epoch, owning exactly its target, all partitions owned.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.errors import ErrorCode
from kafka_ref.group.consumer_group import ConsumerGroupState, assignment, partitions_of
from kafka_ref.group.consumer_group_coordinator import TopicImage
from tests.unit.group.test_consumer_group import G, Harness

OK = ErrorCode.NO_ERROR
TOPICS = [TopicImage("t1", uuid.UUID(int=1), 7), TopicImage("t2", uuid.UUID(int=2), 3)]
SESSION_MS = 45_000


@dataclass
class Client:
    member_id: str
    topics: tuple[str, ...]
    epoch: int = -1  # -1: not in the group
    owned: set = field(default_factory=set)
    pending: set | None = None  # an assignment heard but not applied yet
    epochs: list[int] = field(default_factory=list)


class Simulation:
    def __init__(self, assignor: str):
        self.h = Harness(
            topics=TOPICS,
            group_consumer_assignors=(assignor, "uniform", "range"),
            group_consumer_session_timeout_ms=SESSION_MS,
        )
        self.clients: dict[str, Client] = {}

    def _answer(self, client: Client, result, apply_now: bool) -> None:
        if result.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            client.epoch, client.owned, client.pending = -1, set(), None  # lose all, rejoin
            return
        assert result.error == OK, result
        client.epochs.append(result.member_epoch)
        client.epoch = result.member_epoch
        if result.assignment is not None:
            client.pending = partitions_of(result.assignment)
        if apply_now:
            self.apply(client)

    def apply(self, client: Client) -> None:
        if client.pending is not None:
            client.owned, client.pending = client.pending, None

    def join(self, name: str, topics: tuple[str, ...]) -> None:
        client = self.clients.setdefault(name, Client(name, topics))
        if client.epoch >= 0:
            return
        result = self.h.join(name, topics=client.topics, rebalance_timeout_ms=10 * SESSION_MS)
        self._answer(client, result, apply_now=True)

    def heartbeat(self, name: str, apply_now: bool) -> None:
        client = self.clients.get(name)
        if client is None or client.epoch < 0:
            return
        owned = assignment((t, [p]) for t, p in client.owned)
        self._answer(client, self.h.heartbeat(name, client.epoch, owned=owned), apply_now)

    def leave(self, name: str) -> None:
        client = self.clients.get(name)
        if client is None or client.epoch < 0:
            return
        client.owned, client.pending = set(), None  # revokes everything, then leaves
        assert self.h.heartbeat(name, -1).error == OK
        client.epoch = -1

    def crash(self, name: str) -> None:
        """The client stops; the others keep heartbeating while its session runs out."""
        client = self.clients.pop(name, None)
        if client is None:
            return
        for _ in range(5):
            self.h.scheduler.advance(SESSION_MS // 4)
            for other in list(self.clients):
                self.heartbeat(other, apply_now=False)
        assert name not in self.h.group().members

    def check(self) -> None:
        owners: dict = {}
        for client in self.clients.values():
            for tp in client.owned:
                assert tp not in owners, f"{tp} owned by {owners[tp]} and {client.member_id}"
                owners[tp] = client.member_id
            assert client.epochs == sorted(client.epochs), client.epochs  # never back
        group = self.h.group()
        if group is not None:
            group.check_invariants()

    def converge(self) -> None:
        for client in list(self.clients.values()):
            self.join(client.member_id, client.topics)
        for _ in range(8):
            for name in list(self.clients):
                self.heartbeat(name, apply_now=True)
                self.check()
        group = self.h.group()
        assert group.state is ConsumerGroupState.STABLE, group
        every = set()
        for client in self.clients.values():
            member = group.members[client.member_id]
            assert member.member_epoch == group.group_epoch == client.epoch
            assert client.owned == partitions_of(member.assigned)
            assert member.assigned == group.target_assignment[client.member_id]
            every |= client.owned
        subscribed = {t for c in self.clients.values() for t in c.topics}
        assert every == {
            (t.topic_id, p) for t in TOPICS if t.name in subscribed for p in range(t.partitions)
        }


NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
SUBSCRIPTIONS = st.sampled_from([("t1",), ("t1", "t2"), ("t2",)])
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("join"), NAMES, SUBSCRIPTIONS),
        st.tuples(st.just("heartbeat"), NAMES, st.booleans()),
        st.tuples(st.just("heartbeat"), NAMES, st.booleans()),
        st.tuples(st.just("apply"), NAMES),
        st.tuples(st.just("leave"), NAMES),
        st.tuples(st.just("crash"), NAMES),
    ),
    max_size=40,
)


def run(assignor: str, steps) -> None:
    sim = Simulation(assignor)
    sim.join("a", ("t1",))
    for step in steps:
        kind, name = step[0], step[1]
        if kind == "join":
            sim.join(name, step[2])
        elif kind == "heartbeat":
            sim.heartbeat(name, apply_now=step[2])
        elif kind == "apply" and name in sim.clients:
            sim.apply(sim.clients[name])
        elif kind == "leave":
            sim.leave(name)
        elif kind == "crash" and len(sim.clients) > 1:
            sim.crash(name)
        sim.check()
    sim.converge()
    assert sim.h.group().state is ConsumerGroupState.STABLE


@pytest.mark.spec("CGRP-5", "CGRP-6")
@given(steps=STEPS, assignor=st.sampled_from(["uniform", "range"]))
def test_no_partition_has_two_owners_and_revocation_comes_first(steps, assignor):
    run(assignor, steps)


@pytest.mark.spec("CGRP-7")
@given(steps=STEPS)
def test_epochs_never_go_back_and_the_group_converges_to_its_target(steps):
    run("uniform", steps)


@pytest.mark.spec("CGRP-5")
def test_a_partition_moves_only_after_its_owner_revoked_it():
    sim = Simulation("uniform")
    sim.join("a", ("t1",))
    assert len(sim.clients["a"].owned) == 7
    sim.join("b", ("t1",))
    b = sim.clients["b"]
    assert b.owned == set() and sim.h.group().members["b"].state.name == "UNRELEASED_PARTITIONS"
    sim.heartbeat("a", apply_now=False)  # a hears it must give up 3 partitions
    member_a = sim.h.group().members["a"]
    assert (
        member_a.state.name == "UNREVOKED_PARTITIONS"
        and len(member_a.pending_revocation[TOPICS[0].topic_id]) == 3
    )
    sim.heartbeat("b", apply_now=True)
    assert b.owned == set()  # a still owns them: nothing for b yet
    sim.heartbeat("a", apply_now=True)  # a revokes ...
    sim.heartbeat("a", apply_now=True)  # ... and says so
    sim.heartbeat("b", apply_now=True)
    assert len(b.owned) == 3 and len(sim.clients["a"].owned) == 4
    sim.check()
    assert sim.h.group().group_id == G
