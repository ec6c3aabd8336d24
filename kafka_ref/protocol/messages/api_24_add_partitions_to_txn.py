"""AddPartitionsToTxn (API key 24): a transactional producer names a partition before it
writes to it (KIP-98).

The transaction coordinator must know every partition a transaction touches, because it
will write a commit or abort marker into each of them. So before the first produce to a
partition in a transaction, the producer sends its transactional id, producer id and
epoch and the new partitions to its coordinator, which records them in
`__transaction_state` (state Ongoing) before answering.

Errors, per partition (the whole request fails together): INVALID_PRODUCER_ID_MAPPING
(49), INVALID_PRODUCER_EPOCH (47) or PRODUCER_FENCED (90, v2+), CONCURRENT_TRANSACTIONS
(51, retriable: the previous transaction is still completing), INVALID_TXN_STATE (48),
NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS (14), COORDINATOR_NOT_AVAILABLE (15),
INVALID_REQUEST (42).

Version history (Kafka's JSON comments): v1 = v0 (throttle before response); v2 may
answer PRODUCER_FENCED; v3 flexible; v4 batches several transactions, sent by brokers to
verify a partition (KIP-890 part 1); v5 TRANSACTION_ABORTABLE. kafka-ref declares 0-5, as
Kafka 4.4: librdkafka sends v0, kafka-python up to v2, the Java client v3 (clients send at
most v3); v4 and v5 come from a partition leader asking the coordinator whether a
partition is in a transaction (`verify_only`, TXN-23), and their response has a top-level
error and one result per transaction (TXN-85).

Kafka's definitions: AddPartitionsToTxnRequest.json, AddPartitionsToTxnResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AddPartitionsToTxnRequest = Message(
    "AddPartitionsToTxnRequest",
    api_key=24,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field(
            "Transactions",
            "[]AddPartitionsToTxnTransaction",
            "4+",
            about="The transactions to verify or add to (brokers, KIP-890).",
            fields=[
                Field("TransactionalId", "string", "4+", about="The transactional id."),
                Field("ProducerId", "int64", "4+", about="The producer id."),
                Field("ProducerEpoch", "int16", "4+", about="The producer's epoch."),
                Field("VerifyOnly", "bool", "4+", default=False, about="Only verify."),
                Field(
                    "Topics",
                    "[]AddPartitionsToTxnTopic",
                    "4+",
                    about="The partitions.",
                    fields=[
                        Field("Name", "string", "0+", about="The topic name."),
                        Field("Partitions", "[]int32", "0+", about="The partition indexes."),
                    ],
                ),
            ],
        ),
        Field("V3AndBelowTransactionalId", "string", "0-3", about="The transactional id."),
        Field("V3AndBelowProducerId", "int64", "0-3", about="The producer id."),
        Field("V3AndBelowProducerEpoch", "int16", "0-3", about="The producer's epoch."),
        Field(
            "V3AndBelowTopics",
            "[]AddPartitionsToTxnTopic",
            "0-3",
            about="The partitions to add to the transaction.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field("Partitions", "[]int32", "0+", about="The partition indexes."),
            ],
        ),
    ],
)

AddPartitionsToTxnResponse = Message(
    "AddPartitionsToTxnResponse",
    api_key=24,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "4+", about="The response top level error code."),
        Field(
            "ResultsByTransaction",
            "[]AddPartitionsToTxnResult",
            "4+",
            about="The results for each transaction (v4+).",
            fields=[
                Field("TransactionalId", "string", "4+", about="The transactional id."),
                Field(
                    "TopicResults",
                    "[]AddPartitionsToTxnTopicResult",
                    "4+",
                    about="The results for each topic.",
                    fields=[
                        Field("Name", "string", "0+", about="The topic name."),
                        Field(
                            "ResultsByPartition",
                            "[]AddPartitionsToTxnPartitionResult",
                            "0+",
                            about="The results for each partition.",
                            fields=[
                                Field("PartitionIndex", "int32", "0+", about="The index."),
                                Field("PartitionErrorCode", "int16", "0+", about="The error."),
                            ],
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "ResultsByTopicV3AndBelow",
            "[]AddPartitionsToTxnTopicResult",
            "0-3",
            about="The results for each topic.",
            fields=[
                Field("Name", "string", "0+", about="The topic name."),
                Field(
                    "ResultsByPartition",
                    "[]AddPartitionsToTxnPartitionResult",
                    "0+",
                    about="The results for each partition.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("PartitionErrorCode", "int16", "0+", about="The error code."),
                    ],
                ),
            ],
        ),
    ],
)
