"""Producer ids: unique 64-bit numbers handed out in blocks that survive restarts.

An idempotent producer starts with InitProducerId and gets a *producer id* (PID) and epoch 0.
Every batch it sends carries that PID, and each partition keeps its sequence state per PID
(kafka_ref/log/producer_state.py). Two producers must therefore never share a PID: not two
at the same time, not one before and one after a broker restart (the partitions remember
the old one), and, once there are several brokers, not two handed out by different brokers.

Asking a central authority for every single id would be slow, so Kafka hands out *blocks*
(Kafka: `ProducerIdManager`, `ProducerIdsBlock`, block size 1000): a broker claims the next
1000 ids from the authority, which records "the next block starts at N + 1000" durably
*before* answering; the broker then gives out ids from its block in memory and claims a new
block when it runs out. A restart loses the rest of the current block, never reuses it:
ids may skip, but never repeat (IDEM-15).

The authority is the *storage* behind `ProducerIdBlockStore`:

* one broker, embedded metadata: `EmbeddedController.allocate_producer_id_block` keeps the
  next block's start in `__cluster_metadata.json`, written atomically (KRaft keeps a
  `ProducerIdsRecord` in its metadata log);
* several brokers on ZooKeeper: the `/latest_producer_id_block` znode, claimed with a
  versioned write and retried on conflict (Kafka's `ZkProducerIdManager`;
  `KafkaZkClient.allocate_producer_id_block` in kafka_ref/cluster/zookeeper.py), so each
  broker gives out ids from blocks no other broker has. The claim is one ZooKeeper round
  trip per 1000 ids, made on the broker's loop when its block runs out.

`ProducerIdManager` only needs `allocate_producer_id_block`, so replacing the storage is
replacing the object passed in.

Rules: IDEM-15.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from kafka_ref.errors import ErrorCode, KafkaError

logger = logging.getLogger("kafka_ref.txn.producer_ids")

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka: ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
MAX_PRODUCER_ID = 2**63 - 1


class ProducerIdsExhaustedError(KafkaError):
    """Every 64-bit producer id has been handed out (Kafka: "Exhausted all producerIds")."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass(frozen=True, slots=True)
class ProducerIdsBlock:
    """[first_producer_id, first_producer_id + size), claimed by one broker."""

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        return self.first_producer_id + self.size


class ProducerIdBlockStore(Protocol):
    """Where the next free block is recorded: the one piece a cluster must agree on."""

    def allocate_producer_id_block(self, broker_id: int, size: int) -> int:
        """Claim the next `size` ids for `broker_id`, durably, before returning the first.

        Raises OverflowError when fewer than `size` ids are left below 2^63.
        """
        ...


class ProducerIdManager:
    """Hands out producer ids from blocks claimed from `store` (Kafka: ProducerIdManager)."""

    def __init__(
        self, broker_id: int, store: ProducerIdBlockStore, block_size: int = PRODUCER_ID_BLOCK_SIZE
    ) -> None:
        self.broker_id = broker_id
        self.store = store
        self.block_size = block_size
        self._block: ProducerIdsBlock | None = None
        self._next = 0

    @property
    def current_block(self) -> ProducerIdsBlock | None:
        return self._block

    def generate_producer_id(self) -> int:
        """The next unused id; claims a new block first when the current one is used up."""
        if self._block is None or self._next > self._block.last_producer_id:
            try:
                first = self.store.allocate_producer_id_block(self.broker_id, self.block_size)
            except OverflowError as err:
                raise ProducerIdsExhaustedError(str(err)) from err
            block = ProducerIdsBlock(self.broker_id, first, self.block_size)
            logger.info(
                "broker %d claimed producer ids %d..%d",
                self.broker_id,
                block.first_producer_id,
                block.last_producer_id,
            )
            self._block, self._next = block, block.first_producer_id
        producer_id = self._next
        self._next += 1
        return producer_id
