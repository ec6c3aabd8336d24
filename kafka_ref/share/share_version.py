"""`share.version`: whether a cluster runs share groups (KIP-932), as a feature (KIP-584).

Share groups are a *feature* like `transaction.version`: a name and a finalized level the
cluster agrees on. Level 0 is off; Kafka 4.2 made level 1 generally available and a Kafka
4.4 cluster is formatted at level 2. Brokers advertise it in ApiVersions, supported 0-2 and
the finalized level, and the share consumer reads it before it uses ShareGroupHeartbeat.
A KRaft cluster finalizes it with a FeatureLevelRecord; a broker without KRaft features
(kafka-ref's embedded and ZooKeeper modes) runs at Kafka 4.4's default level.

Kafka: `org.apache.kafka.server.common.ShareVersion`.
"""

from __future__ import annotations

FEATURE_NAME = "share.version"
SV_0, SV_1, SV_2 = 0, 1, 2
LATEST_PRODUCTION = SV_2  # a Kafka 4.4 cluster's level, formatted with its defaults
SUPPORTED = (SV_0, SV_2)  # (min, max) a kafka-ref broker supports
