"""ApiVersions (API key 18): "which requests, at which versions, do you understand?"

Every Kafka API is versioned independently, and a client and a broker of different ages must
agree on a version for each request. Since KIP-35 (Kafka 0.10) a client opens every
connection with ApiVersions; the broker answers with one `(api_key, min_version,
max_version)` entry per API it implements, and from then on the client sends each request at
the highest version both sides know. That is why this broker's advertised ranges matter so
much: librdkafka switches whole features on from them (record batch v2 needs Produce 3 and
Fetch 4, zstd needs Produce 7 and Fetch 10), and kafka-python guesses a broker release from
them.

ApiVersions is special in three ways, all consequences of being the first request:

* v3 is the first *flexible* version (KIP-511): the request carries the client's software name
  and version as compact strings, the response uses a compact array and tag buffers. The
  response's tagged fields (SupportedFeatures, FinalizedFeatures...) describe KIP-584 feature
  flags; a broker without them simply leaves them out, which is what tags are for.
* The response header is *always* v0 (no tag buffer), even for v3+. A client does not yet
  know which versions the broker speaks, so it must be able to read the correlation id
  without knowing whether tags follow (PROTO-3, `frames.response_header_version`).
* A request at a version the broker does not know is not a protocol error: the broker
  answers with a v0 body, error UNSUPPORTED_VERSION (35) and its supported ranges, and the
  client retries at a version it finds there (KIP-511, `frames.unsupported_api_versions_response`).

Kafka's definitions: ApiVersionsRequest.json, ApiVersionsResponse.json (v4 only fixes how
SupportedFeatures with MinVersion 0 are reported; v5, Kafka 4.4, adds the request's
`ClusterId` and `NodeId`: the cluster and broker the client meant to reach, KIP-1242,
BROKER-61). kafka-ref declares 0-5.

Every listener serves it, the controller listener too (PROTO-21): whoever connects must be
able to ask what is spoken there.
"""

from kafka_ref.protocol.schema import Field, Message

ApiVersionsRequest = Message(
    "ApiVersionsRequest",
    api_key=18,
    valid_versions="0-5",
    flexible_versions="3+",
    listeners=("broker", "controller"),
    about="Versions 0 through 2 are empty; v3 adds who the client is (KIP-511).",
    fields=[
        Field("ClientSoftwareName", "string", "3+", about="The name of the client."),
        Field("ClientSoftwareVersion", "string", "3+", about="The version of the client."),
        Field(
            "ClusterId",
            "string",
            "5+",
            nullable_versions="5+",
            default=None,
            about="The cluster the client expects to reach, or null (KIP-1242).",
        ),
        Field(
            "NodeId",
            "int32",
            "5+",
            default=-1,
            about="The broker the client expects to reach, or -1 (KIP-1242).",
        ),
    ],
)

ApiVersionsResponse = Message(
    "ApiVersionsResponse",
    api_key=18,
    valid_versions="0-5",
    flexible_versions="3+",
    about="v1 adds throttle time; v3 is flexible. The header is always response header v0.",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The top-level error code."),
        Field(
            "ApiKeys",
            "[]ApiVersion",
            "0+",
            about="The APIs supported by the broker.",
            fields=[
                Field("ApiKey", "int16", "0+", about="The API index."),
                Field("MinVersion", "int16", "0+", about="The minimum supported version."),
                Field("MaxVersion", "int16", "0+", about="The maximum supported version."),
            ],
        ),
        Field(
            "ThrottleTimeMs",
            "int32",
            "1+",
            about="The time in ms for which the request was throttled by a quota, or zero.",
        ),
        Field(
            "SupportedFeatures",
            "[]SupportedFeatureKey",
            "3+",
            tagged_versions="3+",
            tag=0,
            about="Features supported by the broker (KIP-584).",
            fields=[
                Field("Name", "string", "3+", about="The name of the feature."),
                Field("MinVersion", "int16", "3+", about="The minimum supported version."),
                Field("MaxVersion", "int16", "3+", about="The maximum supported version."),
            ],
        ),
        Field(
            "FinalizedFeaturesEpoch",
            "int64",
            "3+",
            tagged_versions="3+",
            tag=1,
            default=-1,
            about="The epoch of the finalized features, or -1 if unknown.",
        ),
        Field(
            "FinalizedFeatures",
            "[]FinalizedFeatureKey",
            "3+",
            tagged_versions="3+",
            tag=2,
            about="Cluster-wide finalized features, valid only if FinalizedFeaturesEpoch >= 0.",
            fields=[
                Field("Name", "string", "3+", about="The name of the feature."),
                Field("MaxVersionLevel", "int16", "3+", about="The finalized max version level."),
                Field("MinVersionLevel", "int16", "3+", about="The finalized min version level."),
            ],
        ),
        Field(
            "ZkMigrationReady",
            "bool",
            "3+",
            tagged_versions="3+",
            tag=3,
            default=False,
            about="Set by a KRaft controller when ZK migration could start.",
        ),
    ],
)
