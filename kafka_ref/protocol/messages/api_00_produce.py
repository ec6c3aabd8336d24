"""Produce (API key 0): a producer appends record batches to partition logs.

One Produce request carries, per topic and partition, a RECORDS blob: one or more record
batches exactly as the producer built them (compressed, CRC'd, with producer id and sequence
numbers for idempotence). The broker does not take the records apart: it checks each batch
header and CRC, stamps the base offset, and appends the bytes: on the hot path kafka-ref
moves bytes. That is why `records` decodes to a `memoryview` into the request buffer and is never
copied here (PROTO-9).

`acks` says when the broker answers: 0 = never (the client does not even wait for a response,
so the broker must not send one), 1 = after the leader's append, -1 ("all") = once every
in-sync replica has it. `timeout_ms` bounds the wait for acks=-1.

The response lists, per partition, an error code and the `base_offset` the leader assigned;
v2 adds `log_append_time_ms` (for LogAppendTime topics, else -1), v5 `log_start_offset`.
Note that `throttle_time_ms` comes *last* in the Produce response, after the topic array,
while most other responses put it first.

Version history (Kafka's JSON comments): v1-v2 as v0 with throttle time and append time; v3
adds `transactional_id` and requires record batch v2 (magic 2); v4-v6 as v3 with new error
codes; v7 allows zstd (KIP-110); v8 adds per-record errors (KIP-467); v9 is flexible; v10
adds leader hints as tagged fields (KIP-951); v11 may answer TRANSACTION_ABORTABLE (KIP-890);
v12 adds a transactional batch's partition to the transaction (KIP-890 part 2); v13
identifies topics by id (KIP-516).

kafka-ref declares 0-12 (v8: the records of a refused batch at fault, `record_errors`, and
an `error_message`, which clients report per record; v10: `current_leader` and
`node_endpoints` for NOT_LEADER_OR_FOLLOWER, BROKER-69; v11: BROKER-72; v12: the leader
adds a transactional batch's partition to the transaction, TXN-95). v13 names topics by id
only, which kafka-ref's Produce does not (PROTO-19). The broker advertises Produce from 0
because librdkafka before 2.11.1 only enables compression when Produce v0 is in range, but
answers v0-v2 (magic 0/1 message sets) with UNSUPPORTED_VERSION, exactly like Kafka 4.0
(KAFKA-18659). v0-v2 are declared so those requests decode and get that proper answer.

Kafka's definitions: ProduceRequest.json, ProduceResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ProduceRequest = Message(
    "ProduceRequest",
    api_key=0,
    valid_versions="0-12",
    flexible_versions="9+",
    fields=[
        Field(
            "TransactionalId",
            "string",
            "3+",
            nullable_versions="3+",
            default=None,
            about="The transactional ID, or null if the producer is not transactional.",
        ),
        Field("Acks", "int16", "0+", about="0 = no response, 1 = leader only, -1 = full ISR."),
        Field("TimeoutMs", "int32", "0+", about="The timeout to await a response in ms."),
        Field(
            "TopicData",
            "[]TopicProduceData",
            "0+",
            about="Each topic to produce to.",
            fields=[
                Field("Name", "string", "0-12", about="The topic name."),
                Field("TopicId", "uuid", "13+", about="The unique topic ID."),
                Field(
                    "PartitionData",
                    "[]PartitionProduceData",
                    "0+",
                    about="Each partition to produce to.",
                    fields=[
                        Field("Index", "int32", "0+", about="The partition index."),
                        Field(
                            "Records",
                            "records",
                            "0+",
                            nullable_versions="0+",
                            about="The record data to be produced.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

_NODE_ENDPOINT = [
    Field("NodeId", "int32", "10+", about="The ID of the associated node."),
    Field("Host", "string", "10+", about="The node's hostname."),
    Field("Port", "int32", "10+", about="The node's port."),
    Field(
        "Rack",
        "string",
        "10+",
        nullable_versions="10+",
        default=None,
        about="The rack of the node, or null if it has not been assigned to a rack.",
    ),
]

ProduceResponse = Message(
    "ProduceResponse",
    api_key=0,
    valid_versions="0-12",
    flexible_versions="9+",
    fields=[
        Field(
            "Responses",
            "[]TopicProduceResponse",
            "0+",
            about="Each produce response.",
            fields=[
                Field("Name", "string", "0-12", about="The topic name."),
                Field("TopicId", "uuid", "13+", about="The unique topic ID."),
                Field(
                    "PartitionResponses",
                    "[]PartitionProduceResponse",
                    "0+",
                    about="Each partition that we produced to within the topic.",
                    fields=[
                        Field("Index", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field("BaseOffset", "int64", "0+", about="The base offset."),
                        Field(
                            "LogAppendTimeMs",
                            "int64",
                            "2+",
                            default=-1,
                            about="The broker's append time for LogAppendTime topics, else -1.",
                        ),
                        Field(
                            "LogStartOffset",
                            "int64",
                            "5+",
                            default=-1,
                            about="The log start offset.",
                        ),
                        Field(
                            "RecordErrors",
                            "[]BatchIndexAndErrorMessage",
                            "8+",
                            about="The records that caused the batch to be dropped (KIP-467).",
                            fields=[
                                Field("BatchIndex", "int32", "8+", about="The record's index."),
                                Field(
                                    "BatchIndexErrorMessage",
                                    "string",
                                    "8+",
                                    nullable_versions="8+",
                                    default=None,
                                    about="The error message of that record.",
                                ),
                            ],
                        ),
                        Field(
                            "ErrorMessage",
                            "string",
                            "8+",
                            nullable_versions="8+",
                            default=None,
                            about="The summary of why the batch was dropped.",
                        ),
                        Field(
                            "CurrentLeader",
                            "LeaderIdAndEpoch",
                            "10+",
                            tagged_versions="10+",
                            tag=0,
                            about="The leader the producer should use from now on (KIP-951).",
                            fields=[
                                Field("LeaderId", "int32", "10+", default=-1, about="Leader id."),
                                Field("LeaderEpoch", "int32", "10+", default=-1, about="Epoch."),
                            ],
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "ThrottleTimeMs",
            "int32",
            "1+",
            default=0,
            about="The time in ms for which the request was throttled by a quota, or zero.",
        ),
        Field(
            "NodeEndpoints",
            "[]NodeEndpoint",
            "10+",
            tagged_versions="10+",
            tag=0,
            about="Endpoints of the current leaders named in NOT_LEADER_OR_FOLLOWER errors.",
            fields=_NODE_ENDPOINT,
        ),
    ],
)
