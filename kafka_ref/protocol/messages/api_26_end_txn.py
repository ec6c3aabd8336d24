"""EndTxn (API key 26): a transactional producer commits or aborts its transaction (KIP-98).

The coordinator writes PrepareCommit or PrepareAbort to `__transaction_state` (the
decision), answers, then writes the markers into every partition of the transaction with
WriteTxnMarkers and logs CompleteCommit or CompleteAbort. A retried EndTxn for a decision
already made answers NO_ERROR once it is complete and CONCURRENT_TRANSACTIONS while the
markers are still being written.

Errors: INVALID_TXN_STATE (48: no transaction, or the other outcome was decided),
INVALID_PRODUCER_ID_MAPPING (49), INVALID_PRODUCER_EPOCH (47) or PRODUCER_FENCED (90, v2+),
CONCURRENT_TRANSACTIONS (51), NOT_COORDINATOR (16), COORDINATOR_LOAD_IN_PROGRESS (14).

Version history (Kafka's JSON comments): v1 = v0; v2 may answer PRODUCER_FENCED; v3
flexible; v4 TRANSACTION_ABORTABLE; v5 answers a new producer id and epoch, bumped on
every transaction (KIP-890 part 2). kafka-ref declares 0-5, as Kafka 4.4: a client sends
v5 when the cluster finalized `transaction.version` 2, and the coordinator then bumps the
epoch at every end, answering the next transaction's producer id and epoch (TXN-92; v0-v4
keep the epoch, TXN-85).

Kafka's definitions: EndTxnRequest.json, EndTxnResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

EndTxnRequest = Message(
    "EndTxnRequest",
    api_key=26,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field("TransactionalId", "string", "0+", about="The transactional id."),
        Field("ProducerId", "int64", "0+", about="The producer id."),
        Field("ProducerEpoch", "int16", "0+", about="The producer's epoch."),
        Field("Committed", "bool", "0+", about="True to commit, false to abort."),
    ],
)

EndTxnResponse = Message(
    "EndTxnResponse",
    api_key=26,
    valid_versions="0-5",
    flexible_versions="3+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field("ProducerId", "int64", "5+", default=-1, about="The producer id (KIP-890)."),
        Field("ProducerEpoch", "int16", "5+", default=-1, about="The bumped epoch (KIP-890)."),
    ],
)
