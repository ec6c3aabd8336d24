"""The broker's persister: share-partition state sent to its share coordinator (KIP-932).

A partition leader keeps its share-partitions' state durable through a `Persister`
(persister.py). A broker's is `DefaultStatePersister` (Kafka `DefaultStatePersister` over its
`PersisterStateManager`): for each call it

1. finds the key's share coordinator, the broker leading the partition of
   `__share_group_state` that `group:topicId:partition` hashes to: the answer FindCoordinator
   key type 2 gives, read from this broker's own picture of the cluster (creating the topic
   on first use, as FindCoordinator does);
2. sends it the state RPC (InitializeShareGroupState, ReadShareGroupState,
   WriteShareGroupState, DeleteShareGroupState or ReadShareGroupStateSummary) on the broker's
   inter-broker connections (server/inter_broker_channel.py; to itself, through the
   loopback, without a socket);
3. on NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS, or when
   the coordinator cannot be reached, finds the coordinator again and retries after a
   backoff that doubles (`RETRY_BACKOFF_S` up to `MAX_BACKOFF_S`), at most `MAX_ATTEMPTS`
   times; then answers the last error. Any other error is the answer (SHARE-79).

Each call is for one key and answers once the coordinator has answered, that is once the
state is committed to `__share_group_state`.

Rules: SHARE-79.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)
from kafka_ref.share.persister import (
    Persister,
    SharePartitionKey,
    ShareState,
    ShareStateSummary,
    StateBatch,
)
from kafka_ref.share.state_batches import delivered_state

logger = logging.getLogger("kafka_ref.share.default_persister")

RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
RETRY_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0
MAX_ATTEMPTS = 12  # about 7 s of backoff: a coordinator moving to another broker
VERSIONS = {  # Kafka 4.4's latest
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: 0,
    ApiKey.READ_SHARE_GROUP_STATE: 0,
    ApiKey.WRITE_SHARE_GROUP_STATE: 1,
    ApiKey.DELETE_SHARE_GROUP_STATE: 0,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: 1,
}

FindCoordinator = Callable[[str], int | None]  # a coordinator key -> the node id, or None
Send = Callable[[int, int, int, Any, Callable[[Any], None]], None]  # InterBrokerChannel.send


class DefaultStatePersister(Persister):
    """A `Persister` whose state lives in the share coordinators of the cluster."""

    def __init__(self, find_coordinator: FindCoordinator, send: Send) -> None:
        self.find_coordinator, self.send = find_coordinator, send

    async def initialize(
        self, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode:
        partition = InitializeShareGroupStateRequest.PartitionData(
            partition=key.partition, state_epoch=state_epoch, start_offset=start_offset
        )
        body = InitializeShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                InitializeShareGroupStateRequest.InitializeStateData(
                    topic_id=key.topic_id, partitions=[partition]
                )
            ],
        )
        result = await self._call(key, ApiKey.INITIALIZE_SHARE_GROUP_STATE, body)
        return ErrorCode(result.error_code)

    async def read_state(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        partition = ReadShareGroupStateRequest.PartitionData(
            partition=key.partition, leader_epoch=leader_epoch
        )
        body = ReadShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                ReadShareGroupStateRequest.ReadStateData(
                    topic_id=key.topic_id, partitions=[partition]
                )
            ],
        )
        r = await self._call(key, ApiKey.READ_SHARE_GROUP_STATE, body)
        if r.error_code != ErrorCode.NO_ERROR:
            return ShareState(error=ErrorCode(r.error_code), error_message=r.error_message)
        return ShareState(
            state_epoch=r.state_epoch,
            start_offset=r.start_offset,
            leader_epoch=leader_epoch,
            batches=tuple(
                StateBatch(
                    b.first_offset,
                    b.last_offset,
                    delivered_state(b.delivery_state),
                    b.delivery_count,
                )
                for b in r.state_batches
            ),
        )

    async def write_state(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> ErrorCode:
        partition = WriteShareGroupStateRequest.PartitionData(
            partition=key.partition,
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            delivery_complete_count=delivery_complete_count,
            state_batches=[
                WriteShareGroupStateRequest.StateBatch(
                    first_offset=b.first_offset,
                    last_offset=b.last_offset,
                    delivery_state=int(b.delivery_state),
                    delivery_count=b.delivery_count,
                )
                for b in batches
            ],
        )
        body = WriteShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                WriteShareGroupStateRequest.WriteStateData(
                    topic_id=key.topic_id, partitions=[partition]
                )
            ],
        )
        result = await self._call(key, ApiKey.WRITE_SHARE_GROUP_STATE, body)
        return ErrorCode(result.error_code)

    async def delete_state(self, key: SharePartitionKey) -> ErrorCode:
        body = DeleteShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                DeleteShareGroupStateRequest.DeleteStateData(
                    topic_id=key.topic_id,
                    partitions=[
                        DeleteShareGroupStateRequest.PartitionData(partition=key.partition)
                    ],
                )
            ],
        )
        result = await self._call(key, ApiKey.DELETE_SHARE_GROUP_STATE, body)
        return ErrorCode(result.error_code)

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        partition = ReadShareGroupStateSummaryRequest.PartitionData(
            partition=key.partition, leader_epoch=leader_epoch
        )
        body = ReadShareGroupStateSummaryRequest(
            group_id=key.group_id,
            topics=[
                ReadShareGroupStateSummaryRequest.ReadStateSummaryData(
                    topic_id=key.topic_id, partitions=[partition]
                )
            ],
        )
        r = await self._call(key, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, body)
        return ShareStateSummary(
            state_epoch=r.state_epoch,
            start_offset=r.start_offset,
            leader_epoch=r.leader_epoch,
            delivery_complete_count=r.delivery_complete_count,
            error=ErrorCode(r.error_code),
            error_message=r.error_message,
        )

    # ------------------------------------------------------------------ find, send, retry
    async def _call(self, key: SharePartitionKey, api_key: ApiKey, body: Any) -> Any:
        """The key's partition result from its coordinator, retried as the module says; a
        result whose error is the last retriable one when the attempts run out."""
        backoff, error = RETRY_BACKOFF_S, ErrorCode.COORDINATOR_NOT_AVAILABLE
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
            node = self.find_coordinator(key.coordinator_key)
            if node is None:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
                continue
            response = await self._send(node, api_key, body)
            if isinstance(response, ConnectionError):
                logger.info("share coordinator %d unreachable: %s", node, response)
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
                continue
            result = response.results[0].partitions[0]
            error = ErrorCode(result.error_code)
            if error not in RETRIABLE:
                return result
        logger.warning("%s for %s failed: %s", api_key.name, key.coordinator_key, error.name)
        return _failed(api_key, error)

    def _send(self, node: int, api_key: ApiKey, body: Any) -> asyncio.Future:
        answer: asyncio.Future = asyncio.get_running_loop().create_future()

        def answered(response: Any) -> None:
            if not answer.done():
                answer.set_result(response)

        self.send(node, api_key, VERSIONS[api_key], body, answered)
        return answer


def _failed(api_key: ApiKey, error: ErrorCode) -> Any:
    """A partition result carrying only `error`, in the schema of `api_key`'s response."""
    return APIS[api_key].response.PartitionResult(error_code=error)
