"""Transactional id expiration: the coordinator forgets ids that have been idle too long.

Every `transactional.id` a producer ever used has an entry in the coordinator's memory and
a record in `__transaction_state`. Applications come and go (a stream job's ids carry its
task ids), so without expiry both would grow forever. Kafka's
`TransactionStateManager.removeExpiredTransactionalIds` runs every
`transaction.remove.expired.transaction.cleanup.interval.ms` (one hour) and removes the
ids whose last update is at least `transactional.id.expiration.ms` (seven days) old:

* only ids at rest expire: Empty, CompleteCommit, CompleteAbort (Kafka:
  `TransactionState.isExpirationAllowed`); an open or deciding transaction keeps its id,
  and so does one with a transition pending;
* the removal is a transition to Dead (`prepareDead`): while it is pending, requests for
  the id answer CONCURRENT_TRANSACTIONS;
* the coordinator appends one **tombstone** per id (its key with a null value) to the
  id's `__transaction_state` partition; only once that write is durable is the id dropped
  from memory. A failed write leaves the id as it was (the next run tries again). The
  partition is compacted, so the cleaner later drops the id's old records and, after
  `delete.retention.ms`, the tombstone; a coordinator that loads the partition in between
  replays the tombstone and does not bring the id back (TXN-10's fold).

An id used again after it expired starts from scratch: InitProducerId gives it a new
producer id.

Rules: TXN-81.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafka_ref.errors import ErrorCode
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.txn import transaction_log as tlog
from kafka_ref.txn.transaction_metadata import TransactionMetadata
from kafka_ref.txn.transaction_metadata import TransactionState as S

logger = logging.getLogger("kafka_ref.txn.expiration")

DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS = 7 * 24 * 3_600_000  # transactional.id.expiration.ms
DEFAULT_REMOVE_EXPIRED_INTERVAL_MS = 3_600_000
# ^ transaction.remove.expired.transaction.cleanup.interval.ms

EXPIRATION_ALLOWED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


def should_expire(meta: TransactionMetadata, now: int, expiration_ms: int) -> bool:
    """Kafka `shouldExpire`: at rest, nothing pending, last updated expiration_ms ago."""
    return (
        meta.state in EXPIRATION_ALLOWED
        and meta.pending_state is None
        and meta.txn_last_update_timestamp <= now - expiration_ms
    )


def expire_partition(
    txns: dict[str, TransactionMetadata],
    partition: int,
    now: int,
    expiration_ms: int,
    append: Callable[[int, bytes, Callable[[ErrorCode], None]], None],
    still_owner: Callable[[], bool],
) -> list[str]:
    """Start removing the expired ids of one partition: prepare Dead, append their
    tombstones in one batch, drop them once it is durable. Returns the ids chosen."""
    expired = [meta for meta in txns.values() if should_expire(meta, now, expiration_ms)]
    if not expired:
        return []
    for meta in expired:
        meta.prepare_dead(now)
    batch = build_batch([Record(tlog.key_bytes(m.transactional_id), None, now) for m in expired])

    def done(error: ErrorCode) -> None:
        owner = still_owner()
        for meta in expired:
            if error == ErrorCode.NO_ERROR and owner and txns.get(meta.transactional_id) is meta:
                del txns[meta.transactional_id]
            else:
                meta.abort_transition()
        if error == ErrorCode.NO_ERROR and owner:
            logger.info(
                "removed expired transactional ids %s of partition %d",
                [m.transactional_id for m in expired],
                partition,
            )

    append(partition, batch, done)
    return [meta.transactional_id for meta in expired]
