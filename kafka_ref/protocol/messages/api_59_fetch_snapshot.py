"""FetchSnapshot (API key 59, KIP-630): a replica that fell behind copies the leader's snapshot.

The metadata log cannot grow forever: a controller periodically writes a snapshot of the
metadata image at some offset and epoch, and the leader may then delete the log before it.
A follower whose fetch offset is below the log start offset gets, in its Fetch response, the
`SnapshotId` to load instead (FetchResponse v12+); it then pulls the snapshot's bytes with
FetchSnapshot, in chunks from `Position`, and resumes fetching the log after it. The bytes
are records but may stop in the middle of a batch (`UnalignedRecords`).

Version history (Kafka's JSON comments): v0 flexible; v1 adds the follower's directory id and
the leader's endpoints (KIP-853).

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: FetchSnapshotRequest.json, FetchSnapshotResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

FetchSnapshotRequest = Message(
    "FetchSnapshotRequest",
    api_key=59,
    valid_versions="0-1",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field(
            "ClusterId",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            tagged_versions="0+",
            tag=0,
            about="The clusterId if known, to validate fetches before registration.",
        ),
        Field("ReplicaId", "int32", "0+", default=-1, about="The broker ID of the follower."),
        Field(
            "MaxBytes",
            "int32",
            "0+",
            default=2147483647,
            about="The maximum bytes to fetch from all of the snapshots.",
        ),
        Field(
            "Topics",
            "[]TopicSnapshot",
            "0+",
            about="The topics to fetch.",
            fields=[
                Field("Name", "string", "0+", about="The name of the topic to fetch."),
                Field(
                    "Partitions",
                    "[]PartitionSnapshot",
                    "0+",
                    about="The partitions to fetch.",
                    fields=[
                        Field("Partition", "int32", "0+", about="The partition index."),
                        Field(
                            "CurrentLeaderEpoch",
                            "int32",
                            "0+",
                            about="The current leader epoch, or -1 if unknown.",
                        ),
                        Field(
                            "SnapshotId",
                            "SnapshotId",
                            "0+",
                            about="The snapshot endOffset and epoch to fetch.",
                            fields=[
                                Field(
                                    "EndOffset",
                                    "int64",
                                    "0+",
                                    about="The end offset of the snapshot.",
                                ),
                                Field("Epoch", "int32", "0+", about="The epoch of the snapshot."),
                            ],
                        ),
                        Field(
                            "Position",
                            "int64",
                            "0+",
                            about="The byte position within the snapshot to start fetching from.",
                        ),
                        Field(
                            "ReplicaDirectoryId",
                            "uuid",
                            "1+",
                            tagged_versions="1+",
                            tag=0,
                            about="The directory id of the follower fetching.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

FetchSnapshotResponse = Message(
    "FetchSnapshotResponse",
    api_key=59,
    valid_versions="0-1",
    flexible_versions="0+",
    fields=[
        Field(
            "ThrottleTimeMs",
            "int32",
            "0+",
            about="The quota throttle time in ms, or zero.",
        ),
        Field("ErrorCode", "int16", "0+", about="The top level response error code."),
        Field(
            "Topics",
            "[]TopicSnapshot",
            "0+",
            about="The topics to fetch.",
            fields=[
                Field("Name", "string", "0+", about="The name of the topic to fetch."),
                Field(
                    "Partitions",
                    "[]PartitionSnapshot",
                    "0+",
                    about="The partitions to fetch.",
                    fields=[
                        Field("Index", "int32", "0+", about="The partition index."),
                        Field(
                            "ErrorCode",
                            "int16",
                            "0+",
                            about="The error code, or 0 if there was no fetch error.",
                        ),
                        Field(
                            "SnapshotId",
                            "SnapshotId",
                            "0+",
                            about="The snapshot endOffset and epoch fetched.",
                            fields=[
                                Field("EndOffset", "int64", "0+", about="The snapshot end offset."),
                                Field("Epoch", "int32", "0+", about="The snapshot epoch."),
                            ],
                        ),
                        Field(
                            "CurrentLeader",
                            "LeaderIdAndEpoch",
                            "0+",
                            tagged_versions="0+",
                            tag=0,
                            about="The leader of the partition at the time of the snapshot.",
                            fields=[
                                Field(
                                    "LeaderId",
                                    "int32",
                                    "0+",
                                    about="The current leader's ID, or -1 if unknown.",
                                ),
                                Field(
                                    "LeaderEpoch",
                                    "int32",
                                    "0+",
                                    about="The latest known leader epoch.",
                                ),
                            ],
                        ),
                        Field("Size", "int64", "0+", about="The total size of the snapshot."),
                        Field(
                            "Position",
                            "int64",
                            "0+",
                            about="The byte position in the snapshot of UnalignedRecords.",
                        ),
                        Field(
                            "UnalignedRecords",
                            "records",
                            "0+",
                            about="Snapshot data as records, maybe cut mid-batch.",
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "NodeEndpoints",
            "[]NodeEndpoint",
            "1+",
            tagged_versions="1+",
            tag=0,
            about="Endpoints for all current-leaders enumerated in PartitionSnapshot.",
            fields=[
                Field("NodeId", "int32", "1+", about="The ID of the associated node."),
                Field("Host", "string", "1+", about="The node's hostname."),
                Field("Port", "uint16", "1+", about="The node's port."),
            ],
        ),
    ],
)
