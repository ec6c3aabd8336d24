"""AssignReplicasToDirs (API key 73, KIP-858): a broker tells the controller where it put
its replicas.

In KRaft a partition's registration names, for each replica, the log directory of its
broker that holds it (`Directories`, kafka_ref/metadata/directory_id.py). When the
controller creates a partition on a broker with several directories it leaves the choice to
the broker (`UNASSIGNED`); the broker creates the log in one of its directories and sends
this request, by directory, topic id and partition, with its broker epoch. The controller
writes a PartitionChangeRecord with the new `Directories` for each (KCTRL-22). Without it,
the controller could not know which replicas a failed directory takes with it.

Version history: v0 only, flexible.

Served on the controller listener only; a broker does not advertise it (PROTO-21).

Kafka's definitions: AssignReplicasToDirsRequest.json, AssignReplicasToDirsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AssignReplicasToDirsRequest = Message(
    "AssignReplicasToDirsRequest",
    api_key=73,
    valid_versions="0",
    flexible_versions="0+",
    listeners=("controller",),
    fields=[
        Field("BrokerId", "int32", "0+", about="The ID of the requesting broker."),
        Field(
            "BrokerEpoch", "int64", "0+", default=-1, about="The epoch of the requesting broker."
        ),
        Field(
            "Directories",
            "[]DirectoryData",
            "0+",
            about="The directories to which replicas should be assigned.",
            fields=[
                Field("Id", "uuid", "0+", about="The ID of the directory."),
                Field(
                    "Topics",
                    "[]TopicData",
                    "0+",
                    about="The topics assigned to the directory.",
                    fields=[
                        Field("TopicId", "uuid", "0+", about="The ID of the assigned topic."),
                        Field(
                            "Partitions",
                            "[]PartitionData",
                            "0+",
                            about="The partitions assigned to the directory.",
                            fields=[
                                Field("PartitionIndex", "int32", "0+", about="The partition index.")
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ],
)

AssignReplicasToDirsResponse = Message(
    "AssignReplicasToDirsResponse",
    api_key=73,
    valid_versions="0",
    flexible_versions="0+",
    fields=[
        Field(
            "ThrottleTimeMs",
            "int32",
            "0+",
            about="The duration in milliseconds for which the request was throttled due to a "
            "quota violation, or zero if the request did not violate any quota.",
        ),
        Field("ErrorCode", "int16", "0+", about="The top level response error code."),
        Field(
            "Directories",
            "[]DirectoryData",
            "0+",
            about="The list of directories and their assigned partitions.",
            fields=[
                Field("Id", "uuid", "0+", about="The ID of the directory."),
                Field(
                    "Topics",
                    "[]TopicData",
                    "0+",
                    about="The list of topics and their assigned partitions.",
                    fields=[
                        Field("TopicId", "uuid", "0+", about="The ID of the assigned topic."),
                        Field(
                            "Partitions",
                            "[]PartitionData",
                            "0+",
                            about="The list of assigned partitions.",
                            fields=[
                                Field(
                                    "PartitionIndex", "int32", "0+", about="The partition index."
                                ),
                                Field(
                                    "ErrorCode",
                                    "int16",
                                    "0+",
                                    about="The partition level error code.",
                                ),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ],
)
