"""Consumer groups: how consumers share a topic's partitions and remember their progress.

This package is the broker side of Kafka's consumer-group protocol, the group coordinator
(spec/rebalance.md, spec/offsets.md): `messages.py` (the requests and answers of a
rebalance, as values), `group_metadata.py` (a group, its member records, its states and
their named transitions), `rebalance.py` (`GroupRebalance`: the one state machine of
members, sessions, JoinGroup, SyncGroup, Heartbeat and LeaveGroup, with its timers),
`coordinator.py` (`GroupCoordinator`: committed offsets, admin calls, partition lifecycle),
`group_metadata_manager.py` (groups and offsets kept as records of the compacted
`__consumer_offsets` topic) and `offsets_records.py` (those records' bytes).

KIP-848's consumer group protocol (spec/consumer_group.md) sits beside it, sharing the
cache and the offsets: `consumer_group.py` (a group and its members as values: epochs,
target, ownership), `reconciliation.py` (a member's move towards its target, revoke before
assign), `consumer_group_assignors.py` (the server-side `uniform` and `range`),
`consumer_group_coordinator.py` (ConsumerGroupHeartbeat and its timers) and
`consumer_group_records.py` (its records in `__consumer_offsets`).

The partition assignors the classic group's leader runs are client code (kafka_ref/client/assignors,
spec/group_assignors.md); the bytes members exchange through the coordinator are the consumer
protocol (kafka_ref/protocol/consumer_protocol.py).

Everything here is a pure core: no sockets, no threads, no wall clock. Time comes from an
injected `Clock`, timers from an injected `Scheduler` (kafka_ref/clock.py).
"""
