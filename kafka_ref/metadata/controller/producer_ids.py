"""Producer ids in KRaft: blocks of 1000, one ProducerIdsRecord each (Kafka:
`ProducerIdControlManager`, KIP-730).

A broker's transaction coordinator hands out producer ids from a block it got from the
controller with AllocateProducerIds. The controller gives the next block, the ids
[next, next + 1000), and writes a ProducerIdsRecord whose `nextProducerId` is the first id
of the block after it: replaying it is all a new controller needs to never hand out an id
twice. The first block of a cluster starts at 0. The request must come from a registered
broker at its current epoch (STALE_BROKER_EPOCH), and a block past the largest id fails
(UNKNOWN_SERVER_ERROR, as Kafka's "Exhausted all producerIds").

Rules: KCTRL-11.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.cluster_control import check_broker_epoch
from kafka_ref.metadata.controller.result import NONE, ApiError, ControllerResult
from kafka_ref.metadata.image import MetadataImage

BLOCK_SIZE = 1000  # Kafka: ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
MAX_PRODUCER_ID = 2**63 - 1


@dataclass(frozen=True)
class ProducerIdsBlock:
    error: ApiError
    first_producer_id: int = -1
    size: int = 0


def allocate_producer_ids(
    image: MetadataImage, broker_id: int, broker_epoch: int
) -> ControllerResult[ProducerIdsBlock]:
    try:
        check_broker_epoch(image, broker_id, broker_epoch)
        first = max(image.next_producer_id, 0)
        if first > MAX_PRODUCER_ID - BLOCK_SIZE:
            raise KafkaError("Exhausted all producerIds.", code=ErrorCode.UNKNOWN_SERVER_ERROR)
    except KafkaError as e:
        return ControllerResult.of([], ProducerIdsBlock(ApiError.of(e)))
    record = r.ProducerIdsRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=first + BLOCK_SIZE
    )
    return ControllerResult.of([record], ProducerIdsBlock(NONE, first, BLOCK_SIZE))
