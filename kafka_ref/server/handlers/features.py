"""The features a broker shows in its ApiVersions answer (KIP-584): supported and finalized.

From ApiVersions v3 the answer carries, in tagged fields, the range of levels the broker
supports for each feature (`SupportedFeatures`), the cluster's finalized level of each
(`FinalizedFeatures`) and the epoch of that information (`FinalizedFeaturesEpoch`, -1 when
unknown). A client reads them to choose a protocol: the Java producer 4.x speaks
transactions v2 (KIP-890 part 2) only when `transaction.version` is finalized at 2 or more.

kafka-ref shows the features whose level changes what its clients do, `transaction.version`
(kafka_ref/txn/transaction_version.py) and `share.version` (kafka_ref/share/share_version.py):
each supported 0-2, and finalized at the level of the cluster's FeatureLevelRecord when the
broker reads a KRaft metadata image (the epoch is the offset of the image it last published,
as in Kafka), else at the broker's `transaction.version` config and Kafka 4.4's default
share.version (epoch 0). A level of 0 is not finalized, as in Kafka's
`FeaturesImage`, so it is left out. ApiVersions before v4 leaves out supported ranges that
start at 0 (KAFKA-17011). (Kafka: `KafkaApis.handleApiVersionsRequest`,
`ApiVersionsResponse.createApiVersionsResponse`.)

Rules: TXN-91, SHARE-50.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_ref.metadata.image import MetadataImage
from kafka_ref.protocol.messages import ApiVersionsResponse
from kafka_ref.share import share_version
from kafka_ref.txn import transaction_version

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

MIN_VERSION_WITH_FEATURES = 3
MIN_VERSION_WITH_LEVEL_ZERO = 4  # v4 fixed KAFKA-17011: a supported minimum may be 0
SUPPORTED = {  # the features shown, with the levels a kafka-ref broker supports
    transaction_version.FEATURE_NAME: transaction_version.SUPPORTED,
    share_version.FEATURE_NAME: share_version.SUPPORTED,
}


def finalized_features(apis: ApiContext) -> tuple[int, dict[str, int]]:
    """(epoch, feature -> finalized level) of the cluster this broker belongs to."""
    image = getattr(apis.controller, "image", None)  # a KRaft broker's metadata image
    if isinstance(image, MetadataImage):
        levels = {name: image.features.get(name, 0) for name in SUPPORTED}
        epoch = max(apis.controller.published_offset, 0)
    else:
        levels = {
            transaction_version.FEATURE_NAME: apis.config["transaction.version"],
            share_version.FEATURE_NAME: share_version.LATEST_PRODUCTION,
        }
        epoch = 0
    return epoch, {name: level for name, level in levels.items() if level > 0}


def add_features(apis: ApiContext, api_version: int, body: Any) -> Any:
    """Fill the feature fields of an ApiVersions answer `body` for a v`api_version` request."""
    if api_version < MIN_VERSION_WITH_FEATURES:
        return body
    body.supported_features = [
        ApiVersionsResponse.SupportedFeatureKey(name=name, min_version=low, max_version=high)
        for name, (low, high) in sorted(SUPPORTED.items())
        if low > 0 or api_version >= MIN_VERSION_WITH_LEVEL_ZERO
    ]
    epoch, finalized = finalized_features(apis)
    body.finalized_features_epoch = epoch
    body.finalized_features = [
        ApiVersionsResponse.FinalizedFeatureKey(
            name=name, max_version_level=level, min_version_level=level
        )
        for name, level in sorted(finalized.items())
    ]
    return body
