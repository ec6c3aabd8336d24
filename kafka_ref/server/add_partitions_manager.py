"""Transaction verification (KIP-890 part 1): a partition leader asks the transaction
coordinator before a transaction's first write to the partition (Kafka:
`AddPartitionsToTxnManager`, `ReplicaManager.handleProduceAppend`, `VerificationGuard`).

A transactional producer must add a partition to its transaction (AddPartitionsToTxn)
before it writes there, so that the coordinator will write that partition's marker. A
producer with a bug, or a produce request that arrives late (retried after its
transaction was already aborted), breaks that: its batch opens a transaction in the
partition that no coordinator knows of. No marker will ever close it, and the partition's
last stable offset stays stuck behind it: a *hanging transaction*; read_committed
consumers stop.

So the leader checks. When a produce request with a transactional id brings a
transactional batch for a partition where that producer has no open transaction yet, the
leader sends the coordinator (the leader of the id's `__transaction_state` partition)
AddPartitionsToTxn v4 with `verify_only=true`, broker to broker, and appends only if the
coordinator answers that the partition is in the producer's open transaction. Otherwise the
batch is refused (TXN-23): INVALID_TXN_STATE when the partition is not in the transaction;
the retriable NOT_ENOUGH_REPLICAS when the coordinator could not answer (not available,
loading, moved, or the transaction completing), which every client retries without a
metadata refresh; INVALID_PRODUCER_EPOCH for a fenced producer. Later batches of the same
transaction need no question: the partition's open transaction proves it was verified.

**The guard.** Between the coordinator's yes and the append the transaction may end: an
abort's marker can reach the partition while the answer travels. Appending then would open
the hanging transaction the check was for. So before asking, the leader records a
*verification guard* for (partition, producer id), a fresh object; a marker for that
producer, or the first append of its transaction, removes it, and the append after the
answer happens only if the very guard it started with is still there. (Kafka keeps the
guard in `ProducerStateManager`'s `VerificationStateEntry`; one event loop here makes the
check and the append one step.)

**The order.** Kafka reads one request at a time per connection, so a producer's next
batch reaches the leader only after the verified one was appended. kafka-ref handles a
connection's pipelined requests at once, so the manager keeps that order itself (TXN-89):
while a verification of (partition, producer) is in flight, every later transactional batch
of that producer for the partition is verified too, even once an earlier batch has opened
the transaction there; the answers come back in the order asked, so the batches are
appended in the order they came. (Without it, a batch arriving after the first append but
before its predecessors' answers would be appended ahead of them:
OUT_OF_ORDER_SEQUENCE_NUMBER, fatal for a transactional producer.)

**Transactions v2** (KIP-890 part 2, TXN-95). A producer of `transaction.version` 2 sends
no AddPartitionsToTxn: its Produce v12 (and TxnOffsetCommit v5) asks the leader to add the
partition. The same question then goes as AddPartitionsToTxn v5 with `verify_only=false`,
and the coordinator adds the partition to the producer's transaction (beginning one if none
is open) before answering; the guard and the order work as for a verification. A batch of
the producer's next transaction, one epoch up, is not part of a transaction still open
here at the older epoch: it is added too, and the coordinator makes it wait
(CONCURRENT_TRANSACTIONS, retried) until the older transaction's markers are written.

`transaction.partition.verification.enable` (default true, as in Kafka 3.6+) turns the
verification off; the adding of transactions v2 is the protocol and always happens.
Kafka batches the questions of many produce requests into one request per coordinator;
kafka-ref sends one per produce request, over the same `InterBrokerChannel` kind as the
markers. When the coordinator is this broker (always, on one broker) the question takes no
socket and is answered before `verify` returns (server/loopback.py, TXN-24).

Rules: TXN-23, TXN-24, TXN-89, TXN-95.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafka_ref.cluster.metadata import ClusterMetadataApi
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import AddPartitionsToTxnRequest, ApiKey
from kafka_ref.record.batch import BatchHeader
from kafka_ref.security.inter_broker import PLAINTEXT, InterBrokerSecurity
from kafka_ref.server.inter_broker_channel import BrokerUnavailableError, InterBrokerChannel
from kafka_ref.server.loopback import Loopback
from kafka_ref.txn.transaction_log import TRANSACTION_STATE_TOPIC, partition_for

logger = logging.getLogger("kafka_ref.server.add_partitions_manager")

TopicPartition = tuple[str, int]
Verified = Callable[[dict[TopicPartition, tuple[ErrorCode, str]]], None]
VERIFY_VERSION = 4  # the first version with verify_only (KIP-890 part 1)
ADD_VERSION = 5  # a leader adding a partition for a transactions-v2 producer (KIP-890 part 2)

# Coordinator answers a client may not retry correctly become NOT_ENOUGH_REPLICAS, which
# every client retries without a metadata refresh (Kafka: `handleProduceAppend`).
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NETWORK_EXCEPTION,
    }
)


def producer_error(error: ErrorCode) -> tuple[ErrorCode, str]:
    """The produce response's error for a failed verification, with its message."""
    if error == ErrorCode.INVALID_TXN_STATE:
        return error, "Partition was not added to the transaction"
    if error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return ErrorCode.NOT_ENOUGH_REPLICAS, (
            "Unable to verify the partition has been added to the transaction. "
            f"Underlying error: {error.name}"
        )
    if error == ErrorCode.PRODUCER_FENCED:  # producers expect the older code here
        return ErrorCode.INVALID_PRODUCER_EPOCH, ""
    return error, ""


class AddPartitionsToTxnManager:
    """Verifies partitions with their transaction coordinator and keeps the guards."""

    def __init__(
        self,
        controller: ClusterMetadataApi,
        num_txn_partitions: int,
        enabled: bool = True,
        security: InterBrokerSecurity = PLAINTEXT,
        loopback: Loopback | None = None,
    ) -> None:
        self.controller, self.num_txn_partitions, self.enabled = (
            controller,
            num_txn_partitions,
            enabled,
        )
        self.channel = InterBrokerChannel(
            controller, "add-partitions-to-txn-sender", security, loopback=loopback
        )
        self._guards: dict[tuple[TopicPartition, int], object] = {}
        # verifications asked and not yet answered, per (partition, producer id) (TXN-89)
        self._in_flight: dict[tuple[TopicPartition, int], int] = {}

    # ------------------------------------------------------------------ the guard
    def needs_verification(
        self, tp: TopicPartition, header: BatchHeader, ongoing: dict[int, int], add: bool = False
    ) -> bool:
        """A transactional batch of a producer without an open transaction here (at the
        batch's epoch), or one behind a batch of the producer still being verified: it waits
        its turn, so the producer's batches are appended in the order they came (the channel
        answers in order; TXN-89). `add`: a transactions-v2 batch, whose partition the
        leader adds whatever the verification config says (TXN-95)."""
        key = (tp, header.producer_id)
        return (
            (self.enabled or add)
            and header.is_transactional
            and not header.is_control
            and (header.producer_id not in ongoing or key in self._guards or key in self._in_flight)
        )

    def start(self, tp: TopicPartition, producer_id: int) -> object:
        """The guard of (tp, producer id): the one already waiting, or a fresh one."""
        return self._guards.setdefault((tp, producer_id), object())

    def may_append(
        self, tp: TopicPartition, producer_id: int, guard: object, ongoing: dict[int, int]
    ) -> bool:
        """After a yes: the transaction is open here now (an earlier batch of it was
        appended), or `guard` is still the partition's guard (no marker came since)."""
        return producer_id in ongoing or self._guards.get((tp, producer_id)) is guard

    def clear(self, tp: TopicPartition, producer_id: int) -> None:
        """A marker or a batch of the transaction was written: the guard is done. (A
        failed verification or append leaves it for the retry, as Kafka does.)"""
        self._guards.pop((tp, producer_id), None)

    # ------------------------------------------------------------------ the question
    def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        callback: Verified,
        add: bool = False,
    ) -> None:
        """Ask the id's coordinator; `callback` gets the produce error of each partition
        that failed (an empty dict: every partition is in the transaction). Until it is
        called, later batches of the producer for these partitions queue behind (TXN-89).
        With `add` (transactions v2) the coordinator adds the partitions (TXN-95)."""
        keys = [(tp, producer_id) for tp in partitions]
        for key in keys:
            self._in_flight[key] = self._in_flight.get(key, 0) + 1

        def answered(errors: dict[TopicPartition, tuple[ErrorCode, str]]) -> None:
            for key in keys:
                left = self._in_flight.pop(key) - 1
                if left:
                    self._in_flight[key] = left
            callback(errors)

        coordinator = self._coordinator(transactional_id)
        if coordinator is None:  # no topic, no leader: the transaction cannot have begun
            return answered(
                dict.fromkeys(partitions, producer_error(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            )
        body = AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=not add,
                    topics=[
                        AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=[p])
                        for t, p in partitions
                    ],
                )
            ]
        )
        self.channel.send(
            coordinator,
            ApiKey.ADD_PARTITIONS_TO_TXN,
            ADD_VERSION if add else VERIFY_VERSION,
            body,
            lambda response: self._answered(coordinator, response, partitions, answered),
        )

    def _coordinator(self, transactional_id: str) -> int | None:
        index = partition_for(transactional_id, self.num_txn_partitions)
        state = self.controller.partition_state(TRANSACTION_STATE_TOPIC, index)
        return None if state is None or state.leader < 0 else state.leader

    def _answered(
        self, node: int, response, partitions: list[TopicPartition], callback: Verified
    ) -> None:
        if isinstance(response, BrokerUnavailableError):
            logger.warning("cannot verify with coordinator %d: %s", node, response)
            return callback(dict.fromkeys(partitions, producer_error(ErrorCode.NETWORK_EXCEPTION)))
        if response.error_code != ErrorCode.NO_ERROR:
            error = producer_error(ErrorCode(response.error_code))
            return callback(dict.fromkeys(partitions, error))
        failed: dict[TopicPartition, tuple[ErrorCode, str]] = {}
        for result in response.results_by_transaction:
            for topic in result.topic_results:
                for p in topic.results_by_partition:
                    if p.partition_error_code != ErrorCode.NO_ERROR:
                        error = ErrorCode(p.partition_error_code)
                        failed[(topic.name, p.partition_index)] = producer_error(error)
        callback(failed)

    def shutdown(self) -> None:
        self.channel.close()
