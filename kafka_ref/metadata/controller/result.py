"""ControllerResult: what a controller operation decides, as records and a response.

The active controller never changes its state while it decides. An operation reads the
current metadata image, checks the request, and returns the records that would make the
change and the response to send once they are committed (Kafka: `ControllerResult`). The
quorum controller appends the records to the metadata log; when the Raft quorum has
committed them, every controller and broker replays them into its image, the active one
included. A follower controller replays the same records and so reaches the same state
without deciding anything: the log, not the decision, is the truth.

An *atomic* result's records must be applied together or not at all (Kafka:
`ControllerResult.atomicOf`, written as one batch; a metadata transaction, KIP-868, when
they do not fit).

A request that fails produces no records and a response carrying the error: an `ApiError`,
Kafka's error code and its message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.metadata.serde import ApiMessageAndVersion

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ApiError:
    """An error code and message as a response carries them (Kafka: `ApiError`)."""

    code: ErrorCode = ErrorCode.NO_ERROR
    message: str | None = None

    @classmethod
    def of(cls, error: KafkaError) -> ApiError:
        return cls(error.code, error.args[0] if error.args else None)

    @property
    def ok(self) -> bool:
        return self.code == ErrorCode.NO_ERROR


NONE = ApiError()


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[T]):
    """The records an operation appends and the response it answers with."""

    records: tuple[ApiMessageAndVersion, ...]
    response: T
    atomic: bool = False

    @classmethod
    def of(cls, messages: Iterable[object], response: T, *, atomic: bool = False):
        """Records from messages, each at its record's newest version (META-1)."""
        return cls(tuple(ApiMessageAndVersion.of(m) for m in messages), response, atomic)
