"""A voter's current epoch state, and the only way it changes (Kafka: `QuorumState`).

QuorumState holds the voter's one `EpochState` (epoch_state.py, nominee_state.py,
follower_state.py, leader_state.py) and switches it. Every switch that changes what must
survive a crash, the epoch, the vote or the leader, is **durable**: the new `ElectionState`
is written to the `quorum-state` file (election_state.py) before the new state takes
effect, and so before any message that depends on it is sent (RAFT-3). Above all, a vote
is on disk before it is answered: a voter that restarts remembers whom it voted for in its
epoch and cannot vote twice (RAFT-2).

The rules of the switches, which assertions hold:

* the epoch never goes down, and it goes up only to an epoch someone else started
  (`transition_to_unattached`, `transition_to_follower`) or by one when this voter becomes
  a candidate (`transition_to_candidate`);
* a voter votes once per epoch, and not in an epoch whose leader it knows
  (`transition_to_unattached_voted`, from Unattached or Prospective without a vote). Whether
  it grants a vote is decided elsewhere, on a snapshot of what it knows (`voter_state`,
  vote.py); this switch asserts that the decision kept the rule;
* only a candidate with a majority becomes leader, in its own epoch.

A node whose id is not among the voters is an **observer** (RAFT-18; Kafka: `isObserver`):
it follows the leader but has no say. Its state machine is the voter's cut down to
Unattached and Follower: it has no election timer, never becomes prospective, a candidate
or a leader, and never votes.

It also keeps the voter's **high watermark**, which never decreases, and the election
timeouts, drawn from the random source it is given (RAFT-1).

On start (`initialize`) it reads the file: a voter that was leader comes back Resigned (it
may not lead its old epoch again: its uncommitted entries, in flight at the crash, are
unknown), one that knew a leader comes back its Follower, any other Unattached, with the
vote it cast.

Rules: RAFT-1, RAFT-2, RAFT-3, RAFT-18.
"""

from __future__ import annotations

import random

from kafka_ref.raft.election_state import NOT_SET, ElectionState, QuorumStateStore
from kafka_ref.raft.epoch_state import EpochState, ResignedState, UnattachedState
from kafka_ref.raft.follower_state import FollowerState
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.raft.nominee_state import CandidateState, ProspectiveState
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.raft.replicated_log import ReplicatedLog
from kafka_ref.raft.vote import VoterState


class QuorumState:
    def __init__(
        self,
        local_id: int,
        voters: tuple[int, ...],
        store: QuorumStateStore,
        log: ReplicatedLog,
        config: QuorumConfig,
        rng: random.Random,
    ) -> None:
        assert voters, "a quorum has voters"
        self.local_id = local_id
        self.voters = tuple(sorted(voters))
        self.store = store
        self.log = log
        self.config = config
        self.rng = rng
        self.high_watermark = 0
        self.state: EpochState = UnattachedState(0, self.voters, NOT_SET, 0)

    # ------------------------------------------------------------------ reading
    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        return self.state.leader_id

    def is_leader(self) -> bool:
        return isinstance(self.state, LeaderState)

    @property
    def is_voter(self) -> bool:
        """Whether this node votes; one outside the voter set observes (Kafka: `isVoter`)."""
        return self.local_id in self.voters

    def voter_state(self) -> VoterState:
        """What this voter knows, as a VoteRequest's answer is decided on it (vote.py)."""
        state = self.state
        fetched = isinstance(state, FollowerState) and state.has_fetched_from_leader
        return VoterState(
            self.local_id,
            state.epoch,
            state.voted_id,
            state.leader_id,
            fetched,
            self.log.last_fetched_epoch,
            self.log.end_offset,
        )

    def random_election_timeout_ms(self) -> int:
        """Kafka: `randomElectionTimeoutMs`, uniform in [timeout, 2 x timeout) (RAFT-1); in
        [timeout, timeout + jitter) with the config's `election_jitter_ms`."""
        timeout = self.config.election_timeout_ms
        jitter = (
            timeout if self.config.election_jitter_ms is None else self.config.election_jitter_ms
        )
        return timeout + (self.rng.randrange(jitter) if jitter > 0 else 0)

    def _election_deadline_ms(self, now_ms: int) -> int | None:
        """When an unattached node's election timer expires: never, for an observer (Kafka
        gives it `Long.MAX_VALUE`)."""
        return now_ms + self.random_election_timeout_ms() if self.is_voter else None

    def election_backoff_ms(self) -> int:
        return self.rng.randrange(max(self.config.election_backoff_max_ms, 1))

    def update_high_watermark(self, offset: int) -> None:
        """The high watermark only moves forward."""
        self.high_watermark = max(self.high_watermark, offset)

    # ------------------------------------------------------------------ start
    def initialize(self, now_ms: int) -> None:
        """The state after a (re)start, from the `quorum-state` file and the log."""
        stored = self.store.read_election_state() or ElectionState(0, voters=self.voters)
        log_epoch = self.log.last_fetched_epoch
        deadline = self._election_deadline_ms(now_ms)
        if log_epoch > stored.epoch:  # the log saw a later epoch than the file: start there
            self._durable(UnattachedState(log_epoch, self.voters, NOT_SET, deadline))
        elif stored.leader_id == self.local_id and self.is_voter:
            self.state = ResignedState(stored.epoch, self.voters, self.local_id, (), deadline)
        elif stored.has_leader and stored.leader_id != self.local_id:
            self.state = FollowerState(
                stored.epoch,
                self.voters,
                stored.leader_id,
                stored.voted_id,
                now_ms + self.config.fetch_timeout_ms,
            )
        else:
            self.state = UnattachedState(stored.epoch, self.voters, stored.voted_id, deadline)

    # ------------------------------------------------------------------ transitions
    def _durable(self, state: EpochState) -> None:
        """Write what must survive of `state`, then take it (RAFT-3)."""
        self.store.write_election_state(state.election())
        self.state = state

    def transition_to_unattached(self, epoch: int, now_ms: int) -> None:
        """A later epoch whose leader is not known: no vote cast in it yet."""
        assert epoch > self.epoch, f"unattached at {epoch} from epoch {self.epoch}"
        deadline = self._election_deadline_ms(now_ms)
        self._durable(UnattachedState(epoch, self.voters, NOT_SET, deadline))

    def transition_to_unattached_voted(self, candidate_id: int, now_ms: int) -> None:
        """Vote for `candidate_id` in the current epoch, durably, before answering (RAFT-2).
        Granted again to the same candidate (a retry), the vote is on disk already."""
        state = self.state
        assert self.is_voter, f"{self.local_id} observes: it has no vote"
        if state.voted_id == candidate_id:
            return
        assert state.voted_id == NOT_SET, (
            f"{self.local_id} votes for {candidate_id} in epoch {self.epoch}, having voted "
            f"for {state.voted_id}: two votes in one epoch"
        )
        assert state.leader_id == NOT_SET, (
            f"{self.local_id} votes for {candidate_id} in epoch {self.epoch}, whose leader "
            f"{state.leader_id} it knows"
        )
        assert isinstance(state, (UnattachedState, ProspectiveState)), state
        deadline = now_ms + self.random_election_timeout_ms()
        self._durable(UnattachedState(self.epoch, self.voters, candidate_id, deadline))

    def transition_to_prospective(self, now_ms: int) -> None:
        """Start a pre-vote for epoch + 1, keeping this epoch's vote and leader (RAFT-4)."""
        state = self.state
        assert self.is_voter, f"{self.local_id} observes: it never stands for election"
        assert not isinstance(state, (LeaderState, ProspectiveState)), state
        leader_id = state.leader_id if isinstance(state, FollowerState) else NOT_SET
        deadline = now_ms + self.random_election_timeout_ms()
        self._durable(
            ProspectiveState(
                self.epoch, self.voters, self.local_id, state.voted_id, leader_id, deadline
            )
        )

    def prospective_transition_after_election_loss(self, now_ms: int) -> None:
        """A pre-vote failed or timed out: back to the leader we knew, or to waiting in the
        same epoch with the same vote (Kafka: `prospectiveTransitionAfterElectionLoss`)."""
        state = self.state
        assert isinstance(state, ProspectiveState), state
        if state.known_leader_id != NOT_SET:
            self.transition_to_follower(state.epoch, state.known_leader_id, now_ms)
        else:
            deadline = now_ms + self.random_election_timeout_ms()
            self._durable(UnattachedState(self.epoch, self.voters, state.voted_id, deadline))

    def transition_to_candidate(self, now_ms: int) -> None:
        """Bump the epoch and vote for ourselves, durably (RAFT-1)."""
        assert isinstance(self.state, ProspectiveState), self.state
        deadline = now_ms + self.random_election_timeout_ms()
        self._durable(CandidateState(self.epoch + 1, self.voters, self.local_id, deadline))

    def transition_to_leader(self, now_ms: int) -> LeaderState:
        """Won the election: lead the candidate's epoch, from the log's end."""
        state = self.state
        assert isinstance(state, CandidateState) and state.epoch_election.is_vote_granted()
        leader = LeaderState(
            state.epoch,
            self.voters,
            self.local_id,
            self.log.end_offset,
            tuple(sorted(state.epoch_election.granted)),
            now_ms,
            self.config.check_quorum_timeout_ms,
        )
        self._durable(leader)
        return leader

    def transition_to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        """`leader_id` leads `epoch` (>= ours); keep our vote if the epoch is the same."""
        assert epoch >= self.epoch and leader_id != self.local_id
        if epoch == self.epoch:
            assert self.state.leader_id in (NOT_SET, leader_id), (
                f"two leaders in epoch {epoch}: {self.state.leader_id} and {leader_id}"
            )
        voted_id = self.state.voted_id if epoch == self.epoch else NOT_SET
        deadline = now_ms + self.config.fetch_timeout_ms
        self._durable(FollowerState(epoch, self.voters, leader_id, voted_id, deadline))

    def transition_to_resigned(self, now_ms: int) -> ResignedState:
        """Stop leading this epoch; successors are the voters most caught up."""
        state = self.state
        assert isinstance(state, LeaderState), state
        successors = state.non_leader_voters_by_descending_fetch_offset()
        deadline = now_ms + self.random_election_timeout_ms()
        resigned = ResignedState(self.epoch, self.voters, self.local_id, successors, deadline)
        self._durable(resigned)
        return resigned
