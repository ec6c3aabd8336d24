"""kafka-ref's own Kafka clients: a producer, a consumer and an admin client.

They mirror the Java client's architecture and names, one concept per module:

    producer.py  -> partitioner.py -> accumulator.py -> sender.py ─┐
                                      (producer_batch.py)          │
    consumer.py  -> subscription_state.py, consumer_fetch.py, ─────┼-> network_client.py
                    offset_lookup.py, consumer_coordinator.py      │   -> connection.py
                    (abstract_coordinator.py, heartbeat.py,        │
                     offset_committer.py)                          │
    admin.py -> admin_requests.py ─────────────────────────────────┘
      (admin_groups.py, admin_transactions.py, admin_acls.py,
       admin_quotas.py, admin_scram.py, admin_replicas.py)
                                                 cluster_view.py: the cluster view they share
    transaction_manager.py: transactions (transaction_state.py, txn_requests.py) on top of
    idempotence.py, the idempotent producer's id, epoch and sequences (sender.py's)

Start with `docs/clients.md` for the tour; the rules are in `spec/client.md`
(CLIENT-n), for the idempotent producer `spec/idempotent_producer.md` (IPROD-n), for the
transactional producer `spec/transactions.md` (TXN-40..).
"""

from kafka_ref.client.admin import Admin, ConfigEntry, ConfigResource, NewTopic, TopicDescription
from kafka_ref.client.consumer import Consumer, OffsetAndTimestamp
from kafka_ref.client.consumer_coordinator import ConsumerRebalanceListener
from kafka_ref.client.consumer_fetch import ConsumerRecord
from kafka_ref.client.offset_committer import CommitFailedError, RebalanceInProgressError
from kafka_ref.client.producer import Producer, ProducerFencedError, TransactionStateError
from kafka_ref.client.producer_batch import RecordMetadata
from kafka_ref.common import OffsetAndMetadata, TopicPartition

__all__ = [
    "Admin",
    "CommitFailedError",
    "ConfigEntry",
    "ConfigResource",
    "Consumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "Producer",
    "ProducerFencedError",
    "RebalanceInProgressError",
    "RecordMetadata",
    "TopicDescription",
    "TopicPartition",
    "TransactionStateError",
]
