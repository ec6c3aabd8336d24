"""InitProducerId (API key 22): a producer asks for its producer id and epoch (KIP-98).

An idempotent producer sends this once, before its first batch: the answer is a *producer
id* (PID) unique in the cluster and an *epoch*, 0 for a fresh id. The producer stamps both,
with a per-partition sequence number, into every batch header, and each partition leader
uses them to drop retried duplicates (kafka_ref/log/producer_state.py).

A *transactional* producer sends its `transactional_id` (and transaction timeout) to its
transaction coordinator, found with FindCoordinator. The coordinator maps the id to a PID
and bumps the epoch each time, which fences any older instance of the same producer. An
idempotent producer sends a null `transactional_id` to any broker.

Errors: INVALID_REQUEST (42) for an empty transactional id; NOT_COORDINATOR (16) when the
broker is not the transactional id's coordinator; COORDINATOR_LOAD_IN_PROGRESS (14) while
it cannot hand out ids yet; INVALID_TRANSACTION_TIMEOUT (50); CONCURRENT_TRANSACTIONS (51).

Version history (Kafka's JSON comments): v1 = v0 (throttle before response); v2 flexible;
v3 adds `producer_id` and `producer_epoch`, so that a producer can bump its own epoch after
an error (KIP-360); v4 PRODUCER_FENCED; v5 TRANSACTION_ABORTABLE (KIP-890); v6 two-phase
commit (KIP-939). kafka-ref declares 0-5, as Kafka 4.4 (v6 is not stable there):
librdkafka uses v3-v4 to bump a transactional producer's epoch after an abortable error
instead of failing it (KIP-360); v5 only allows an error kafka-ref never answers (TXN-85).

Kafka's definitions: InitProducerIdRequest.json, InitProducerIdResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

InitProducerIdRequest = Message(
    "InitProducerIdRequest",
    api_key=22,
    valid_versions="0-5",
    flexible_versions="2+",
    fields=[
        Field(
            "TransactionalId",
            "string",
            "0+",
            nullable_versions="0+",
            about="The transactional id, or null for an idempotent (non-transactional) producer.",
        ),
        Field(
            "TransactionTimeoutMs",
            "int32",
            "0+",
            about="How long an idle transaction may stay open, in ms (transactional only).",
        ),
        Field(
            "ProducerId",
            "int64",
            "3+",
            default=-1,
            about="The producer's current id, when it asks for an epoch bump; else -1.",
        ),
        Field(
            "ProducerEpoch",
            "int16",
            "3+",
            default=-1,
            about="The producer's current epoch, checked against the coordinator's; else -1.",
        ),
        Field(
            "Enable2Pc",
            "bool",
            "6+",
            default=False,
            about="Whether the client takes part in two-phase commit (KIP-939).",
        ),
        Field(
            "KeepPreparedTxn",
            "bool",
            "6+",
            default=False,
            about="Whether to keep the ongoing prepared transaction instead of aborting it.",
        ),
    ],
)

InitProducerIdResponse = Message(
    "InitProducerIdResponse",
    api_key=22,
    valid_versions="0-5",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
        Field("ProducerId", "int64", "0+", default=-1, about="The producer id."),
        Field("ProducerEpoch", "int16", "0+", about="The epoch that goes with the producer id."),
        Field(
            "OngoingTxnProducerId",
            "int64",
            "6+",
            default=-1,
            about="The producer id of the transaction kept by KeepPreparedTxn, or -1.",
        ),
        Field(
            "OngoingTxnProducerEpoch",
            "int16",
            "6+",
            default=-1,
            about="The epoch of the transaction kept by KeepPreparedTxn, or -1.",
        ),
    ],
)
