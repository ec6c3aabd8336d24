"""Fetch (API key 1): consumers and follower replicas read record batches from a log.

A Fetch names, per topic and partition, the `fetch_offset` to read from and a byte budget
(`partition_max_bytes`, and `max_bytes` over the whole response). The broker answers with
RECORDS: whole record batches starting at the batch that *contains* `fetch_offset` (the client
drops the earlier records itself), read straight from the segment file. Because the broker
never re-encodes records, a fetch response is a small header plus file slices, which Kafka
sends with `sendfile` (zero copy).

Fetch is also a long poll: the broker may hold the request up to `max_wait_ms` until at least
`min_bytes` are available, so idle consumers do not spin. Followers use the same API with
their `replica_id`; that is how replication works (the leader learns the follower's log end
offset from its fetch offset).

Per partition the response reports `high_watermark` (the last committed offset + 1),
`last_stable_offset` (v4+, the bound for read_committed consumers: the first offset of the
oldest open transaction), `log_start_offset` (v5+) and `aborted_transactions` (v4+, nullable)
so read_committed consumers can drop records of aborted transactions.

Version history (Kafka's JSON comments): v4 adds isolation_level and requires record batch v2;
v5 log_start_offset; v7 incremental fetch sessions (KIP-227: `session_id`/`session_epoch`,
`forgotten_topics_data`; a broker may always answer session_id 0 = "no session"); v9
current_leader_epoch (KIP-320); v10 allows zstd (KIP-110); v11 rack_id and
preferred_read_replica (KIP-392); v12 is flexible and adds last_fetched_epoch and leader
hints; v13 uses topic ids; v15 ReplicaState; v17 directory ids; v18 high-watermark hints.
Versions 0-3 were removed in Kafka 4.0, whose baseline is v4 (KIP-896).

Note `throttle_time_ms` comes *first* in the Fetch response. kafka-ref declares 4-18, all of
Kafka 4.4's (server/handlers/fetch_partitions.py reads the versions' differences: BROKER-65..
BROKER-69); keeping 10 in range matters (kafka-python infers broker 2.1 from FetchRequest
v10, which unlocks zstd).

Kafka's definitions: FetchRequest.json, FetchResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

FetchRequest = Message(
    "FetchRequest",
    api_key=1,
    valid_versions="4-18",
    flexible_versions="12+",
    listeners=("broker", "controller"),
    fields=[
        Field(
            "ClusterId",
            "string",
            "12+",
            nullable_versions="12+",
            default=None,
            tagged_versions="12+",
            tag=0,
            about="The clusterId if known, to validate metadata fetches before registration.",
        ),
        Field("ReplicaId", "int32", "0-14", default=-1, about="The follower's id, -1 if consumer."),
        Field(
            "ReplicaState",
            "ReplicaState",
            "15+",
            tagged_versions="15+",
            tag=1,
            about="The state of the replica in the follower.",
            fields=[
                Field("ReplicaId", "int32", "15+", default=-1, about="The follower's id or -1."),
                Field("ReplicaEpoch", "int64", "15+", default=-1, about="The follower's epoch."),
            ],
        ),
        Field("MaxWaitMs", "int32", "0+", about="The maximum time in ms to wait for the response."),
        Field("MinBytes", "int32", "0+", about="The minimum bytes to accumulate in the response."),
        Field("MaxBytes", "int32", "3+", default=0x7FFFFFFF, about="The maximum bytes (KIP-74)."),
        Field(
            "IsolationLevel",
            "int8",
            "4+",
            default=0,
            about="0 = READ_UNCOMMITTED, 1 = READ_COMMITTED (only up to the LSO).",
        ),
        Field("SessionId", "int32", "7+", default=0, about="The fetch session ID."),
        Field("SessionEpoch", "int32", "7+", default=-1, about="The fetch session epoch."),
        Field(
            "Topics",
            "[]FetchTopic",
            "0+",
            about="The topics to fetch.",
            fields=[
                Field("Topic", "string", "0-12", about="The name of the topic to fetch."),
                Field("TopicId", "uuid", "13+", about="The unique topic ID."),
                Field(
                    "Partitions",
                    "[]FetchPartition",
                    "0+",
                    about="The partitions to fetch.",
                    fields=[
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field(
                            "CurrentLeaderEpoch",
                            "int32",
                            "9+",
                            default=-1,
                            about="The current leader epoch of the partition.",
                        ),
                        Field("FetchOffset", "int64", "0+", about="The message offset."),
                        Field(
                            "LastFetchedEpoch",
                            "int32",
                            "12+",
                            default=-1,
                            about="The epoch of the last fetched record or -1 if there is none.",
                        ),
                        Field(
                            "LogStartOffset",
                            "int64",
                            "5+",
                            default=-1,
                            about="The follower's log start offset (only sent by followers).",
                        ),
                        Field(
                            "PartitionMaxBytes",
                            "int32",
                            "0+",
                            about="The maximum bytes to fetch from this partition (KIP-74).",
                        ),
                        Field(
                            "ReplicaDirectoryId",
                            "uuid",
                            "17+",
                            tagged_versions="17+",
                            tag=0,
                            about="The directory id of the follower fetching.",
                        ),
                        Field(
                            "HighWatermark",
                            "int64",
                            "18+",
                            default=0x7FFFFFFFFFFFFFFF,
                            tagged_versions="18+",
                            tag=1,
                            about="The high-watermark known by the replica.",
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "ForgottenTopicsData",
            "[]ForgottenTopic",
            "7+",
            about="In an incremental fetch request, the partitions to remove.",
            fields=[
                Field("Topic", "string", "7-12", about="The topic name."),
                Field("TopicId", "uuid", "13+", about="The unique topic ID."),
                Field("Partitions", "[]int32", "7+", about="The partitions indexes to forget."),
            ],
        ),
        Field("RackId", "string", "11+", default="", about="Rack ID of the consumer."),
    ],
)

FetchResponse = Message(
    "FetchResponse",
    api_key=1,
    valid_versions="4-18",
    flexible_versions="12+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "7+", about="The top level response error code."),
        Field("SessionId", "int32", "7+", default=0, about="The fetch session ID, or 0."),
        Field(
            "Responses",
            "[]FetchableTopicResponse",
            "0+",
            about="The response topics.",
            fields=[
                Field("Topic", "string", "0-12", about="The topic name."),
                Field("TopicId", "uuid", "13+", about="The unique topic ID."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The topic partitions.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field("HighWatermark", "int64", "0+", about="The current high watermark."),
                        Field(
                            "LastStableOffset",
                            "int64",
                            "4+",
                            default=-1,
                            about="The last stable offset (LSO) of the partition.",
                        ),
                        Field(
                            "LogStartOffset",
                            "int64",
                            "5+",
                            default=-1,
                            about="The current log start offset.",
                        ),
                        Field(
                            "DivergingEpoch",
                            "EpochEndOffset",
                            "12+",
                            tagged_versions="12+",
                            tag=0,
                            about="Where the follower's log diverges from the leader's.",
                            fields=[
                                Field("Epoch", "int32", "12+", default=-1, about="The epoch."),
                                Field("EndOffset", "int64", "12+", default=-1, about="Its end."),
                            ],
                        ),
                        Field(
                            "CurrentLeader",
                            "LeaderIdAndEpoch",
                            "12+",
                            tagged_versions="12+",
                            tag=1,
                            about="The current leader of the partition.",
                            fields=[
                                Field("LeaderId", "int32", "12+", default=-1, about="Leader id."),
                                Field("LeaderEpoch", "int32", "12+", default=-1, about="Epoch."),
                            ],
                        ),
                        Field(
                            "SnapshotId",
                            "SnapshotId",
                            "12+",
                            tagged_versions="12+",
                            tag=2,
                            about="The snapshot to fetch when below the log start offset.",
                            fields=[
                                Field("EndOffset", "int64", "0+", default=-1, about="End offset."),
                                Field("Epoch", "int32", "0+", default=-1, about="The epoch."),
                            ],
                        ),
                        Field(
                            "AbortedTransactions",
                            "[]AbortedTransaction",
                            "4+",
                            nullable_versions="4+",
                            about="The aborted transactions (for read_committed consumers).",
                            fields=[
                                Field("ProducerId", "int64", "4+", about="The producer id."),
                                Field("FirstOffset", "int64", "4+", about="The first offset."),
                            ],
                        ),
                        Field(
                            "PreferredReadReplica",
                            "int32",
                            "11+",
                            default=-1,
                            about="The replica the consumer should fetch from next (KIP-392).",
                        ),
                        Field(
                            "Records",
                            "records",
                            "0+",
                            nullable_versions="0+",
                            about="The record data.",
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "NodeEndpoints",
            "[]NodeEndpoint",
            "16+",
            tagged_versions="16+",
            tag=0,
            about="Endpoints of the current leaders named in leader errors (KIP-951).",
            fields=[
                Field("NodeId", "int32", "16+", about="The ID of the associated node."),
                Field("Host", "string", "16+", about="The node's hostname."),
                Field("Port", "int32", "16+", about="The node's port."),
                Field(
                    "Rack",
                    "string",
                    "16+",
                    nullable_versions="16+",
                    default=None,
                    about="The rack of the node, or null.",
                ),
            ],
        ),
    ],
)
