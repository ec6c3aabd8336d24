"""Consumer groups: how consumers share a topic's partitions.

This package holds the group machinery of Kafka's consumer-group protocol:

- `assignors/`: the client-side partition assignors (range, round-robin, sticky,
  cooperative-sticky) that the group leader runs to split partitions among members
  (spec/group_assignors.md);
- later: `coordinator.py`, the broker-side group coordinator (JoinGroup / SyncGroup /
  Heartbeat state machine), and `offsets.py`, committed offsets stored in the compacted
  `__consumer_offsets` topic.

Everything here is a pure core: no sockets, no threads, no wall clock.
"""
