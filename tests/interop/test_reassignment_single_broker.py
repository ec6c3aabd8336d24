"""Reassignments and elections on a single broker (embedded mode), with kafka-python's
admin client: answered as a one-broker Kafka answers them (CTRL-29)."""

from __future__ import annotations

import pytest
from kafka import TopicPartition as KTP
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

pytestmark = pytest.mark.timeout(120)


@pytest.mark.spec("CTRL-29")
def test_a_single_broker_answers_as_a_one_broker_kafka(kafka_ref_broker):
    admin = KafkaAdminClient(bootstrap_servers=kafka_ref_broker.bootstrap)
    try:
        admin.create_topics([NewTopic("single-reassign", 1, 1)])
        own = admin.describe_cluster()["brokers"][0]["broker_id"]
        tp, missing = KTP("single-reassign", 0), KTP("single-reassign", 5)
        assert admin.alter_partition_reassignments({tp: [own], missing: [own]}) == {
            tp: None,
            missing: UnknownTopicOrPartitionError,
        }
        assert admin.alter_partition_reassignments({tp: [own + 1]}) == {
            tp: InvalidReplicationAssignmentError
        }
        assert admin.alter_partition_reassignments({tp: None}) == {
            tp: NoReassignmentInProgressError
        }
        assert admin.list_partition_reassignments() == {}
        result = admin.elect_leaders(0, {"single-reassign": [0]}, raise_errors=False)
        (topic,) = result.replica_election_results
        assert [(p[0], p[1]) for p in topic[1]] == [(0, 84)]  # ELECTION_NOT_NEEDED
    finally:
        admin.close()
