"""AddOffsetsToTxn (API key 25): a transactional producer will commit a group's offsets in
its transaction (KIP-98, `sendOffsetsToTransaction`).

A consume-transform-produce application commits the consumer group's offsets *inside* the
transaction, so that its output and its input position commit together. The producer
first tells its transaction coordinator the group id; the coordinator adds the group's
`__consumer_offsets` partition to the transaction (it will get a marker like any other),
then the producer sends TxnOffsetCommit to the group coordinator.

Errors: as AddPartitionsToTxn (PRODUCER_FENCED from v2), plus INVALID_GROUP_ID (24).

Version history (Kafka's JSON comments): v1 = v0; v2 may answer PRODUCER_FENCED; v3
flexible; v4 TRANSACTION_ABORTABLE. kafka-ref declares 0-4, as Kafka 4.4 (TXN-85).

Kafka's definitions: AddOffsetsToTxnRequest.json, AddOffsetsToTxnResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AddOffsetsToTxnRequest = Message(
    "AddOffsetsToTxnRequest",
    api_key=25,
    valid_versions="0-4",
    flexible_versions="3+",
    fields=[
        Field("TransactionalId", "string", "0+", about="The transactional id."),
        Field("ProducerId", "int64", "0+", about="The producer id."),
        Field("ProducerEpoch", "int16", "0+", about="The producer's epoch."),
        Field("GroupId", "string", "0+", about="The group whose offsets join the transaction."),
    ],
)

AddOffsetsToTxnResponse = Message(
    "AddOffsetsToTxnResponse",
    api_key=25,
    valid_versions="0-4",
    flexible_versions="3+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
    ],
)
