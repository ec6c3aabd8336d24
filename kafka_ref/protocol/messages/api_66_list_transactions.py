"""ListTransactions (API key 66): the transactional ids a coordinator knows (KIP-664).

An operator asks every broker (each coordinates the ids of the `__transaction_state`
partitions it leads) and may filter by state names and producer ids; v1 adds a duration
filter: only transactions running longer than that many milliseconds, the way to find a
hanging transaction. State names the broker does not know come back in
`unknown_state_filters`.

Version history (Kafka's JSON comments): v0 flexible; v1 `DurationFilter` (KIP-994); v2
`TransactionalIdPattern` (KIP-1152), matched against the whole id. kafka-ref declares 0-2,
as Kafka 4.4 (TXN-86).

Kafka's definitions: ListTransactionsRequest.json, ListTransactionsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ListTransactionsRequest = Message(
    "ListTransactionsRequest",
    api_key=66,
    valid_versions="0-2",
    flexible_versions="0+",
    fields=[
        Field("StateFilters", "[]string", "0+", about="Only these states (empty: all)."),
        Field("ProducerIdFilters", "[]int64", "0+", about="Only these producer ids (empty: all)."),
        Field(
            "DurationFilter",
            "int64",
            "1+",
            default=-1,
            about="Only transactions running longer than this many ms (-1: all).",
        ),
        Field(
            "TransactionalIdPattern",
            "string",
            "2+",
            nullable_versions="2+",
            default=None,
            about="Only transactional ids matching this regular expression.",
        ),
    ],
)

ListTransactionsResponse = Message(
    "ListTransactionsResponse",
    api_key=66,
    valid_versions="0-2",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field("UnknownStateFilters", "[]string", "0+", about="State filters not understood."),
        Field(
            "TransactionStates",
            "[]TransactionState",
            "0+",
            about="The transactional ids.",
            fields=[
                Field("TransactionalId", "string", "0+", about="The transactional id."),
                Field("ProducerId", "int64", "0+", about="The producer id."),
                Field("TransactionState", "string", "0+", about="Its state (Kafka's name)."),
            ],
        ),
    ],
)
