"""KRaft's cluster metadata: the `__cluster_metadata` log's records and the state they build.

Read in this order: `records` (the record types, declared like Kafka's JSON), `serde` (a
record's bytes: frame, type, version, message), `batches` (records in v2 batches as a Raft
leader writes them), `snapshot` (KIP-630: the state at an offset, as a file of batches),
`image` (the records folded into the cluster's state: `MetadataImage`, `MetadataDelta`).
The Raft quorum that replicates the log is not here: this package knows the log's contents,
not how it is agreed on.
"""
