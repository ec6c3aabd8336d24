"""Consumer groups: how consumers share a topic's partitions and remember their progress.

This package holds both sides of Kafka's consumer-group protocol:

- `assignors/`: the client-side partition assignors (range, round-robin, sticky,
  cooperative-sticky) that the group leader runs to split partitions among members
  (spec/group_assignors.md);
- the broker-side group coordinator (spec/rebalance.md, spec/offsets.md):
  `group_metadata.py` (a group, its members and its state machine), `membership.py`
  (members, sessions, Heartbeat, LeaveGroup), `rebalance.py` (JoinGroup / SyncGroup: the
  rebalance protocol),
  `coordinator.py` (`GroupCoordinator`: committed offsets, admin calls, partition
  lifecycle), `group_metadata_manager.py` (groups and offsets kept as records of the
  compacted `__consumer_offsets` topic) and `offsets_records.py` (those records' bytes).

Everything here is a pure core: no sockets, no threads, no wall clock. Time comes from an
injected `Clock`, timers from an injected `Scheduler` (kafka_ref/clock.py).
"""
