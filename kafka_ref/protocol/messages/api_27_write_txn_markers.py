"""WriteTxnMarkers (API key 27): the transaction coordinator has partition leaders write
the commit or abort markers (KIP-98). Brokers send it; clients never do.

Once the decision of a transaction is in `__transaction_state`, the coordinator groups the
transaction's partitions by their leader and sends each leader one request: per
transaction the producer id and epoch, the result (true = commit), the coordinator epoch
and the partitions. The leader appends one control batch per partition
(kafka_ref/record/control.py) with acks=all and answers per partition; for a partition of
`__consumer_offsets` the group coordinator then makes the transaction's offsets visible
(commit) or drops them (abort).

Errors, per partition: NOT_LEADER_OR_FOLLOWER (6), UNKNOWN_TOPIC_OR_PARTITION (3),
NOT_ENOUGH_REPLICAS (19) and other retriable errors make the coordinator send that marker
again; INVALID_PRODUCER_EPOCH (47) and TRANSACTION_COORDINATOR_FENCED (52) tell a stale
coordinator to stop.

Version history (Kafka's JSON comments): v1 flexible (v0 was removed in Kafka 4.0); v2
adds the transaction version (KIP-1228). kafka-ref declares 1-2, as Kafka 4.4, and sends
v2: a leader refuses a marker of transaction version 2 whose epoch is not newer than the
producer's last one at the partition (TXN-96); version 0/1 markers are written as v1's.

Kafka's definitions: WriteTxnMarkersRequest.json, WriteTxnMarkersResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

WriteTxnMarkersRequest = Message(
    "WriteTxnMarkersRequest",
    api_key=27,
    valid_versions="1-2",
    flexible_versions="1+",
    fields=[
        Field(
            "Markers",
            "[]WritableTxnMarker",
            "0+",
            about="The transaction markers to be written.",
            fields=[
                Field("ProducerId", "int64", "0+", about="The current producer id."),
                Field("ProducerEpoch", "int16", "0+", about="The current producer epoch."),
                Field("TransactionResult", "bool", "0+", about="True to commit, false to abort."),
                Field(
                    "Topics",
                    "[]WritableTxnMarkerTopic",
                    "0+",
                    about="Each topic that we want to write transaction marker(s) for.",
                    fields=[
                        Field("Name", "string", "0+", about="The topic name."),
                        Field("PartitionIndexes", "[]int32", "0+", about="The partitions."),
                    ],
                ),
                Field("CoordinatorEpoch", "int32", "0+", about="Epoch of the coordinator."),
                Field(
                    "TransactionVersion",
                    "int8",
                    "2+",
                    default=0,
                    about="The transaction version of the marker (KIP-890), 0/1 legacy.",
                ),
            ],
        ),
    ],
)

WriteTxnMarkersResponse = Message(
    "WriteTxnMarkersResponse",
    api_key=27,
    valid_versions="1-2",
    flexible_versions="1+",
    fields=[
        Field(
            "Markers",
            "[]WritableTxnMarkerResult",
            "0+",
            about="The results for writing makers.",
            fields=[
                Field("ProducerId", "int64", "0+", about="The current producer id."),
                Field(
                    "Topics",
                    "[]WritableTxnMarkerTopicResult",
                    "0+",
                    about="The results by topic.",
                    fields=[
                        Field("Name", "string", "0+", about="The topic name."),
                        Field(
                            "Partitions",
                            "[]WritableTxnMarkerPartitionResult",
                            "0+",
                            about="The results by partition.",
                            fields=[
                                Field("PartitionIndex", "int32", "0+", about="The index."),
                                Field("ErrorCode", "int16", "0+", about="The error code."),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ],
)
