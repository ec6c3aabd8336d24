"""InitProducerId: a producer gets its producer id (the transactions family's first API).

An idempotent producer asks once for a *producer id* (PID) and gets epoch 0; it then numbers
its batches per partition, and the partition leaders drop retried duplicates
(kafka_ref/log/producer_state.py). Kafka's `KafkaApis.handleInitProducerIdRequest` passes
the request to the `TransactionCoordinator`, whose `handleInitProducerId` answers a null
transactional id with `producerIdManager.generateProducerId()` and epoch 0, whatever
broker receives it (IDEM-15). kafka-ref does the same with its `ProducerIdManager`
(kafka_ref/txn/producer_ids.py), whose blocks of 1000 ids come from the embedded
controller and survive restarts.

With a transactional id, Kafka maps the id to a PID in the transaction coordinator that
owns the id's `__transaction_state` partition. kafka-ref has no transaction coordinator
yet and answers as a Kafka broker that does not own that partition: NOT_COORDINATOR (16);
an empty transactional id is INVALID_REQUEST (42), checked first as in Kafka (IDEM-17).
Clients never get that far: the broker advertises none of the transaction APIs, and
FindCoordinator for a transactional id answers COORDINATOR_NOT_AVAILABLE (groups.py), so
librdkafka and kafka-python refuse or stall transactional producers before they send one.

Rules: IDEM-15, IDEM-17.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import InitProducerIdResponse
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers import KafkaApis

logger = logging.getLogger("kafka_ref.server.handlers.txn")

NO_PRODUCER_ID, NO_PRODUCER_EPOCH = -1, -1


def handle_init_producer_id(apis: KafkaApis, request: Request) -> Any:
    transactional_id = request.body.transactional_id
    if transactional_id is not None:
        error = ErrorCode.INVALID_REQUEST if transactional_id == "" else ErrorCode.NOT_COORDINATOR
        return _response(error)
    try:
        producer_id = apis.producer_ids.generate_producer_id()
    except KafkaError as err:
        logger.error("cannot allocate a producer id: %s", err)
        return _response(err.code)
    except OSError as err:  # the block could not be persisted: retriable, as in Kafka
        logger.error("cannot persist a producer id block: %s", err)
        return _response(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    logger.debug("producer id %d for %s", producer_id, request.client_id)
    return _response(ErrorCode.NO_ERROR, producer_id, 0)


def _response(
    error: ErrorCode, producer_id: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH
) -> Any:
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=error, producer_id=producer_id, producer_epoch=epoch
    )
