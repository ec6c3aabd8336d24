"""The share coordinator's APIs: InitializeShareGroupState (83), ReadShareGroupState (84),
WriteShareGroupState (85), DeleteShareGroupState (86), ReadShareGroupStateSummary (87).

Partition leaders (through their `DefaultStatePersister`, share/default_persister.py) and
the share group coordinator send these to the share coordinator of each
`SharePartitionKey`. A request names one group and any topics and partitions; as Kafka's
`ShareCoordinatorService` does, each partition is its own operation on the coordinator
(kafka_ref/share/share_coordinator.py), and the answer, grouped by topic in request order,
goes out once every partition's operation is done: for a write, once its record is
committed to `__share_group_state`. An empty group id is INVALID_REQUEST for each
partition. With authorization on, the principal needs CLUSTER_ACTION on the cluster: only
brokers send these (Kafka `KafkaApis.handle...ShareGroupStateRequest`).

Rules: SHARE-79.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateResponse,
)
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import DEFERRED
from kafka_ref.share.persister import SharePartitionKey, ShareState, ShareStateSummary, StateBatch
from kafka_ref.share.state_batches import delivered_state

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

EMPTY_GROUP_ID = "Group id must be specified and non-empty."
BAD_STATE = "A state batch's delivery state must be 0, 2 or 4 and its offsets ordered."


def _each_partition(
    apis: ApiContext,
    request: Request,
    run: Callable[[SharePartitionKey, Any, Callable[[Any], None]], None],
    refused: Callable[[int, ErrorCode, str | None], Any],
    build: Callable[[list[tuple[uuid.UUID, list[Any]]]], Any],
) -> Any:
    """Run one operation per partition of the request; answer when all have answered.

    `run(key, partition_data, answer)` starts a partition's operation; `refused(partition,
    error, message)` is a partition's answer when it is not run at all; `build(results)` makes the
    response from [(topic id, [partition answer, ...]), ...] in request order."""
    body = request.body
    slots: list[tuple[uuid.UUID, list[Any]]] = [
        (t.topic_id, [None] * len(t.partitions)) for t in body.topics
    ]
    waiting = sum(len(answers) for _, answers in slots)
    if waiting == 0:
        return build(slots)
    allowed = authorized(apis, request, Op.CLUSTER_ACTION, Res.CLUSTER)
    state = {"waiting": waiting, "deferred": False, "done": False}

    def answered(answers: list[Any], index: int, value: Any) -> None:
        answers[index] = value
        state["waiting"] -= 1
        if state["waiting"] == 0:
            state["done"] = True
            if state["deferred"]:
                apis.send(request, None if request.connection_closed() else build(slots))

    def slot(answers: list[Any], index: int) -> Callable[[Any], None]:
        return lambda value: answered(answers, index, value)

    for topic, (_, answers) in zip(body.topics, slots, strict=True):
        for index, p in enumerate(topic.partitions):
            done = slot(answers, index)
            if not allowed:
                done(refused(p.partition, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None))
            elif not body.group_id:
                done(refused(p.partition, ErrorCode.INVALID_REQUEST, EMPTY_GROUP_ID))
            else:
                run(SharePartitionKey(body.group_id, topic.topic_id, p.partition), p, done)
    if state["done"]:
        return build(slots)
    state["deferred"] = True
    return DEFERRED


def _results(response: Any, result_type: Any, results: list[tuple[uuid.UUID, list[Any]]]) -> Any:
    return response(results=[result_type(topic_id=t, partitions=answers) for t, answers in results])


# ---------------------------------------------------------------------- 83 Initialize
def handle_initialize_share_group_state(apis: ApiContext, request: Request) -> Any:
    Result = InitializeShareGroupStateResponse.PartitionResult

    def run(key: SharePartitionKey, p: Any, done: Callable[[Any], None]) -> None:
        apis.share_coordinator.coordinator.initialize(
            key,
            p.state_epoch,
            p.start_offset,
            lambda r: done(Result(partition=key.partition, error_code=r[0], error_message=r[1])),
        )

    return _each_partition(
        apis,
        request,
        run,
        lambda partition, error, message: Result(
            partition=partition, error_code=error, error_message=message
        ),
        lambda results: _results(
            InitializeShareGroupStateResponse,
            InitializeShareGroupStateResponse.InitializeStateResult,
            results,
        ),
    )


# ---------------------------------------------------------------------- 84 Read
def _read_result(partition: int, state: ShareState) -> Any:
    Result = ReadShareGroupStateResponse.PartitionResult
    Batch = ReadShareGroupStateResponse.StateBatch
    if state.error != ErrorCode.NO_ERROR:  # Kafka's error answer: every other field zero
        return Result(
            partition=partition, error_code=state.error, error_message=state.error_message
        )
    return Result(
        partition=partition,
        error_code=state.error,
        error_message=state.error_message,
        state_epoch=state.state_epoch,
        start_offset=state.start_offset,
        state_batches=[
            Batch(
                first_offset=b.first_offset,
                last_offset=b.last_offset,
                delivery_state=int(b.delivery_state),
                delivery_count=b.delivery_count,
            )
            for b in state.batches
        ],
    )


def handle_read_share_group_state(apis: ApiContext, request: Request) -> Any:
    def run(key: SharePartitionKey, p: Any, done: Callable[[Any], None]) -> None:
        apis.share_coordinator.coordinator.read_state(
            key, p.leader_epoch, lambda state: done(_read_result(key.partition, state))
        )

    def refused(partition: int, error: ErrorCode, message: str | None) -> Any:
        return _read_result(partition, ShareState(error=error, error_message=message))

    return _each_partition(
        apis,
        request,
        run,
        refused,
        lambda results: _results(
            ReadShareGroupStateResponse, ReadShareGroupStateResponse.ReadStateResult, results
        ),
    )


# ---------------------------------------------------------------------- 85 Write
def handle_write_share_group_state(apis: ApiContext, request: Request) -> Any:
    Result = WriteShareGroupStateResponse.PartitionResult

    def run(key: SharePartitionKey, p: Any, done: Callable[[Any], None]) -> None:
        try:
            batches = tuple(
                StateBatch(
                    b.first_offset,
                    b.last_offset,
                    delivered_state(b.delivery_state),
                    b.delivery_count,
                )
                for b in p.state_batches
            )
        except (ValueError, AssertionError):
            done(
                Result(
                    partition=key.partition,
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=BAD_STATE,
                )
            )
            return
        apis.share_coordinator.coordinator.write_state(
            key,
            p.state_epoch,
            p.leader_epoch,
            p.start_offset,
            batches,
            lambda r: done(Result(partition=key.partition, error_code=r[0], error_message=r[1])),
            p.delivery_complete_count,
        )

    return _each_partition(
        apis,
        request,
        run,
        lambda partition, error, message: Result(
            partition=partition, error_code=error, error_message=message
        ),
        lambda results: _results(
            WriteShareGroupStateResponse, WriteShareGroupStateResponse.WriteStateResult, results
        ),
    )


# ---------------------------------------------------------------------- 86 Delete
def handle_delete_share_group_state(apis: ApiContext, request: Request) -> Any:
    Result = DeleteShareGroupStateResponse.PartitionResult

    def run(key: SharePartitionKey, p: Any, done: Callable[[Any], None]) -> None:
        apis.share_coordinator.coordinator.delete_state(
            key,
            lambda r: done(Result(partition=key.partition, error_code=r[0], error_message=r[1])),
        )

    return _each_partition(
        apis,
        request,
        run,
        lambda partition, error, message: Result(
            partition=partition, error_code=error, error_message=message
        ),
        lambda results: _results(
            DeleteShareGroupStateResponse, DeleteShareGroupStateResponse.DeleteStateResult, results
        ),
    )


# ---------------------------------------------------------------------- 87 Summary
def _summary_result(partition: int, summary: ShareStateSummary) -> Any:
    if summary.error != ErrorCode.NO_ERROR:  # Kafka's error answer: every other field zero
        return ReadShareGroupStateSummaryResponse.PartitionResult(
            partition=partition, error_code=summary.error, error_message=summary.error_message
        )
    return ReadShareGroupStateSummaryResponse.PartitionResult(
        partition=partition,
        error_code=summary.error,
        error_message=summary.error_message,
        state_epoch=summary.state_epoch,
        leader_epoch=summary.leader_epoch,
        start_offset=summary.start_offset,
        delivery_complete_count=summary.delivery_complete_count,
    )


def handle_read_share_group_state_summary(apis: ApiContext, request: Request) -> Any:
    def run(key: SharePartitionKey, p: Any, done: Callable[[Any], None]) -> None:
        done(_summary_result(key.partition, apis.share_coordinator.coordinator.read_summary(key)))

    return _each_partition(
        apis,
        request,
        run,
        lambda partition, error, message: _summary_result(
            partition, ShareStateSummary(error=error, error_message=message)
        ),
        lambda results: _results(
            ReadShareGroupStateSummaryResponse,
            ReadShareGroupStateSummaryResponse.ReadStateSummaryResult,
            results,
        ),
    )
