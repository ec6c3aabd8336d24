"""Lab 10, Raft: your vote decision and your follower truncation, in KRaft's quorum.

Replace each `raise NotImplementedError` with your code, then grade it:

    kafka-ref lab check 10

Each function takes the place of kafka-ref's own of the same name whenever
KAFKA_REF_SOLUTION names this file (the grader sets it): `can_grant_vote` in
kafka_ref/raft/vote.py, which every voter asks for each VoteRequest it receives, and
`truncation_offset` in kafka_ref/raft/replicated_log.py, which every follower asks when the
leader answers its fetch with a diverging epoch. Both run inside `KafkaRaftClient`, the
voter that the deterministic Raft simulator (kafka_ref/sim/raft_cluster.py) and a real
`process.roles=controller` node both run. From kafka_ref you may import anything but the
modules that hold these functions (beyond the names this file imports from them):
`kafka-ref lab check` refuses a solution that reaches kafka-ref's own code of them (LAB-5).
"""

from __future__ import annotations

from kafka_ref.raft.messages import OffsetAndEpoch, VoteRequest
from kafka_ref.raft.replicated_log import ReplicatedLog
from kafka_ref.raft.vote import VoterState


def can_grant_vote(voter: VoterState, request: VoteRequest) -> bool:
    """Whether `voter` grants the vote, or the pre-vote, that `request` asks for (RAFT-2,
    RAFT-4, RAFT-5; Kafka: `KafkaRaftClient.handleVoteRequest` and the epoch states'
    `canGrantVote`).

    `voter` is what the voter knows (a NamedTuple): `local_id`, its own id; `epoch`, its
    epoch; `voted_id`, whom it voted for in that epoch (itself if it is a candidate or the
    leader) or NOT_SET; `leader_id`, the leader of that epoch it knows (itself if it leads
    it, or led it and resigned) or NOT_SET; `fetched_from_leader`, whether it follows that
    leader and has fetched from it in this epoch; `last_epoch` and `end_offset`, the epoch
    of its log's last batch (-1 for an empty log) and its log end offset. NOT_SET is -1
    (kafka_ref.raft.election_state.NOT_SET).

    `request` is a VoteRequest: `candidate_id`, `candidate_epoch` (the epoch it asks the
    vote for), `last_offset_epoch` and `last_offset` (the epoch of the candidate's last
    batch and its log end offset), and `pre_vote`.

    - A request of an epoch older than the voter's: no.
    - The candidate's log must be at least as up to date as the voter's: its last epoch
      later, or the same and its end offset at least the voter's. Else no, whatever else
      holds (a vote or a pre-vote).
    - A pre-vote asks "would you vote for me in `candidate_epoch`?" and binds nothing: the
      vote already cast does not matter. The answer is no from a voter that leads its
      epoch (`leader_id` is itself) and from a follower that has fetched from its leader;
      else the log decides.
    - A vote of a later epoch than the voter's: the voter will move to that epoch, where it
      has voted for nobody and knows no leader; the log decides.
    - A vote of the voter's own epoch: no if it knows the epoch's leader; if it has voted
      in this epoch, yes only to the candidate it voted for (a retry); else the log
      decides.

    Decide only: the client moves the voter to a later epoch and records a granted vote on
    disk before it answers.
    """
    raise NotImplementedError


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    """Where a follower cuts its log when the leader answers its fetch with a diverging
    epoch (RAFT-7; Kafka: `ReplicatedLog.truncateToEndOffset`).

    The follower fetched with its log end offset and the epoch of its last batch; its log
    parts from the leader's there. The leader answered `diverging`: `diverging.epoch`, the
    largest epoch it holds up to the follower's last one, and `diverging.offset`, where
    that epoch ends on the leader's log. `log.end_offset_for_epoch(epoch)` answers the same
    question on the follower's log: an OffsetAndEpoch of the largest epoch <= `epoch` it
    holds and where that epoch ends here, or (-1, 0) when it holds none that old.

    - If the follower holds `diverging.epoch` too, the two logs agree up to where that
      epoch ends on the leader or on the follower, whichever is sooner: cut there.
    - If not, cut where the follower's own largest epoch below it ends: what follows is of
      epochs the leader never had.

    Return the offset: the client truncates the log there (removes every batch at or after
    it) and fetches again, and the leader checks again from there, until the two agree.
    """
    raise NotImplementedError
