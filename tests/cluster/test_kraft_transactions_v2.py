"""Transactions v2 on a KRaft node: the finalized `transaction.version` comes from the
metadata log's FeatureLevelRecord (a new cluster's bootstrap records, level 2), not from a
config, and a producer that reads it speaks v2: the late produce is fenced (TXN-91, TXN-97).
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance import late_produce
from kafka_ref.conformance.history import check
from kafka_ref.conformance.transactions import finalized_transaction_version
from kafka_ref.conformance.wire import Wire
from tests.cluster.test_kraft_brokers import CombinedCluster

pytestmark = pytest.mark.timeout(180)


@pytest.mark.spec("TXN-91", "TXN-97")
def test_a_kraft_node_finalizes_transaction_version_2_from_its_metadata_log(tmp_path):
    cluster = CombinedCluster(str(tmp_path), nodes=1).start()
    try:
        port = cluster.broker_ports[1]
        with Wire("127.0.0.1", port) as wire:
            assert finalized_transaction_version(wire) == 2
            # the features epoch is the offset of the image the broker published, not the 0
            # of a broker that takes the level from its config
            assert wire.api_versions(4).finalized_features_epoch > 0
            assert wire.create_topic("kraft-late", 1) == 0
        spoken, history = late_produce.run("127.0.0.1", port, "kraft-late", "kraft-late-1")
        assert spoken == 2
        assert check(history).valid, check(history)
    finally:
        cluster.close()
