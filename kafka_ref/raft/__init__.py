"""KRaft's quorum: Raft as KIP-595 specifies it (with KIP-996's pre-vote), as a pure core.

`KafkaRaftClient` is one voter: message values in (messages.py), message values out, time
passed in, randomness injected. `QuorumState` and the epoch states are its state machine,
`ElectionState` the `quorum-state` file, `KafkaRaftLog` its log on kafka-ref's own
partition log, with its snapshots (KIP-630). The simulator in kafka_ref/sim/raft_cluster.py
runs several of them.
"""

from kafka_ref.raft.election_state import ElectionState, FileQuorumStateStore
from kafka_ref.raft.kafka_raft_client import KafkaRaftClient
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.quorum_config import QuorumConfig

__all__ = [
    "ElectionState",
    "FileQuorumStateStore",
    "KafkaRaftClient",
    "KafkaRaftLog",
    "QuorumConfig",
]
