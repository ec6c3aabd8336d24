"""One node of the quorum, voter or observer: its messages, its timers, its log (Kafka:
`KafkaRaftClient`).

The client is a pure state machine in the style of kafka-ref's replication core: it reads
no clock (every call takes `now_ms`), opens no socket (it hands each message to the `send`
function it was given), and draws its randomness from the `random.Random` it was given.
The same class runs in the simulator (kafka_ref/sim/raft_cluster.py), which delivers its
messages over a faulty simulated network on a simulated clock, and will run in the broker.

Its driver calls three things:

* `handle(source, message, now_ms)` for every message that arrives;
* `poll(now_ms)` when `poll_timeout_ms` says something falls due: a timer expires
  (election, fetch, check quorum) or a request is to be sent or sent again;
* `append(values, now_ms)` on the leader: one batch of the application's records.

What happens, in KIP-595's order (Kafka's method names in parentheses):

1. **Elections.** A voter without a leader waits a random election timeout, then asks for
   pre-votes (KIP-996), and with a majority bumps the epoch and asks for votes
   (`handleVoteRequest`, `handleVoteResponse`). A voter grants one vote per epoch, written
   to disk before it answers, and only to a candidate whose log is at least as up to date
   as its own (RAFT-1, RAFT-2, RAFT-5).
2. **A new leader** writes a LeaderChange record in its epoch and tells the voters with
   BeginQuorumEpoch, again until each has answered or fetched (`onBecomeLeader`).
3. **Replication** is pulled: followers fetch with (fetch offset, last fetched epoch); the
   leader answers records, or the diverging epoch when the two logs part, and the follower
   truncates (`handleFetchRequest`, `handleFetchResponse`, RAFT-7). Every append is
   fsynced before it is counted (RAFT-8); the leader's high watermark is the majority's
   offset, once it covers an entry of the leader's epoch (RAFT-6).
4. **Failures.** A follower that hears nothing from its leader for the fetch timeout starts
   a pre-vote; a leader that a majority stopped fetching from resigns; a leader that shuts
   down resigns gracefully and sends EndQuorumEpoch (`handleEndQuorumEpochRequest`).
5. **Observers.** A node whose id is not among the voters (a broker, in KRaft) replicates
   the log without a say in it (RAFT-18): it finds the leader by fetching from a bootstrap
   server (`controller.quorum.bootstrap.servers`, else the voters), whose answer names the
   leader, and then fetches from the leader as a follower does; it never starts an
   election and never grants a vote. A leader silent for a fetch timeout sends it back to
   a bootstrap server, which names the new leader once there is one
   (`pollFollowerAsObserver`, `maybeSendFetchToAnyBootstrap`). The leader serves it and
   describes it, but never counts it (RAFT-19, leader_state.py).
6. **Snapshots** (KIP-630). The application writes a snapshot of its state at an offset
   it was told, below the high watermark (`create_snapshot`, RAFT-21); the log may then be
   cut up to it (`maybeClean`, RAFT-22). A follower whose fetch falls below the leader's
   log start offset is answered the latest snapshot's id instead of records; it copies
   the snapshot in chunks with FetchSnapshot, installs it (its log emptied to start at the
   snapshot's end), its listener loads it, and it fetches the log from there
   (`handleFetchSnapshotRequest`, `handleFetchSnapshotResponse`, RAFT-23, RAFT-24).

Every response carries the responder's epoch and leader; a node that learns of a later
epoch, or of its epoch's leader, follows it at once (`maybeTransition`).

Rules: RAFT-1..RAFT-8, RAFT-18, RAFT-21..RAFT-24.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from kafka_ref.errors import ErrorCode, NotLeaderOrFollowerError
from kafka_ref.raft.control_records import data_batch, leader_change_batch
from kafka_ref.raft.election_state import NOT_SET, QuorumStateStore
from kafka_ref.raft.epoch_state import EpochState, ResignedState, UnattachedState
from kafka_ref.raft.follower_state import FollowerState
from kafka_ref.raft.leader_state import LeaderState
from kafka_ref.raft.listener import LeaderAndEpoch, ListenerContext, RaftListener
from kafka_ref.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    RaftMessage,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from kafka_ref.raft.nominee_state import CandidateState, ProspectiveState
from kafka_ref.raft.quorum_config import QuorumConfig
from kafka_ref.raft.quorum_state import QuorumState
from kafka_ref.raft.replicated_log import (
    ReplicatedLog,
    snapshot_for_fetch,
    truncation_offset,
    validate_offset_and_epoch,
)
from kafka_ref.raft.vote import can_grant_vote

Send = Callable[[int, RaftMessage], None]


class KafkaRaftClient:
    """A voter or an observer: its `QuorumState`, its log, and the requests it has in flight.

    `bootstrap` are the peers an observer asks for the leader (Kafka:
    `controller.quorum.bootstrap.servers`; the voters when empty), `directory_id` the id of
    the metadata log's directory, which its fetches carry."""

    def __init__(
        self,
        local_id: int,
        voters: Sequence[int],
        log: ReplicatedLog,
        store: QuorumStateStore,
        config: QuorumConfig,
        rng: random.Random,
        send: Send,
        now_ms: int,
        cluster_id: str = "",
        bootstrap: Sequence[int] = (),
        directory_id: uuid.UUID | None = None,
    ) -> None:
        self.local_id = local_id
        self.log = log
        self.config = config
        self.cluster_id = cluster_id
        self.rng = rng
        self.directory_id = directory_id
        self._send = send
        self.quorum = QuorumState(local_id, tuple(voters), store, log, config, rng)
        self.bootstrap = tuple(bootstrap) or self.quorum.voters
        self.quorum.initialize(now_ms)
        self._correlation_id = 0
        self._in_flight: dict[int, tuple[RaftRequest, int]] = {}  # peer -> (request, sent at)
        self._in_flight_state: EpochState = self.quorum.state  # whose requests they are
        self._next_fetch_ms = now_ms
        self._ask_bootstrap = False  # an observer whose leader went silent asks elsewhere
        self._listeners: list[ListenerContext] = []

    def register(self, listener: RaftListener) -> None:
        """Tell `listener` the committed batches and the leader from now on (RAFT-17), first
        of all the latest snapshot, if there is one (RAFT-24)."""
        context = ListenerContext(listener)
        context.maybe_load_snapshot(self.log)
        self._listeners.append(context)

    # ------------------------------------------------------------------ reading
    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def high_watermark(self) -> int:
        return self.quorum.high_watermark

    @property
    def state(self) -> EpochState:
        return self.quorum.state

    def __repr__(self) -> str:
        return f"KafkaRaftClient({self.local_id}, {self.quorum.state!r}, hw={self.high_watermark})"

    # ------------------------------------------------------------------ the leader's API
    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append one batch of `values` as leader; returns the offset of the last one."""
        leader = self.quorum.state
        if not isinstance(leader, LeaderState):
            raise NotLeaderOrFollowerError(f"{self.local_id} is not the leader")
        _, last = self._append_as_leader(leader, data_batch(values, leader.epoch, now_ms))
        self._poll_listeners()  # a quorum of one has just committed it
        return last

    def _append_as_leader(self, leader: LeaderState, batch: bytes) -> tuple[int, int]:
        appended = self.log.append_as_leader(batch, leader.epoch)
        self.log.flush()  # counted only once on disk (RAFT-8)
        leader.update_local_state(self.log.end_offset)
        self._maybe_advance_high_watermark(leader)
        return appended

    def _maybe_advance_high_watermark(self, leader: LeaderState) -> None:
        hw = leader.maybe_update_high_watermark(self.quorum.high_watermark)
        self.quorum.update_high_watermark(hw)

    # ------------------------------------------------------------------ snapshots
    def create_snapshot(self, end_offset: int, data: bytes, now_ms: int) -> OffsetAndEpoch | None:
        """Keep `data`, the application's state after every record below `end_offset`, as a
        snapshot (Kafka: `RaftClient.createSnapshot`); then the log may be cut. Its id, or
        None when the latest snapshot is already as far. A snapshot only of what the quorum
        committed (RAFT-21): one above the high watermark could hold records a new leader
        erases, and a follower loading it would apply them."""
        self.check_snapshot_offset(end_offset)
        latest = self.log.latest_snapshot_id
        if latest is not None and latest.offset >= end_offset:
            return None
        snapshot_id = self.log.snapshot_id_at(end_offset)
        self.log.create_snapshot(snapshot_id, data)
        self._maybe_clean(now_ms)
        return snapshot_id

    def check_snapshot_offset(self, end_offset: int) -> None:
        """A snapshot's end offset is at most the high watermark (RAFT-21)."""
        if end_offset > self.quorum.high_watermark:
            raise ValueError(
                f"a snapshot at {end_offset}, above the high watermark {self.high_watermark}"
            )

    def _maybe_clean(self, now_ms: int) -> None:
        config = self.config
        self.log.maybe_clean(now_ms, config.max_retention_bytes, config.max_retention_ms)

    def resign(self, now_ms: int) -> None:
        """Stop leading gracefully (a controlled shutdown): EndQuorumEpoch to the voters."""
        if isinstance(self.quorum.state, LeaderState):
            self.quorum.transition_to_resigned(now_ms)
            self.poll(now_ms)

    # ------------------------------------------------------------------ timers
    def poll_timeout_ms(self, now_ms: int) -> int:
        """How long the driver may wait before the next `poll`."""
        due = [self.quorum.state.deadline_ms() or now_ms + self.config.request_timeout_ms]
        due += [sent + self.config.request_timeout_ms for _, sent in self._in_flight.values()]
        if self._fetches(self.quorum.state) and not self._in_flight:
            due.append(self._next_fetch_ms)  # a fetch is due once the last one is answered
        return max(min(due) - now_ms, 0)

    def _fetches(self, state: EpochState) -> bool:
        """A follower fetches from its leader; an unattached observer looks for one."""
        return isinstance(state, FollowerState) or (
            isinstance(state, UnattachedState) and not self.quorum.is_voter
        )

    def poll(self, now_ms: int) -> None:
        """Expire timers and requests, then send what the current state sends."""
        self._expire_timer(now_ms)
        self._maybe_clean(now_ms)
        # A new state (since the last poll, or just now by a timer): the old state's requests
        # are moot. Marked only here, where the new state's requests are sent, so that the
        # next poll does not take them for the old state's and drop them.
        if self.quorum.state is not self._in_flight_state:
            self._in_flight.clear()
            self._in_flight_state = self.quorum.state
            self._ask_bootstrap = False
        for peer, (_, sent) in list(self._in_flight.items()):
            if now_ms - sent >= self.config.request_timeout_ms:
                del self._in_flight[peer]  # no answer: it may be sent again
        state = self.quorum.state
        if isinstance(state, ProspectiveState):
            for voter in state.epoch_election.unrecorded():
                self._send_vote_request(voter, state.epoch + 1, True, now_ms)
        elif isinstance(state, CandidateState):
            for voter in state.epoch_election.unrecorded():
                self._send_vote_request(voter, state.epoch, False, now_ms)
        elif isinstance(state, LeaderState):
            for voter in state.voters:
                if voter not in state.acknowledged:
                    request = BeginQuorumEpochRequest(
                        self.cluster_id, voter, self.local_id, state.epoch
                    )
                    self._send_request(voter, request, now_ms)
        elif self._fetches(state):
            self._maybe_send_fetch_request(now_ms)
        elif isinstance(state, ResignedState):
            for voter in sorted(state.unacknowledged):
                request = EndQuorumEpochRequest(
                    self.cluster_id, self.local_id, state.epoch, state.preferred_successors
                )
                self._send_request(voter, request, now_ms)
        self._poll_listeners()

    def _poll_listeners(self) -> None:
        """Each listener hears the batches committed since, then a new leader (RAFT-17)."""
        quorum = self.quorum
        state = quorum.state
        leader = LeaderAndEpoch(quorum.leader_id, quorum.epoch)
        start = state.epoch_start_offset if isinstance(state, LeaderState) else None
        for context in self._listeners:
            context.deliver(self.log, quorum.high_watermark)
            context.maybe_fire_leader_change(leader, self.local_id, start)

    def _expire_timer(self, now_ms: int) -> None:
        state = self.quorum.state
        deadline = state.deadline_ms()
        if deadline is None or now_ms < deadline:
            return
        if isinstance(state, LeaderState):  # a majority stopped fetching: check quorum
            self.quorum.transition_to_resigned(now_ms)
        elif not self.quorum.is_voter:
            # RAFT-18: an observer's one timer is its fetch timer (it has no election to
            # start). Its leader has been silent that long: the next fetch asks a bootstrap
            # server, which names a new leader if there is one.
            assert isinstance(state, FollowerState), state
            state.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
            self._ask_bootstrap = True
        elif isinstance(state, ProspectiveState):
            self._prospective_lost(now_ms)
        else:  # Unattached, Follower (fetch timeout), Candidate, Resigned (RAFT-4)
            self.quorum.transition_to_prospective(now_ms)
            self._on_become_prospective(now_ms)

    def _on_become_prospective(self, now_ms: int) -> None:
        state = self.quorum.state
        assert isinstance(state, ProspectiveState)
        if state.epoch_election.is_vote_granted():  # a quorum of one
            self._on_pre_vote_granted(now_ms)

    def _prospective_lost(self, now_ms: int) -> None:
        self.quorum.prospective_transition_after_election_loss(now_ms)
        self._next_fetch_ms = now_ms

    def _on_pre_vote_granted(self, now_ms: int) -> None:
        self.quorum.transition_to_candidate(now_ms)
        candidate = self.quorum.state
        assert isinstance(candidate, CandidateState)
        if candidate.epoch_election.is_vote_granted():
            self._on_become_leader(now_ms)

    def _on_become_leader(self, now_ms: int) -> None:
        candidate = self.quorum.state
        assert isinstance(candidate, CandidateState)
        leader = self.quorum.transition_to_leader(now_ms)
        batch = leader_change_batch(
            self.local_id, leader.voters, leader.granting_voters, leader.epoch, now_ms
        )
        self._append_as_leader(leader, batch)

    # ------------------------------------------------------------------ sending
    def _next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    def _send_request(self, peer: int, request: RaftRequest, now_ms: int) -> None:
        """Send `request` unless one to `peer` is still in flight (Kafka: RequestManager)."""
        if peer in self._in_flight:
            return
        request = _with_correlation_id(request, self._next_correlation_id())
        self._in_flight[peer] = (request, now_ms)
        self._send(peer, request)

    def _send_vote_request(self, voter: int, epoch: int, pre_vote: bool, now_ms: int) -> None:
        end = self.log.end_offset
        request = VoteRequest(
            self.cluster_id,
            voter,
            epoch,
            self.local_id,
            self.log.last_fetched_epoch,
            end,
            pre_vote,
        )
        self._send_request(voter, request, now_ms)

    def _maybe_send_fetch_request(self, now_ms: int) -> None:
        """Fetch, once the last fetch is answered or given up: one at a time, as two answered
        at the same offset would append twice (Kafka: `RequestManager.hasAnyInflightRequest`).

        A follower asks its leader. An observer that knows no leader, or whose leader has
        been silent for a fetch timeout, asks a bootstrap server drawn at random; the answer
        names the epoch's leader, and `_maybe_transition` follows it (Kafka:
        `maybeSendFetchToAnyBootstrap`)."""
        state = self.quorum.state
        if self._in_flight or now_ms < self._next_fetch_ms:
            return
        if isinstance(state, FollowerState) and not self._ask_bootstrap:
            peer = state.leader_id
        else:
            peer = self.rng.choice(self.bootstrap)
            self._ask_bootstrap = False
        if isinstance(state, FollowerState) and state.fetching_snapshot is not None:
            snapshot_id, copied = state.fetching_snapshot  # RAFT-23: the next chunk
            request = FetchSnapshotRequest(
                self.cluster_id,
                self.local_id,
                state.epoch,
                snapshot_id,
                len(copied),
                self.config.fetch_snapshot_max_bytes,
            )
            self._send_request(state.leader_id, request, now_ms)
            return
        request = FetchRequest(
            self.cluster_id,
            self.local_id,
            state.epoch,
            self.log.end_offset,
            self.log.last_fetched_epoch,
            self.config.fetch_max_bytes,
            replica_directory_id=self.directory_id,
        )
        self._send_request(peer, request, now_ms)

    # ------------------------------------------------------------------ receiving
    def handle(self, source: int, message: RaftMessage, now_ms: int) -> None:
        """A message from `source` arrived."""
        if isinstance(message, VoteRequest):
            self._send(source, self._handle_vote_request(message, now_ms))
        elif isinstance(message, BeginQuorumEpochRequest):
            self._send(source, self._handle_begin_quorum_epoch_request(message, now_ms))
        elif isinstance(message, EndQuorumEpochRequest):
            self._send(source, self._handle_end_quorum_epoch_request(message, now_ms))
        elif isinstance(message, FetchRequest):
            self._send(source, self._handle_fetch_request(message, now_ms))
        elif isinstance(message, FetchSnapshotRequest):
            self._send(source, self._handle_fetch_snapshot_request(message, now_ms))
        else:
            in_flight = self._in_flight.get(source)
            if in_flight is None or in_flight[0].correlation_id != message.correlation_id:
                return  # late, duplicated, or answering a request given up: dropped
            del self._in_flight[source]
            self._handle_response(source, in_flight[0], message, now_ms)
        self.poll(now_ms)

    def _maybe_transition(self, leader_id: int, epoch: int, now_ms: int) -> bool:
        """Follow what a peer says of the epoch: a later epoch, or our epoch's leader
        (Kafka: `maybeTransition`, `maybeHandleCommonResponse`). True if it changed."""
        quorum = self.quorum
        if epoch > quorum.epoch:
            if leader_id not in (NOT_SET, self.local_id):
                quorum.transition_to_follower(epoch, leader_id, now_ms)
                self._next_fetch_ms = now_ms
            else:
                quorum.transition_to_unattached(epoch, now_ms)
            return True
        if epoch == quorum.epoch and leader_id not in (NOT_SET, self.local_id):
            if quorum.leader_id == NOT_SET:  # Unattached, Prospective or Candidate learn it
                quorum.transition_to_follower(epoch, leader_id, now_ms)
                self._next_fetch_ms = now_ms
                return True
            assert quorum.leader_id == leader_id, (
                f"{self.local_id}: {leader_id} leads epoch {epoch}, but {quorum.leader_id} does"
            )
        return False

    def _handle_vote_request(self, request: VoteRequest, now_ms: int) -> VoteResponse:
        quorum = self.quorum
        if request.candidate_epoch < quorum.epoch:
            return VoteResponse(
                ErrorCode.FENCED_LEADER_EPOCH,
                quorum.leader_id,
                quorum.epoch,
                False,
                request.correlation_id,
            )
        # RAFT-18: an observer has no vote to give (candidates ask only the voters; a request
        # that reaches an observer anyway is answered, never granted)
        granted = quorum.is_voter and can_grant_vote(quorum.voter_state(), request)
        if not request.pre_vote:  # a pre-vote changes nothing (RAFT-4)
            if request.candidate_epoch > quorum.epoch:
                quorum.transition_to_unattached(request.candidate_epoch, now_ms)
            if granted:  # on disk before the answer leaves (RAFT-3)
                quorum.transition_to_unattached_voted(request.candidate_id, now_ms)
        return VoteResponse(
            ErrorCode.NO_ERROR, quorum.leader_id, quorum.epoch, granted, request.correlation_id
        )

    def _handle_begin_quorum_epoch_request(
        self, request: BeginQuorumEpochRequest, now_ms: int
    ) -> BeginQuorumEpochResponse:
        quorum = self.quorum
        error = ErrorCode.NO_ERROR
        if request.leader_epoch < quorum.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
        else:
            self._maybe_transition(request.leader_id, request.leader_epoch, now_ms)
        return BeginQuorumEpochResponse(
            error, quorum.leader_id, quorum.epoch, request.correlation_id
        )

    def _handle_end_quorum_epoch_request(
        self, request: EndQuorumEpochRequest, now_ms: int
    ) -> EndQuorumEpochResponse:
        quorum = self.quorum
        if request.leader_epoch < quorum.epoch:
            error = ErrorCode.FENCED_LEADER_EPOCH
            return EndQuorumEpochResponse(
                error, quorum.leader_id, quorum.epoch, request.correlation_id
            )
        self._maybe_transition(request.leader_id, request.leader_epoch, now_ms)
        state = quorum.state
        if isinstance(state, FollowerState) and state.leader_id == request.leader_id:
            # the leader is going: the most caught-up successor starts first
            successors = request.preferred_successors
            position = successors.index(self.local_id) if self.local_id in successors else None
            backoff = 0
            if position is None or position > 0:
                backoff = quorum.election_backoff_ms() * (position or len(successors) or 1)
            state.fetch_deadline_ms = min(state.fetch_deadline_ms, now_ms + backoff)
        return EndQuorumEpochResponse(
            ErrorCode.NO_ERROR, quorum.leader_id, quorum.epoch, request.correlation_id
        )

    def _handle_fetch_request(self, request: FetchRequest, now_ms: int) -> FetchResponse:
        """The leader answers a voter's or an observer's fetch alike (RAFT-19)."""
        quorum = self.quorum
        leader = quorum.state

        def error(code: ErrorCode) -> FetchResponse:
            return FetchResponse(
                code, quorum.leader_id, quorum.epoch, correlation_id=request.correlation_id
            )

        if request.current_leader_epoch < quorum.epoch:
            return error(ErrorCode.FENCED_LEADER_EPOCH)
        if request.current_leader_epoch > quorum.epoch:
            return error(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if not isinstance(leader, LeaderState):
            return error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        snapshot_id = snapshot_for_fetch(self.log, request.fetch_offset, request.last_fetched_epoch)
        if snapshot_id is not None:  # RAFT-23: below the log start, load the snapshot first
            leader.update_check_quorum(request.replica_id, now_ms)
            return FetchResponse(
                ErrorCode.NO_ERROR,
                self.local_id,
                leader.epoch,
                quorum.high_watermark,
                snapshot_id=snapshot_id,
                correlation_id=request.correlation_id,
            )
        diverging = validate_offset_and_epoch(
            self.log, request.fetch_offset, request.last_fetched_epoch
        )
        if diverging is not None:  # RAFT-7: the follower truncates first
            return FetchResponse(
                ErrorCode.NO_ERROR,
                self.local_id,
                leader.epoch,
                quorum.high_watermark,
                diverging_epoch=diverging,
                correlation_id=request.correlation_id,
            )
        leader.update_replica_state(
            request.replica_id, request.fetch_offset, now_ms, request.replica_directory_id
        )
        self._maybe_advance_high_watermark(leader)
        return FetchResponse(
            ErrorCode.NO_ERROR,
            self.local_id,
            leader.epoch,
            quorum.high_watermark,
            self.log.read(request.fetch_offset, request.max_bytes),
            correlation_id=request.correlation_id,
        )

    def _handle_fetch_snapshot_request(
        self, request: FetchSnapshotRequest, now_ms: int
    ) -> FetchSnapshotResponse:
        """The leader serves a chunk of a snapshot (Kafka: `handleFetchSnapshotRequest`)."""
        quorum = self.quorum
        leader = quorum.state

        def error(code: ErrorCode) -> FetchSnapshotResponse:
            return FetchSnapshotResponse(
                code, quorum.leader_id, quorum.epoch, correlation_id=request.correlation_id
            )

        if request.current_leader_epoch < quorum.epoch:
            return error(ErrorCode.FENCED_LEADER_EPOCH)
        if request.current_leader_epoch > quorum.epoch:
            return error(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if not isinstance(leader, LeaderState):
            return error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        data = self.log.read_snapshot(request.snapshot_id)
        if data is None:  # cleaned since the fetch named it: the follower fetches again
            return error(ErrorCode.SNAPSHOT_NOT_FOUND)
        if not 0 <= request.position <= len(data):
            return error(ErrorCode.POSITION_OUT_OF_RANGE)
        leader.update_check_quorum(request.replica_id, now_ms)
        chunk = data[request.position : request.position + max(request.max_bytes, 1)]
        return FetchSnapshotResponse(
            ErrorCode.NO_ERROR,
            self.local_id,
            leader.epoch,
            request.snapshot_id,
            len(data),
            request.position,
            chunk,
            request.correlation_id,
        )

    def _handle_response(
        self, source: int, request: RaftRequest, response: RaftResponse, now_ms: int
    ) -> None:
        if self._maybe_transition(response.leader_id, response.leader_epoch, now_ms):
            return
        if response.error_code != ErrorCode.NO_ERROR or response.leader_epoch != self.quorum.epoch:
            if isinstance(response, (FetchResponse, FetchSnapshotResponse)):
                self._next_fetch_ms = now_ms + self.config.fetch_backoff_ms
            state = self.quorum.state
            if isinstance(response, FetchSnapshotResponse) and isinstance(state, FollowerState):
                state.fetching_snapshot = None  # gone or moved on: ask the log again
            return
        state = self.quorum.state
        if isinstance(response, VoteResponse):
            assert isinstance(request, VoteRequest)
            self._handle_vote_response(source, request, response, now_ms)
        elif isinstance(response, BeginQuorumEpochResponse):
            if isinstance(state, LeaderState):
                state.acknowledged.add(source)
        elif isinstance(response, EndQuorumEpochResponse):
            if isinstance(state, ResignedState):
                state.unacknowledged.discard(source)
        elif isinstance(response, FetchResponse) and isinstance(state, FollowerState):
            # no error in our epoch: the epoch's leader answered, whatever peer id it was
            # asked under (an observer may reach it as a bootstrap server)
            self._handle_fetch_response(state, response, now_ms)
        elif isinstance(response, FetchSnapshotResponse) and isinstance(state, FollowerState):
            self._handle_fetch_snapshot_response(state, response, now_ms)

    def _handle_vote_response(
        self, source: int, request: VoteRequest, response: VoteResponse, now_ms: int
    ) -> None:
        state = self.quorum.state
        if request.pre_vote and isinstance(state, ProspectiveState):
            if request.candidate_epoch != state.epoch + 1:
                return
            state.epoch_election.record_vote(source, response.vote_granted)
            if state.epoch_election.is_vote_granted():
                self._on_pre_vote_granted(now_ms)
            elif state.epoch_election.is_vote_rejected():
                self._prospective_lost(now_ms)
        elif not request.pre_vote and isinstance(state, CandidateState):
            if request.candidate_epoch != state.epoch:
                return
            state.epoch_election.record_vote(source, response.vote_granted)
            if state.epoch_election.is_vote_granted():
                self._on_become_leader(now_ms)
            elif state.epoch_election.is_vote_rejected():  # lost: back off, then retry
                backoff = now_ms + self.quorum.election_backoff_ms()
                state.election_deadline_ms = min(state.election_deadline_ms, backoff)

    def _handle_fetch_response(
        self, state: FollowerState, response: FetchResponse, now_ms: int
    ) -> None:
        state.reset_fetch_timeout(now_ms, self.config.fetch_timeout_ms)
        self._next_fetch_ms = now_ms
        if response.snapshot_id is not None:  # RAFT-23: copy the leader's snapshot first
            state.fetching_snapshot = (response.snapshot_id, bytearray())
            return
        if response.diverging_epoch is not None:  # RAFT-7
            offset = truncation_offset(self.log, response.diverging_epoch)
            # what is below the high watermark is committed: a leader asking to cut it is a
            # broken invariant (Kafka: `handleFetchResponse` throws)
            assert offset >= self.quorum.high_watermark, (
                f"{self.local_id}: truncation to {offset}, below the high watermark "
                f"{self.quorum.high_watermark}"
            )
            self.log.truncate_to(offset)
            self.log.flush()
            # No high watermark from this answer: below the new end the log may still part
            # from the leader's (a follower that lacks the epoch cuts to an older epoch's
            # end, and the next fetch checks again). Kafka takes it only with records.
            return
        if response.records:
            self.log.append_as_follower(response.records)
            self.log.flush()  # before the next fetch tells the leader (RAFT-8)
        else:
            self._next_fetch_ms = now_ms + self.config.fetch_backoff_ms
        # the leader accepted the fetch: below its end this log is the leader's (RAFT-6)
        self.quorum.update_high_watermark(min(response.high_watermark, self.log.end_offset))

    def _handle_fetch_snapshot_response(
        self, state: FollowerState, response: FetchSnapshotResponse, now_ms: int
    ) -> None:
        """A chunk of the snapshot; the last one installs it (Kafka:
        `handleFetchSnapshotResponse`): the file, the log emptied to start at its end, the
        high watermark at least there (the leader snapshots only what it committed)."""
        state.reset_fetch_timeout(now_ms, self.config.fetch_timeout_ms)
        self._next_fetch_ms = now_ms
        fetching = state.fetching_snapshot
        if fetching is None or response.snapshot_id != fetching[0]:
            return
        snapshot_id, copied = fetching
        if response.position != len(copied):
            state.fetching_snapshot = None  # not the chunk asked for: start over
            return
        copied += response.unaligned_records
        if len(copied) < response.size:
            return
        state.fetching_snapshot = None
        # a follower sent a snapshot lacks a committed record at or past the snapshot's end
        # (its fetch fell below the leader's log start, or its epochs are older): nothing
        # it counts as committed lies past the snapshot, where the emptied log would lose it
        assert self.quorum.high_watermark <= snapshot_id.offset, (
            f"{self.local_id}: a snapshot at {snapshot_id.offset}, below the high watermark "
            f"{self.quorum.high_watermark}"
        )
        self.log.install_snapshot(snapshot_id, bytes(copied))
        self.quorum.update_high_watermark(snapshot_id.offset)


def _with_correlation_id(request: RaftRequest, correlation_id: int) -> RaftRequest:
    return replace(request, correlation_id=correlation_id)
