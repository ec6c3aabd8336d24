"""The storage engine: a partition's log on disk.

Read in this order: `file_records` (a segment's .log file), `abstract_index`,
`offset_index` and `time_index` (the sparse indexes), `segment` (LogSegment), `validator`
(checking and numbering an append), `log` (UnifiedLog), `recovery` (LogLoader),
`checkpoints` (OffsetCheckpointFile) and `log_manager` (LogManager). Retention and
compaction build on the log: `retention`, `offset_map`, `cleaner`. Idempotent and
transactional producers plug into the log (`log.ProducerStateHooks`): `producer_entry` (one
producer's state and the checks), `producer_snapshot` files, `txn_index` (each segment's
aborted transactions), `producer_state` (ProducerStateManager, a broker's logs' producer
state) and `isolation` (what read_committed reads).
"""
