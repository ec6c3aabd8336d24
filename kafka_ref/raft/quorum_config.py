"""The quorum's timeouts and limits (Kafka: `QuorumConfig`, `controller.quorum.*`).

* `election_timeout_ms` (controller.quorum.election.timeout.ms, 1000): how long a node
  without a leader waits before it starts an election. Each wait is drawn at random from
  [timeout, 2 x timeout) with the injected random source (Kafka:
  `QuorumState.randomElectionTimeoutMs`), so that two nodes seldom start at once and split
  the vote (RAFT-1).
* `election_jitter_ms`: the width of that random part, [timeout, timeout + jitter); None is
  Kafka's, the timeout itself. Kafka has no such setting: it is kafka-ref's knob for the
  experiment of the Raft paper's Figure 16 (how long elections take as the randomness
  shrinks; lab 10's analysis).
* `fetch_timeout_ms` (controller.quorum.fetch.timeout.ms, 2000): how long a follower goes
  without a good answer from its leader before it tries to replace it; a leader that has
  not been fetched from by a majority for 1.5 times as long resigns (Kafka's check quorum).
* `election_backoff_max_ms` (controller.quorum.election.backoff.max.ms, 1000): the longest
  random wait after a lost election before the next.
* `request_timeout_ms` (controller.quorum.request.timeout.ms, 2000): when a request that
  got no answer is given up and may be sent again.
* `fetch_max_bytes`: how much a fetch response carries at most (at least one batch).
* `fetch_backoff_ms`: how long a follower waits after an empty fetch response (Kafka's
  leader holds such a fetch up to `fetch.max.wait.ms` instead; the effect is the same).

Snapshots (KIP-630) and the log cut behind them:

* `max_bytes_between_snapshots` (metadata.log.max.record.bytes.between.snapshots, 20 MiB):
  the application writes a snapshot once it has been told this many bytes of committed
  batches since its last one (Kafka: `SnapshotGenerator`'s `maxBytesSinceLastSnapshot`);
* `max_snapshot_interval_ms` (metadata.log.max.snapshot.interval.ms, one hour): or once
  this long has passed since, if anything was committed meanwhile;
* `max_retention_bytes` (metadata.max.retention.bytes, 100 MiB) and `max_retention_ms`
  (metadata.max.retention.ms, 7 days): once the log holds more bytes, or its first record
  is older, the log start offset moves up to the latest snapshot and the segments below
  it are deleted (Kafka: `KafkaMetadataLog.maybeClean`);
* `fetch_snapshot_max_bytes`: the MaxBytes of a follower's FetchSnapshot, one chunk of a
  snapshot (Kafka: `KafkaRaftClient.MAX_FETCH_SIZE_BYTES`, 8 MiB).

The simulator runs with every time a tenth of Kafka's defaults or less, to fit many
elections in a short run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    election_timeout_ms: int = 1000
    election_jitter_ms: int | None = None
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    fetch_max_bytes: int = 8 * 1024 * 1024
    fetch_backoff_ms: int = 50
    max_bytes_between_snapshots: int = 20 * 1024 * 1024
    max_snapshot_interval_ms: int = 60 * 60 * 1000
    max_retention_bytes: int = 100 * 1024 * 1024
    max_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    fetch_snapshot_max_bytes: int = 8 * 1024 * 1024

    @property
    def check_quorum_timeout_ms(self) -> int:
        """Kafka: `LeaderState`'s `checkQuorumTimeoutMs`, 1.5 x the fetch timeout."""
        return self.fetch_timeout_ms * 3 // 2
