"""`transaction.version`: which transaction protocol a cluster runs (KIP-890, KIP-1228).

Like `metadata.version`, `transaction.version` is a *feature* (KIP-584): a name and a
finalized level the whole cluster agrees on. A KRaft cluster finalizes it with a
FeatureLevelRecord (Kafka 4 formats a new cluster at level 2); a broker without KRaft
features (kafka-ref's embedded and ZooKeeper modes) takes it from its `transaction.version`
config. Brokers advertise it in ApiVersions, supported 0-2 and the finalized level, and a
client reads the finalized level to choose its protocol (TXN-91):

    0, 1  transactions v1 (KIP-98, with KIP-890 part 1's verification): the producer adds
          each partition with AddPartitionsToTxn and its group with AddOffsetsToTxn; the
          epoch stays the same from one transaction to the next.
    2     transactions v2 (KIP-890 part 2): the coordinator bumps the producer epoch at
          every EndTxn (v5, which answers the new producer id and epoch), writes the
          markers with the bumped epoch, and the partition leader adds a partition to the
          transaction itself when a transactional Produce v12 arrives (TxnOffsetCommit v5
          for the group). A produce left over from an earlier transaction carries an older
          epoch and is fenced.

The coordinator does not decide by the finalized level alone: as in Kafka, each request
says which protocol its client speaks by its version (EndTxn v5, AddPartitionsToTxn v5 from
a broker), and the transaction remembers it (`TransactionMetadata.client_transaction_version`,
written to `__transaction_state`), so that a coordinator that loads it carries on in the
same protocol. The finalized level decides what the coordinator does on its own (aborting a
timed-out transaction) and what clients are told.

Kafka: `org.apache.kafka.server.common.TransactionVersion` (`supportsEpochBump`,
`transactionVersionForEndTxn`, `transactionVersionForAddPartitionsToTxn`).
"""

from __future__ import annotations

FEATURE_NAME = "transaction.version"
TV_0, TV_1, TV_2 = 0, 1, 2
LATEST_PRODUCTION = TV_2  # Kafka 4's default for a new cluster
SUPPORTED = (TV_0, TV_2)  # (min, max) a kafka-ref broker supports

# The first versions that speak transactions v2.
END_TXN_V2_VERSION = 5
ADD_PARTITIONS_V2_VERSION = 5  # sent by a partition leader to add a partition (not verify)
PRODUCE_V2_VERSION = 12
TXN_OFFSET_COMMIT_V2_VERSION = 5


def unsupported(level: int) -> str | None:
    """Why a broker cannot run at `level`, or None."""
    low, high = SUPPORTED
    return None if low <= level <= high else f"{level} is not a supported level ({low}-{high})"


def supports_epoch_bump(level: int) -> bool:
    """Whether a transaction of this version bumps the epoch at its end (KIP-890 part 2)."""
    return level >= TV_2


def for_end_txn(api_version: int) -> int:
    """The transaction version of a client sending EndTxn at `api_version`."""
    return TV_2 if api_version >= END_TXN_V2_VERSION else TV_0


def for_add_partitions(api_version: int, verify_only: bool) -> int:
    """The transaction version of an AddPartitionsToTxn: v5 that adds (not verifies) comes
    from a partition leader serving a transactions-v2 Produce or TxnOffsetCommit."""
    return TV_2 if api_version >= ADD_PARTITIONS_V2_VERSION and not verify_only else TV_0


def adds_partitions_implicitly(produce_or_commit_version: int, first_v2_version: int) -> bool:
    """Whether a Produce (v12+) or TxnOffsetCommit (v5+) adds its partition to the
    transaction itself, instead of verifying that the client added it."""
    return produce_or_commit_version >= first_v2_version
