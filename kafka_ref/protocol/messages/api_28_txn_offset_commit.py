"""TxnOffsetCommit (API key 28): offsets committed inside a transaction (KIP-98, KIP-447).

After AddOffsetsToTxn, the producer sends the group's offsets to the *group* coordinator,
with its transactional id, producer id and epoch. The group coordinator writes them to
`__consumer_offsets` as a transactional batch of that producer, and keeps them *pending*:
OffsetFetch does not see them until the commit marker reaches that partition; an abort
marker drops them. So a consumer that takes over the partitions starts from the input
position of the last *committed* transaction.

KIP-447 (v3) adds the group's generation, member id and group instance id, so a producer
whose consumer was fenced out of the group by a rebalance cannot commit offsets for
partitions it no longer owns (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).

Errors, per partition: INVALID_PRODUCER_EPOCH (47) or PRODUCER_FENCED (90, v3+),
NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS (14), OFFSET_METADATA_TOO_LARGE (12),
CONCURRENT_TRANSACTIONS (51), ILLEGAL_GENERATION (22), UNKNOWN_MEMBER_ID (25).

Version history (Kafka's JSON comments): v1 = v0; v2 committed leader epoch; v3 flexible,
with generation, member id and group instance id (KIP-447); v4 TRANSACTION_ABORTABLE;
v5 KIP-890's implicit AddOffsetsToTxn; v6 topic ids. kafka-ref declares 0-5: librdkafka
(`rd_kafka_txn_send_TxnOffsetCommitRequest`) and kafka-python 3 send at most v3 with the
consumer's generation, member id and group instance id; the Java client 3.8+ sends v4
(the same fields: v4 only allows an error kafka-ref never answers), and v5 when the cluster
finalized `transaction.version` 2: the group's partition is then added to the transaction
for it, without AddOffsetsToTxn (TXN-95). v6 names topics by id only, which kafka-ref's
TxnOffsetCommit does not.

Kafka's definitions: TxnOffsetCommitRequest.json, TxnOffsetCommitResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

TxnOffsetCommitRequest = Message(
    "TxnOffsetCommitRequest",
    api_key=28,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field("TransactionalId", "string", "0+", about="The transactional id."),
        Field("GroupId", "string", "0+", about="The group id."),
        Field("ProducerId", "int64", "0+", about="The producer id."),
        Field("ProducerEpoch", "int16", "0+", about="The producer's epoch."),
        Field("GenerationId", "int32", "3+", default=-1, about="The group's generation."),
        Field("MemberId", "string", "3+", default="", about="The member id."),
        Field(
            "GroupInstanceId",
            "string",
            "3+",
            nullable_versions="3+",
            default=None,
            about="The static member's instance id, or null.",
        ),
        Field(
            "Topics",
            "[]TxnOffsetCommitRequestTopic",
            "0+",
            about="The topics to commit offsets for.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]TxnOffsetCommitRequestPartition",
                    "0+",
                    about="The partitions.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("CommittedOffset", "int64", "0+", about="The offset to commit."),
                        Field(
                            "CommittedLeaderEpoch",
                            "int32",
                            "2+",
                            default=-1,
                            about="The leader epoch of the last consumed record, or -1.",
                        ),
                        Field(
                            "CommittedMetadata",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="Metadata stored with the offset.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

TxnOffsetCommitResponse = Message(
    "TxnOffsetCommitResponse",
    api_key=28,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "Topics",
            "[]TxnOffsetCommitResponseTopic",
            "0+",
            about="The responses for each topic.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "Partitions",
                    "[]TxnOffsetCommitResponsePartition",
                    "0+",
                    about="The responses for each partition.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                    ],
                ),
            ],
        ),
    ],
)
