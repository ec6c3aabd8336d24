"""Kafka's error codes, and the exceptions that carry them.

Every failure a client can see travels over the wire as a 16-bit error code (Kafka's
`org.apache.kafka.common.protocol.Errors`). Inside kafka-ref a failure is an exception that
*carries* its code, so a handler that catches a `KafkaError` knows exactly what to answer:
a corrupt batch in a produce request becomes `CORRUPT_MESSAGE` (2) for that partition, never
a crash and never a generic `UNKNOWN_SERVER_ERROR` (-1).

The names are Kafka's own (`NOT_LEADER_OR_FOLLOWER`, `MESSAGE_TOO_LARGE`), so what a
student reads here is what Kafka's logs and clients print.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """The error codes of the Kafka protocol (a subset large enough for this broker)."""

    UNKNOWN_SERVER_ERROR = -1
    NO_ERROR = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICATION_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91  # e.g. a SCRAM credential to delete or describe (KIP-554)
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INVALID_UPDATE_VERSION = 95  # an ISR change lost a compare-and-set (AlterIsr)
    PRINCIPAL_DESERIALIZATION_FAILURE = 97  # an Envelope's principal cannot be read (KIP-590)
    SNAPSHOT_NOT_FOUND = 98  # FetchSnapshot of a snapshot the leader does not hold (KIP-630)
    POSITION_OUT_OF_RANGE = 99  # FetchSnapshot from a position past the snapshot's end
    UNKNOWN_TOPIC_ID = 100  # a topic id the broker does not know (KIP-516)
    DUPLICATE_BROKER_REGISTRATION = 101  # a live session holds the broker id (KRaft)
    BROKER_ID_NOT_REGISTERED = 102  # UnregisterBroker of a broker the controller never saw
    INCONSISTENT_CLUSTER_ID = 104  # a KRaft request names another cluster (KIP-595)
    TRANSACTIONAL_ID_NOT_FOUND = 105  # DescribeTransactions for an unknown id
    INELIGIBLE_REPLICA = 107  # AlterPartition names a fenced or shutting-down ISR member
    NEW_LEADER_ELECTED = 108  # AlterPartition finished a reassignment that moved the leader
    FENCED_MEMBER_EPOCH = 110  # a consumer-group member's epoch is not its own (KIP-848)
    UNRELEASED_INSTANCE_ID = 111  # a static member's instance id is still in use (KIP-848)
    UNSUPPORTED_ASSIGNOR = 112  # a server-side assignor the coordinator does not have
    STALE_MEMBER_EPOCH = 113  # an offset commit or fetch with an old member epoch (KIP-848)
    INVALID_RECORD_STATE = 121  # a share acknowledgement of a record not acquired (KIP-932)
    SHARE_SESSION_NOT_FOUND = 122  # a ShareFetch names a share session the broker lacks
    INVALID_SHARE_SESSION_EPOCH = 123  # a ShareFetch out of step with its share session
    FENCED_STATE_EPOCH = 124  # a share-partition state write with an old state epoch
    SHARE_SESSION_LIMIT_REACHED = 133  # the broker holds as many share sessions as it may
    MISMATCHED_ENDPOINT_TYPE = 114  # DescribeCluster of controllers sent to a broker (KIP-919)
    UNSUPPORTED_ENDPOINT_TYPE = 115  # DescribeCluster of an unknown endpoint type (KIP-919)
    TRANSACTION_ABORTABLE = 120  # the producer must abort its transaction (KIP-890)
    INVALID_REGULAR_EXPRESSION = 128  # ListTransactions v2's transactional id pattern
    REBOOTSTRAP_REQUIRED = 129  # a connection reached the wrong cluster or broker (KIP-1242)

    @property
    def retriable(self) -> bool:
        """True when a client may retry the same request (Kafka's RetriableException)."""
        return self in _RETRIABLE


_RETRIABLE = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.UNKNOWN_TOPIC_ID,
    }
)


class KafkaError(Exception):
    """Base of every kafka-ref error that maps onto a Kafka error code."""

    code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", *, code: ErrorCode | None = None) -> None:
        if code is not None:
            self.code = code
        super().__init__(message or self.code.name)

    def __str__(self) -> str:
        return f"{self.code.name}: {self.args[0]}" if self.args else self.code.name


class CorruptRecordError(KafkaError):
    """A batch fails its CRC, its length or its structure (Kafka: CorruptRecordException)."""

    code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(KafkaError):
    """A well-formed batch breaks a rule of the log (Kafka: InvalidRecordException).

    `record_errors` names the records at fault, as (index in the batch, message): Produce
    v8+ returns them to the producer, which fails just those records' sends (KIP-467)."""

    code = ErrorCode.INVALID_RECORD

    def __init__(
        self,
        message: str = "",
        *,
        code: ErrorCode | None = None,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> None:
        super().__init__(message, code=code)
        self.record_errors = record_errors


class UnsupportedCompressionTypeError(KafkaError):
    """The compression bits name a codec this broker does not know."""

    code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class UnsupportedForMessageFormatError(KafkaError):
    """A feature asked of a message format that cannot carry it (e.g. magic 0/1 to the log)."""

    code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class MessageTooLargeError(KafkaError):
    """A batch is larger than `max.message.bytes` (or a segment could ever hold)."""

    code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidTimestampError(InvalidRecordError):
    """A timestamp is out of the range `message.timestamp.*.max.ms` allows; the records at
    fault are named, as for an invalid record (KIP-467)."""

    code = ErrorCode.INVALID_TIMESTAMP


class OffsetOutOfRangeError(KafkaError):
    """An offset below the log start offset or above the log end offset.

    The log raises it for a read or a truncation outside its range; a consumer raises it,
    with `offsets` ({partition: fetch position}), when a fetch position is out of range and
    auto.offset.reset is `none` (Kafka: OffsetOutOfRangeException).
    """

    code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, message: str = "", *, offsets: dict | None = None) -> None:
        self.offsets = dict(offsets or {})
        if not message and self.offsets:
            names = ", ".join(f"{tp}={offset}" for tp, offset in self.offsets.items())
            message = f"Offsets out of range with no configured reset policy: {names}"
        super().__init__(message)


class KafkaStorageError(KafkaError):
    """The disk failed us: an I/O error, a full disk, a directory we cannot use."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


class InvalidConfigError(KafkaError):
    """A configuration key is unknown or its value is out of range."""

    code = ErrorCode.INVALID_CONFIG


# ---------------------------------------------------------------- replication
# Raised by the partition (kafka_ref/replication/partition.py) for the broker, the
# simulator and the tests alike (spec/replication.md).


class NotLeaderOrFollowerError(KafkaError):
    """This broker does not lead the partition (or is not a replica of it)."""

    code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class NotEnoughReplicasError(KafkaError):
    """acks=all while the ISR is smaller than min.insync.replicas: nothing appended
    (REPL-5)."""

    code = ErrorCode.NOT_ENOUGH_REPLICAS


# ---------------------------------------------------------------- idempotent producers
# The broker's answers to a producer whose batch does not fit what it knows of that
# producer (kafka_ref/log/producer_entry.py, spec/idempotence.md). None is retriable:
# the client decides, from the error, whether to resend, reset or give up.


class OutOfOrderSequenceError(KafkaError):
    """A batch's first sequence is not the producer's last sequence + 1: a gap, or a
    duplicate older than the five batches the broker remembers (Kafka:
    OutOfOrderSequenceException)."""

    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    """A batch from an older epoch of its producer id: a fenced zombie (Kafka:
    InvalidProducerEpochException)."""

    code = ErrorCode.INVALID_PRODUCER_EPOCH


class UnknownProducerIdError(KafkaError):
    """A producer id the partition has no state for sends a batch that does not start at
    sequence 0: its state expired or was deleted with the log (Kafka 2.x:
    UnknownProducerIdException)."""

    code = ErrorCode.UNKNOWN_PRODUCER_ID
