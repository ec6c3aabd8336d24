"""Lab 10 grader: the vote and the follower's truncation in KRaft's quorum (RAFT-2, RAFT-4,
RAFT-5, RAFT-7; and what they guarantee together, RAFT-9..RAFT-13).

First your two functions alone: the vote on cases worked out by hand and as a property of
each rule (one vote per epoch, pre-votes, the up-to-date log), the truncation on cases
worked out by hand and as a property: from any two logs that share a history, the leader's
diverging epochs and your cuts must meet exactly where the logs part.

Then kafka-ref's deterministic Raft simulator (kafka_ref/sim/raft_cluster.py), where every
voter answers VoteRequests with your `can_grant_vote` and every follower truncates with
your `truncation_offset`: a voter cut off from the leader alone must not depose it; a
leader cut off, writing on alone, must truncate what it wrote once it is back; and
hypothesis draws worlds (three or five voters, message loss, duplicates, reordering,
crashes) and schedules (crashes, restarts, partitions, resignations), while the checker
watches every event for two leaders of one epoch, logs that disagree below a shared entry,
and a committed entry lost or applied differently; last, a healed quorum must elect a
leader and commit. A failure in the simulator names the property that broke (its RAFT
rule) and the world and schedule that broke it: `tests/raft/schedules.py`'s `play` runs
them again, step by step, with `sim.history` telling what happened.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kafka_ref.raft import replicated_log, vote
from kafka_ref.raft.election_state import NOT_SET
from kafka_ref.raft.messages import OffsetAndEpoch, VoteRequest
from kafka_ref.raft.vote import VoterState
from kafka_ref.sim.raft_checks import SafetyViolation, log_entries
from kafka_ref.sim.raft_cluster import RaftSimConfig, RaftSimulation, scratch_directory
from tests.raft.schedules import (
    SETTLE_BOUND_MS,
    partition_schedules,
    play_step,
    schedules,
    worlds,
)
from tests.raft.voters import log_of

ME = 0  # the voter deciding, in every case below

# ------------------------------------------------------------------------------ the vote


def voter(epoch=5, voted=NOT_SET, leader=NOT_SET, fetched=False, log=(3, 10)) -> VoterState:
    """Voter 0 in `epoch`, its vote, the leader it knows, its log (last epoch, end offset)."""
    return VoterState(ME, epoch, voted, leader, fetched, *log)


def ask(candidate=1, epoch=5, log=(4, 12), pre=False) -> VoteRequest:
    """`candidate` asks for a vote (a pre-vote) in `epoch`, its log (last epoch, end): by
    default later and longer than the voter's, up to date however one compares logs, so
    that the cases of one vote per epoch and of pre-votes test those rules alone."""
    return VoteRequest("", ME, epoch, candidate, log[0], log[1], pre)


def who(node: int) -> str:
    return "itself" if node == ME else f"node {node}"


def describe(v: VoterState, r: VoteRequest) -> str:
    state = f"voter {ME} in epoch {v.epoch}"
    state += f", voted for {who(v.voted_id)}" if v.voted_id != NOT_SET else ", no vote cast"
    if v.leader_id != NOT_SET:
        state += f", knows the leader {who(v.leader_id)}"
        state += " (has fetched from it)" if v.fetched_from_leader else ""
    state += f", its log at (last epoch {v.last_epoch}, end {v.end_offset})"
    kind = "a pre-vote" if r.pre_vote else "a vote"
    return (
        f"{state}; node {r.candidate_id} asks {kind} in epoch {r.candidate_epoch}, its log "
        f"at (last epoch {r.last_offset_epoch}, end {r.last_offset})"
    )


def check_vote(v: VoterState, r: VoteRequest, grant: bool) -> None:
    got = vote.can_grant_vote(v, r)
    assert got is grant, f"{describe(v, r)}: {'grant' if grant else 'refuse'} it, got {got!r}"


ONE_VOTE_PER_EPOCH = [
    pytest.param(voter(), ask(), True, id="no vote cast yet, the same log: grant"),
    pytest.param(voter(voted=1), ask(1), True, id="voted for 1, 1 asks again (a retry): grant"),
    pytest.param(voter(voted=2), ask(1), False, id="voted for 2 in epoch 5, 1 asks: refuse"),
    pytest.param(voter(voted=2), ask(1, 6), True, id="voted for 2 in 5, 1 asks in 6: grant"),
    pytest.param(voter(epoch=5), ask(1, 4), False, id="epoch 4 is older than 5: refuse"),
    pytest.param(voter(voted=1), ask(1, 4), False, id="voted for 1 in 5; 1 asks in 4: refuse"),
    pytest.param(
        voter(leader=2, fetched=True), ask(1), False, id="follows leader 2 of epoch 5: refuse"
    ),
    pytest.param(
        voter(leader=2), ask(1), False, id="knows leader 2 of epoch 5, no fetch yet: refuse"
    ),
    pytest.param(
        voter(leader=2, fetched=True), ask(1, 6), True, id="follows 2 in 5; 1 asks in 6: grant"
    ),
    pytest.param(voter(leader=ME, voted=ME), ask(1), False, id="it leads epoch 5: refuse"),
    pytest.param(voter(leader=ME, voted=ME), ask(1, 6), True, id="it led 5; 1 asks in 6: grant"),
    pytest.param(voter(voted=ME), ask(1), False, id="a candidate in 5 (voted for itself): refuse"),
    pytest.param(voter(voted=ME), ask(1, 7), True, id="a candidate in 5; 1 asks in 7: grant"),
]

UP_TO_DATE = [
    pytest.param(
        voter(log=(4, 10)), ask(log=(5, 3)), True, id="a later last epoch, a shorter log: grant"
    ),
    pytest.param(
        voter(log=(4, 10)), ask(log=(4, 10)), True, id="the same last epoch, as long: grant"
    ),
    pytest.param(
        voter(log=(4, 10)), ask(log=(4, 11)), True, id="the same last epoch, longer: grant"
    ),
    pytest.param(
        voter(log=(4, 10)), ask(log=(4, 9)), False, id="the same last epoch, shorter: refuse"
    ),
    pytest.param(
        voter(log=(4, 10)), ask(log=(3, 100)), False, id="an older last epoch, longer: refuse"
    ),
    pytest.param(voter(log=(-1, 0)), ask(log=(-1, 0)), True, id="both logs empty: grant"),
    pytest.param(voter(log=(1, 1)), ask(log=(-1, 0)), False, id="an empty log, ours not: refuse"),
    pytest.param(
        voter(log=(4, 10)),
        ask(epoch=6, log=(3, 50)),
        False,
        id="a later epoch, an older log: refuse",
    ),
    pytest.param(
        voter(voted=2, log=(4, 10)),
        ask(epoch=6, log=(4, 9)),
        False,
        id="a new vote, a shorter log: refuse",
    ),
]

PRE_VOTES = [
    pytest.param(
        voter(voted=2), ask(1, 6, pre=True), True, id="voted for 2; pre-vote of 1: it binds nothing"
    ),
    pytest.param(
        voter(voted=ME), ask(1, 6, pre=True), True, id="a candidate; a pre-vote binds nothing"
    ),
    pytest.param(
        voter(leader=2, fetched=True),
        ask(1, 6, pre=True),
        False,
        id="fetches from its leader 2: refuse",
    ),
    pytest.param(
        voter(leader=2, fetched=True),
        ask(1, 9, pre=True),
        False,
        id="fetches from 2; a pre-vote for 9 moves it nowhere: refuse",
    ),
    pytest.param(
        voter(leader=2), ask(1, 6, pre=True), True, id="knows 2, has not fetched from it: grant"
    ),
    pytest.param(
        voter(leader=ME, voted=ME), ask(1, 6, pre=True), False, id="it leads epoch 5: refuse"
    ),
    pytest.param(voter(), ask(1, 6, log=(2, 9), pre=True), False, id="an older, shorter log: no"),
    pytest.param(voter(epoch=5), ask(1, 4, pre=True), False, id="epoch 4 < 5: refuse"),
]


@pytest.mark.spec("RAFT-2")
@pytest.mark.parametrize(("v", "r", "grant"), ONE_VOTE_PER_EPOCH)
def test_one_vote_per_epoch_on_cases_worked_by_hand(v, r, grant):
    check_vote(v, r, grant)


@pytest.mark.spec("RAFT-5")
@pytest.mark.parametrize(("v", "r", "grant"), UP_TO_DATE)
def test_the_candidates_log_on_cases_worked_by_hand(v, r, grant):
    check_vote(v, r, grant)


@pytest.mark.spec("RAFT-4")
@pytest.mark.parametrize(("v", "r", "grant"), PRE_VOTES)
def test_pre_votes_on_cases_worked_by_hand(v, r, grant):
    check_vote(v, r, grant)


NODES = st.sampled_from([ME, 1, 2, NOT_SET])
EPOCHS = st.integers(0, 4)
LOGS = st.tuples(st.integers(-1, 3), st.integers(0, 6))


def up_to_date(v: VoterState, r: VoteRequest) -> bool:
    """RAFT-5: the candidate's last epoch is later, or the same and its log as long."""
    if r.last_offset_epoch != v.last_epoch:
        return r.last_offset_epoch > v.last_epoch
    return r.last_offset >= v.end_offset


@st.composite
def voters(draw) -> VoterState:
    """A voter in a state Raft can reach: a voter that leads voted for itself, and only a
    follower of another node has fetched from its leader."""
    leader = draw(NODES)
    voted = ME if leader == ME else draw(NODES)
    fetched = leader not in (ME, NOT_SET) and draw(st.booleans())
    return VoterState(ME, draw(EPOCHS), voted, leader, fetched, *draw(LOGS))


@st.composite
def cases(draw, pre_vote: bool) -> tuple[VoterState, VoteRequest]:
    """A voter, and a request from a candidate whose log is later and longer than the
    voter's: up to date however one compares logs, so that the properties of the other
    rules do not hang on that comparison."""
    v = draw(voters())
    log = (v.last_epoch + draw(st.integers(1, 2)), v.end_offset + draw(st.integers(1, 3)))
    candidate = draw(st.sampled_from([1, 2, 3]))
    return v, VoteRequest("", ME, draw(EPOCHS), candidate, *log, pre_vote)


def live_leader(v: VoterState) -> bool:
    """The voter leads its epoch (or led it), or fetches from the leader it follows."""
    return v.leader_id == ME or v.fetched_from_leader


@pytest.mark.spec("RAFT-2")
@given(case=cases(pre_vote=False))
def test_a_voter_votes_once_per_epoch(case):
    """A candidate with a better log gets the vote unless its epoch is older, or is the
    voter's own and the voter knows its leader or voted for another."""
    v, r = case
    if r.candidate_epoch < v.epoch:
        grant = False
    elif r.candidate_epoch > v.epoch:
        grant = True
    else:
        grant = v.leader_id == NOT_SET and v.voted_id in (NOT_SET, r.candidate_id)
    check_vote(v, r, grant)


@pytest.mark.spec("RAFT-4")
@given(case=cases(pre_vote=True))
def test_a_pre_vote_binds_nothing_and_spares_a_live_leader(case):
    """A pre-vote for a candidate with a better log, not of an older epoch, is granted
    whatever vote was cast, unless the voter leads its epoch or fetches from its leader."""
    v, r = case
    check_vote(v, r, r.candidate_epoch >= v.epoch and not live_leader(v))


@st.composite
def free_voters(draw) -> tuple[VoterState, VoteRequest]:
    """A voter with no vote cast and no leader known, asked for a vote or a pre-vote of its
    own epoch or a later one."""
    v = VoterState(ME, draw(EPOCHS), NOT_SET, NOT_SET, False, *draw(LOGS))
    epoch = v.epoch + draw(st.integers(0, 2))
    return v, VoteRequest(
        "", ME, epoch, draw(st.sampled_from([1, 2, 3])), *draw(LOGS), draw(st.booleans())
    )


@pytest.mark.spec("RAFT-5")
@given(case=free_voters())
def test_a_vote_goes_only_to_a_log_at_least_as_up_to_date(case):
    """A voter free to vote grants exactly the candidates whose log is at least as up to
    date as its own, for a vote or a pre-vote."""
    v, r = case
    check_vote(v, r, up_to_date(v, r))


# ------------------------------------------------------------------------ the truncation


def runs(epochs: list[tuple[int, int]]) -> str:
    """[(1, 5), (2, 3)] as "epoch 1 at 0-4, epoch 2 at 5-7"."""
    parts, start = [], 0
    for epoch, n in epochs:
        parts.append(f"epoch {epoch} at {start}-{start + n - 1}")
        start += n
    return ", ".join(parts) or "nothing"


# The follower's log (runs of (epoch, batches)), the leader's answer (epoch, where it ends
# on the leader), and where the follower must cut, worked out by hand.
TRUNCATIONS = [
    pytest.param(
        [(1, 5), (2, 3)], (1, 3), 3, id="both hold epoch 1; it ends at 3 there, 5 here: 3"
    ),
    pytest.param(
        [(1, 5), (2, 5)], (2, 7), 7, id="both hold epoch 2; it ends at 7 there, at 10 here: 7"
    ),
    pytest.param(
        [(1, 5), (2, 3)], (2, 20), 8, id="both hold epoch 2; it ends at 20 there, 8 here: 8"
    ),
    pytest.param([(1, 3), (3, 2)], (1, 3), 3, id="epoch 1 ends at 3 on both: 3"),
    pytest.param([(1, 2), (4, 3)], (3, 6), 2, id="we lack epoch 3; our epoch 1 ends at 2"),
    pytest.param(
        [(1, 2), (2, 3), (4, 3)], (3, 9), 5, id="we lack 3; our largest below, 2, ends at 5"
    ),
    pytest.param(
        [(0, 5), (1, 3), (3, 2)], (2, 10), 8, id="we lack 2; our epoch 1 ends at 8, not 10"
    ),
    pytest.param([(3, 4)], (2, 5), 0, id="we hold no epoch as old as 2: 0"),
    pytest.param([(2, 3)], (-1, 0), 0, id="the leader holds no epoch as old as ours: 0"),
]


@pytest.mark.spec("RAFT-7")
@pytest.mark.parametrize(("follower", "diverging", "cut"), TRUNCATIONS)
def test_truncation_on_cases_worked_by_hand(tmp_path, follower, diverging, cut):
    log = log_of(tmp_path, follower)
    try:
        got = replicated_log.truncation_offset(log, OffsetAndEpoch(*diverging))
    finally:
        log.close()
    assert got == cut, (
        f"a follower holding {runs(follower)} (end offset {log.end_offset}); the leader "
        f"answers that epoch {diverging[0]} ends at {diverging[1]} on its log: cut at {cut}, "
        f"got {got}"
    )


@st.composite
def parted_logs(draw) -> tuple[list, list, int]:
    """A leader's and a follower's log (runs of (epoch, batches)) that share a history and
    then part, as Raft's logs can: an epoch's batches are its leader's, at the same offsets
    on every log that holds them, so after the logs part no epoch is on both, except that
    one of them may hold more of the last shared epoch. The leader's log ends with its own
    epoch, the largest. Also where they part (the length of the shared history)."""
    sizes = st.integers(1, 3)
    shared = [(e, draw(sizes)) for e in range(1, draw(st.integers(0, 3)) + 1)]
    leader, follower = list(shared), list(shared)
    if shared and draw(st.booleans()):  # one side holds more of the last shared epoch
        draw(st.sampled_from([leader, follower])).append((shared[-1][0], draw(sizes)))
    epoch = len(shared)
    for _ in range(draw(st.integers(0, 4))):
        epoch += 1
        draw(st.sampled_from([leader, follower])).append((epoch, draw(sizes)))
    leader.append((epoch + 1, draw(sizes)))
    return merged(leader), merged(follower), sum(n for _, n in shared)


def merged(epochs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs of one epoch next to each other as one run."""
    found: list[tuple[int, int]] = []
    for epoch, n in epochs:
        if found and found[-1][0] == epoch:
            found[-1] = (epoch, found[-1][1] + n)
        else:
            found.append((epoch, n))
    return found


def epochs_by_offset(log) -> list[int]:
    return [entry[1] for entry in log_entries(log)]


@pytest.mark.spec("RAFT-7")
@settings(max_examples=150)
@given(logs=parted_logs())
def test_truncation_rounds_meet_exactly_where_the_logs_part(logs):
    """Fetch, answer, cut, again: each diverging answer is the leader's own
    (validate_offset_and_epoch); each cut must remove something, never what the two logs
    share, and the rounds must end, the follower's log exactly the shared history."""
    leader_runs, follower_runs, shared = logs
    with scratch_directory() as directory:
        leader = log_of(f"{directory}/leader", leader_runs)
        follower = log_of(f"{directory}/follower", follower_runs)
        try:
            meet(leader, follower, leader_runs, follower_runs, shared)
        finally:
            leader.close()
            follower.close()


def meet(leader, follower, leader_runs: list, follower_runs: list, shared: int) -> None:
    """The rounds of fetch, diverging answer and truncation, checked (see above)."""
    where = f"a leader holding {runs(leader_runs)}, a follower holding {runs(follower_runs)}"
    cuts = []
    for _round in range(len(follower_runs) + 2):
        end, last = follower.end_offset, follower.last_fetched_epoch
        diverging = replicated_log.validate_offset_and_epoch(leader, end, last)
        if diverging is None:
            break
        cut = replicated_log.truncation_offset(follower, diverging)
        cuts.append(f"told ({diverging.epoch}, {diverging.offset}), cut at {cut}")
        told = f"{where}; {'; '.join(cuts)}"
        assert cut >= shared, f"{told}: below {shared}, where the logs still agree"
        assert cut < end, f"{told}: the follower's end is {end}, nothing cut"
        follower.truncate_to(cut)
    else:
        raise AssertionError(f"{where}; {'; '.join(cuts)}: the logs never agree")
    assert follower.end_offset == shared, (
        f"{where}; {'; '.join(cuts)}: the follower ends at {follower.end_offset}, "
        f"the logs part at {shared}"
    )
    assert epochs_by_offset(follower) == epochs_by_offset(leader)[:shared]


# ------------------------------------------------------------------------ the simulator

RULE_OF_PROPERTY = {
    "election safety": "RAFT-9",
    "log matching": "RAFT-10",
    "leader completeness": "RAFT-11",
    "state machine safety": "RAFT-12",
    "listener": "RAFT-17",
}
RULE_OF_INVARIANT = {  # what the quorum core asserts, by the words of its assertion
    "two votes in one epoch": "RAFT-2",
    "whose leader": "RAFT-2",
    "below the high watermark": "RAFT-7",
}


def verdict(violation: SafetyViolation) -> str:
    """The broken property (or the core's broken invariant) with its rule."""
    text = str(violation)
    rule = RULE_OF_PROPERTY.get(violation.prop)
    if rule is None:
        rule = next((r for words, r in RULE_OF_INVARIANT.items() if words in text), None)
    if "NotImplementedError" in text:
        return f"your functions are not written yet: {text}"
    return f"{rule or 'an invariant of the quorum'} broken: {text}"


def simulate(directory: str, world, schedule: list, *, settle: bool) -> RaftSimulation:
    """Play `schedule` in `world` with the checker watching every event; then heal, start
    every node and run on (checked), or, with `settle`, demand a commit within the bound."""
    sim = world.simulation(directory)
    try:
        for step in schedule:
            play_step(sim, step)
        if settle:
            sim.settle(SETTLE_BOUND_MS)
        else:
            sim.heal()
            for node in sim.down():
                sim.start(node)
            sim.run(500)
    except SafetyViolation as violation:
        raise AssertionError(verdict(violation)) from None
    except AssertionError as error:  # settle's: no progress within the bound
        raise AssertionError(f"RAFT-13 broken: {error}") from None
    return sim


def describe_logs(sim: RaftSimulation) -> str:
    return "; ".join(
        f"node {i}: {runs(epoch_runs(sim.entries(i)))}" if sim.nodes[i].up else f"node {i} down"
        for i in sim.voter_ids
    )


def epoch_runs(entries: list) -> list[tuple[int, int]]:
    return merged([(entry[1], 1) for entry in entries])


def leading(sim: RaftSimulation) -> tuple[int | None, int]:
    leader = sim.leader()
    return leader, -1 if leader is None else sim.nodes[leader].client.epoch


def elected(sim: RaftSimulation, ms: int, after: int | None = None) -> tuple[int, int]:
    """Run `ms`; the leader then (of a later epoch than `after`'s), which must be there:
    a scenario needs elections to work before it can test anything else."""
    before = -1 if after is None else sim.nodes[after].client.epoch
    sim.run(ms)
    leader, epoch = leading(sim)
    assert leader is not None and leader != after and epoch > before, (
        f"no new leader elected within {ms} ms, which this test needs first: elections do not "
        f"work with this can_grant_vote (see its own tests, and RAFT-13):\n{sim.describe()}"
    )
    return leader, epoch


@pytest.mark.spec("RAFT-4")
def test_a_voter_cut_off_from_the_leader_alone_does_not_depose_it():
    """Three voters, no new records (every log stays as up to date as the others). The
    network between the leader and one follower breaks; the follower times out and asks
    for pre-votes again and again. The other follower, fetching from the leader, must
    refuse them: the leader and its epoch stay."""
    quiet = RaftSimConfig(workload_interval_ms=0)
    with scratch_directory() as directory:
        cut_off_from_the_leader(RaftSimulation(directory, voters=3, seed=3, config=quiet))


def cut_off_from_the_leader(sim: RaftSimulation) -> None:
    try:
        leader, epoch = elected(sim, 1_000)
        cut_off, other = sim.followers()
        sim.network.cut(leader, cut_off)
        sim.record(f"cut {leader} - {cut_off}")
        sim.run(3_000)
    except SafetyViolation as violation:
        raise AssertionError(verdict(violation)) from None
    asked = [line for line in sim.history if f"node {cut_off}: Prospective" in line]
    assert asked, f"node {cut_off} never asked for pre-votes:\n" + "\n".join(sim.history)
    now = leading(sim)
    assert now == (leader, epoch), (
        f"node {cut_off}, cut off from the leader {leader} of epoch {epoch} alone, asked node "
        f"{other} for pre-votes {len(asked)} times while {other} fetched from {leader}; after "
        f"3 s the leader is {now[0]} of epoch {now[1]}: a pre-vote was granted that deposed a "
        f"live leader (the history: sim.history)"
    )


@pytest.mark.spec("RAFT-7")
def test_a_leader_cut_off_truncates_what_it_wrote_alone():
    """Three voters. The leader is cut off from both others and appends on alone (nothing
    it writes can commit); the others elect a new leader, which commits. Once the network
    heals, the old leader follows, is answered with diverging epochs, and must cut its log
    back to what it shares with the new leader and catch up."""
    with scratch_directory() as directory:
        a_leader_cut_off(RaftSimulation(directory, voters=3, seed=5))


def a_leader_cut_off(sim: RaftSimulation) -> None:
    try:
        old, epoch = elected(sim, 1_000)
        sim.isolate(old)
        sim.append(5)  # only the old leader leads: its batches, alone
        new, new_epoch = elected(sim, 1_500, after=old)
        alone = sim.nodes[old].log.end_offset
        committed = sim.nodes[new].client.high_watermark
        sim.heal()
        sim.run(2_000)
    except SafetyViolation as violation:
        raise AssertionError(verdict(violation)) from None
    leader, _ = leading(sim)
    mine, theirs = sim.entries(old), sim.entries(leader)
    parted = next(
        (i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), len(mine)
    )
    story = (
        f"node {old} led epoch {epoch}, was cut off and wrote on alone up to offset {alone}; "
        f"node {new} was elected in epoch {new_epoch} and committed up to {committed}. 2 s "
        f"after the heal"
    )
    assert parted == len(mine) <= len(theirs), (
        f"{story}, node {old}'s log still parts from the leader's at offset {parted}: "
        f"{describe_logs(sim)}"
    )
    assert len(mine) >= committed, (
        f"{story}, node {old}'s log ends at {len(mine)}: {describe_logs(sim)}"
    )


@pytest.mark.spec("RAFT-11")
def test_a_longer_log_of_an_older_epoch_does_not_win():
    """Three voters. The leader A is cut off and appends on alone: a long log of its old
    epoch. B is elected in a later epoch and commits a shorter log with C. B crashes and
    the network heals: A and C both stand. C must win: A's log is longer but of an older
    epoch, and lacks what B committed."""
    with scratch_directory() as directory:
        a_longer_older_log(RaftSimulation(directory, voters=3, seed=3))


def a_longer_older_log(sim: RaftSimulation) -> None:
    try:
        a, epoch = elected(sim, 1_000)
        sim.isolate(a)
        sim.append(60)  # A alone leads: 60 batches of its epoch, nowhere else
        b, b_epoch = elected(sim, 1_000, after=a)
        c = next(i for i in sim.voter_ids if i not in (a, b))
        ends = {
            i: (sim.nodes[i].log.last_fetched_epoch, sim.nodes[i].log.end_offset) for i in (a, c)
        }
        assert ends[a][0] < ends[c][0] and ends[a][1] > ends[c][1], sim.describe()
        committed = sim.nodes[b].client.high_watermark
        sim.crash(b)
        sim.heal()
        sim.run(2_000)
    except SafetyViolation as violation:
        raise AssertionError(verdict(violation)) from None
    leader, _ = leading(sim)
    assert leader == c, (
        f"node {a} led epoch {epoch}, was cut off and wrote on alone: its log ends at "
        f"{ends[a][1]}, last epoch {ends[a][0]}; node {b} led epoch {b_epoch} and committed up "
        f"to {committed} with node {c}, whose log ends at {ends[c][1]}, last epoch {ends[c][0]}. "
        f"{b} crashed: only {c} holds what {b} committed, and {leader} leads:\n{sim.describe()}"
    )


SIMULATION = settings(
    max_examples=100,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: the history tells the story
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.spec("RAFT-9", "RAFT-10", "RAFT-11", "RAFT-12")
@SIMULATION
@given(world=worlds(voters=(3, 5)), schedule=schedules())
def test_random_worlds_keep_raft_safe(world, schedule):
    """Election safety, log matching, leader completeness and state machine safety after
    every event of every drawn world and schedule."""
    with scratch_directory() as directory:
        simulate(directory, world, schedule, settle=False)


@pytest.mark.spec("RAFT-10", "RAFT-11", "RAFT-12")
@settings(SIMULATION, max_examples=25)
@given(world=worlds(voters=(3, 5)), schedule=partition_schedules())
def test_partitions_and_heals_keep_every_committed_entry(world, schedule):
    """Nodes cut off and healed again and again, where followers truncate most: every
    committed entry stays on every later leader and is applied alike everywhere."""
    with scratch_directory() as directory:
        simulate(directory, world, schedule, settle=False)


@pytest.mark.spec("RAFT-13")
@settings(SIMULATION, max_examples=60)
@given(world=worlds(voters=(3, 5)), schedule=schedules())
def test_a_healed_quorum_elects_a_leader_and_commits(world, schedule):
    """Whatever happened, once the network heals and every node is up, a leader must be
    elected and commit a new entry on every voter within the bound."""
    with scratch_directory() as directory:
        simulate(directory, world, schedule, settle=True)
