"""DescribeTransactions (API key 65): a transaction coordinator's view of transactional ids
(KIP-664).

For each transactional id it coordinates, the coordinator answers the state
("Ongoing", "PrepareCommit", ... as in kafka_ref/txn/transaction_metadata.py), the
transaction timeout, when the transaction started, the producer id and epoch, and the
partitions in the transaction. Like every coordinator request it goes to the id's
coordinator (FindCoordinator key type 1).

Errors, per id: NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS (14),
TRANSACTIONAL_ID_NOT_FOUND (105).

Version history (Kafka's JSON comments): v0 only, flexible. kafka-ref declares 0.

Kafka's definitions: DescribeTransactionsRequest.json, DescribeTransactionsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DescribeTransactionsRequest = Message(
    "DescribeTransactionsRequest",
    api_key=65,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("TransactionalIds", "[]string", "0+", about="The transactional ids to describe."),
    ],
)

DescribeTransactionsResponse = Message(
    "DescribeTransactionsResponse",
    api_key=65,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field(
            "TransactionStates",
            "[]TransactionState",
            "0+",
            about="The state of each transactional id.",
            fields=[
                Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                Field("TransactionalId", "string", "0+", about="The transactional id."),
                Field("TransactionState", "string", "0+", about="Its state (Kafka's name)."),
                Field("TransactionTimeoutMs", "int32", "0+", about="Its transaction timeout."),
                Field("TransactionStartTimeMs", "int64", "0+", about="When it began, or -1."),
                Field("ProducerId", "int64", "0+", about="The producer id."),
                Field("ProducerEpoch", "int16", "0+", about="The producer epoch."),
                Field(
                    "Topics",
                    "[]TopicData",
                    "0+",
                    about="The partitions in the transaction.",
                    fields=[
                        Field("Topic", "string", "0+", about="The topic name."),
                        Field("Partitions", "[]int32", "0+", about="The partition indexes."),
                    ],
                ),
            ],
        ),
    ],
)
