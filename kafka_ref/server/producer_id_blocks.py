"""Producer id blocks from the active controller (Kafka: `RPCProducerIdManager`).

A broker hands out producer ids from blocks it claims from the cluster's authority
(txn/producer_ids.py, IDEM-15). In KRaft the authority is the active controller: an
AllocateProducerIds request with the broker's id and epoch is answered with the next block,
once the controller's ProducerIdsRecord is committed (KCTRL-11), so no two brokers, and no
two starts of one broker, ever get the same ids (KBROKER-15).

A request to the controller takes a round trip, and `ProducerIdManager` asks for a block
while it answers an InitProducerId: so, as Kafka's `RPCProducerIdManager` prefetches the
next block, this store always keeps one block ready. `prefetch` asks for one as soon as
the broker is unfenced; each block handed out starts the request for the next. Asked while
none is ready (the controller was unreachable, say), it starts the request and raises
COORDINATOR_LOAD_IN_PROGRESS, which the producer retries, as Kafka's does.

Rules: KBROKER-15.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import AllocateProducerIdsRequest, ApiKey
from kafka_ref.server.node_to_controller import ControllerUnavailableError

logger = logging.getLogger("kafka_ref.server.producer_id_blocks")

ALLOCATE_PRODUCER_IDS_VERSION = 0


class ProducerIdBlockNotReadyError(KafkaError):
    """No block from the controller yet: the producer retries (Kafka: the same code)."""

    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


class ControllerProducerIdBlocks:
    """A `ProducerIdBlockStore` whose blocks come from the active controller, one ahead."""

    def __init__(self, broker_id: int, broker_epoch: Callable[[], int], channel: Any) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch  # the current registration's
        self.channel = channel  # a NodeToControllerChannel: `send(key, version, body, done)`
        self.ready: tuple[int, int] | None = None  # (first id, size) of the next block
        self.in_flight = False

    def prefetch(self) -> None:
        """Ask for the next block, unless one is ready or on its way."""
        if self.ready is not None or self.in_flight:
            return
        self.in_flight = True
        body = AllocateProducerIdsRequest(
            broker_id=self.broker_id, broker_epoch=self.broker_epoch()
        )
        self.channel.send(
            ApiKey.ALLOCATE_PRODUCER_IDS, ALLOCATE_PRODUCER_IDS_VERSION, body, self._answered
        )

    def _answered(self, response: Any) -> None:
        self.in_flight = False
        if isinstance(response, ControllerUnavailableError):
            logger.warning("no producer id block: %s", response)
            return
        error = ErrorCode(response.error_code)
        if error != ErrorCode.NO_ERROR:
            logger.warning("no producer id block: the controller answered %s", error.name)
            return
        self.ready = (response.producer_id_start, response.producer_id_len)
        logger.info(
            "broker %d got producer ids %d..%d from the controller",
            self.broker_id,
            response.producer_id_start,
            response.producer_id_start + response.producer_id_len - 1,
        )

    def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
        """The first id of the block ready (and the next one asked for), or
        ProducerIdBlockNotReadyError while none is."""
        assert broker_id == self.broker_id, f"broker {broker_id} asks broker {self.broker_id}"
        ready, self.ready = self.ready, None
        self.prefetch()
        if ready is None:
            raise ProducerIdBlockNotReadyError(
                "waiting for a producer id block from the controller"
            )
        first, length = ready
        assert length == size, f"the controller gave {length} producer ids, not {size}"
        return first
