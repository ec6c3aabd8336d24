"""AllocateProducerIds (API key 67, KIP-730): a broker asks the controller for producer ids.

Every idempotent or transactional producer gets a producer id from a broker
(InitProducerId). Ids must be unique in the whole cluster, so brokers take them from the
controller in blocks of 1000: in ZooKeeper mode by a conditional write of the
`/latest_producer_id_block` znode, in KRaft by this request to the active controller, which
appends a ProducerIdsRecord naming the next block and answers with the block (KCTRL-11).

Version history: v0 only, flexible.

Kafka's definitions: AllocateProducerIdsRequest.json, AllocateProducerIdsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AllocateProducerIdsRequest = Message(
    "AllocateProducerIdsRequest",
    api_key=67,
    valid_versions="0",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("BrokerId", "int32", "0+", about="The ID of the requesting broker."),
        Field(
            "BrokerEpoch",
            "int64",
            "0+",
            default=-1,
            about="The epoch of the requesting broker.",
        ),
    ],
)

AllocateProducerIdsResponse = Message(
    "AllocateProducerIdsResponse",
    api_key=67,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "ThrottleTimeMs",
            "int32",
            "0+",
            about="The duration in milliseconds for which the request was throttled due to a "
            "quota violation, or zero if the request did not violate any quota.",
        ),
        Field("ErrorCode", "int16", "0+", about="The top level response error code."),
        Field(
            "ProducerIdStart",
            "int64",
            "0+",
            about="The first producer ID in this range, inclusive.",
        ),
        Field("ProducerIdLen", "int32", "0+", about="The number of producer IDs in this range."),
    ],
)
