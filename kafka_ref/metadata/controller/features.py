"""Features: the finalized levels a cluster runs at, and the records a new cluster starts with.

A KRaft cluster's behaviour is versioned by *features* (KIP-584, KIP-778): each is a name
and a finalized level, set by a FeatureLevelRecord. `metadata.version` says which records
and record versions the log may hold; `eligible.leader.replicas.version` 1 turns on
KIP-966's eligible leader replicas (kafka-ref's controller always keeps them, as a
Kafka 4.4 cluster formatted with its defaults does); `group.version`, `transaction.version`,
`share.version` and `streams.version` the newer group and transaction protocols.

A new cluster's log starts with the bootstrap records that `kafka-storage format` writes
into the snapshot `00000000000000000000-0000000000.checkpoint`: a FeatureLevelRecord per
feature, metadata.version first. Kafka 4.4 formats at metadata.version 33 and the levels
below (read from the bootstrap snapshot of a Kafka 4.4 formatted with its defaults). The
quorum's own version, `kraft.version`, is not among them: it is the quorum's, written as a
KRaftVersionRecord control record in the snapshot's header (snapshot.py, META-6), never
as a FeatureLevelRecord.

A broker registers with the range of levels it supports for each feature; it may join only
if every finalized level is in its range (Kafka:
`ClusterControlManager.processRegistrationFeature`).

Rules: KCTRL-1 (bootstrap), KCTRL-2 (a broker must support every finalized level).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_ref.metadata import records as r
from kafka_ref.metadata.image import METADATA_VERSION

ELR_VERSION = "eligible.leader.replicas.version"
METADATA_VERSION_LATEST = 33  # Kafka 4.4's latest production metadata.version

BOOTSTRAP_FEATURES: Mapping[str, int] = {
    METADATA_VERSION: METADATA_VERSION_LATEST,
    ELR_VERSION: 1,
    "group.version": 1,
    "share.version": 2,
    "streams.version": 1,
    "transaction.version": 2,
}


def bootstrap_records(
    features: Mapping[str, int] = BOOTSTRAP_FEATURES,
) -> list[r.FeatureLevelRecord]:
    """The FeatureLevelRecords a new cluster's log begins with, metadata.version first
    (Kafka: `BootstrapMetadata`, `FeaturesImage.write`)."""
    assert METADATA_VERSION in features, "a cluster always has a metadata.version"
    names = sorted(features, key=lambda name: (name != METADATA_VERSION, name))
    return [r.FeatureLevelRecord(name=name, feature_level=features[name]) for name in names]


def unsupported_feature(
    finalized: Mapping[str, int], supported: Mapping[str, tuple[int, int]]
) -> str | None:
    """Why a broker supporting `supported` (name -> (min, max)) cannot join a cluster at the
    `finalized` levels, or None. A feature the broker does not name is one it supports only
    at level 0 (off)."""
    for name, level in sorted(finalized.items()):
        low, high = supported.get(name, (0, 0))
        if not low <= level <= high:
            return (
                f"Unable to register because the broker does not support finalized version "
                f"{level} of {name}. The broker supports versions {low}-{high}"
            )
    return None
