"""LeaderAndIsr (API key 4): the controller tells a broker which replicas it leads and
which it follows (ZooKeeper mode). Brokers send it; clients never do.

After every decision it wrote to ZooKeeper (a new leader, an ISR it shrank, a new
partition), the controller sends each live replica of the partition one LeaderAndIsr with
the partition's state: leader, leader epoch, ISR, the state znode's version (`ZkVersion`,
the partition epoch a leader's AlterPartition must name) and the assigned replicas. The
broker becomes leader (the epoch starts at its log end) or follower (it starts fetching
from the leader, truncating first) of each partition whose leader epoch is newer than the
one it applied.

Every request carries the sender's `ControllerEpoch` and the receiver's `BrokerEpoch` (the
czxid of its `/brokers/ids/<id>` registration, KIP-380). A broker refuses a request from
an older controller (STALE_CONTROLLER_EPOCH) and one addressed to an earlier registration
of itself (STALE_BROKER_EPOCH): a deposed controller that wakes up from a pause, or a
request delayed past a restart of its receiver, changes nothing (CTRL-19, CTRL-20). A
partition whose leader epoch is older than the applied one gets STALE_CONTROLLER_EPOCH in
its own error (CTRL-5).

Version history (Kafka's JSON comments): v1 adds IsNew; v2 adds the broker epoch and
groups the partitions by topic; v3 adds AddingReplicas and RemovingReplicas; v4 is the
first flexible version; v5 adds topic ids and the request type (KIP-516); v6 the leader
recovery state (KIP-704); v7 the KRaft controller flag (KIP-866, migration). Kafka 4.0
removed the API with ZooKeeper. kafka-ref declares and sends v4: the newest version that
needs nothing kafka-ref lacks (topic ids in LeaderAndIsr, leader recovery), with the broker
epoch and the flexible encoding of every request a 2.4+ controller sends.

Kafka's definitions: LeaderAndIsrRequest.json, LeaderAndIsrResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

LeaderAndIsrRequest = Message(
    "LeaderAndIsrRequest",
    api_key=4,
    valid_versions="4",
    flexible_versions="4+",
    fields=[
        Field("ControllerId", "int32", "0+", about="The current controller ID."),
        Field("ControllerEpoch", "int32", "0+", about="The current controller epoch."),
        Field("BrokerEpoch", "int64", "2+", default=-1, about="The current broker epoch."),
        Field(
            "TopicStates",
            "[]LeaderAndIsrTopicState",
            "2+",
            about="Each topic.",
            fields=[
                Field("TopicName", "string", "2+", about="The topic name."),
                Field(
                    "PartitionStates",
                    "[]LeaderAndIsrPartitionState",
                    "2+",
                    about="The state of each partition.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
                        Field("Leader", "int32", "0+", about="The broker ID of the leader."),
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                        Field("Isr", "[]int32", "0+", about="The in-sync replica IDs."),
                        Field("ZkVersion", "int32", "0+", about="The ZooKeeper version."),
                        Field("Replicas", "[]int32", "0+", about="The replica IDs."),
                        Field("AddingReplicas", "[]int32", "3+", about="Replicas being added."),
                        Field("RemovingReplicas", "[]int32", "3+", about="Replicas being removed."),
                        Field(
                            "IsNew",
                            "bool",
                            "1+",
                            default=False,
                            about="Whether the replica should have existed on the broker.",
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "LiveLeaders",
            "[]LeaderAndIsrLiveLeader",
            "0+",
            about="The current live leaders.",
            fields=[
                Field("BrokerId", "int32", "0+", about="The leader's broker ID."),
                Field("HostName", "string", "0+", about="The leader's hostname."),
                Field("Port", "int32", "0+", about="The leader's port."),
            ],
        ),
    ],
)

LeaderAndIsrResponse = Message(
    "LeaderAndIsrResponse",
    api_key=4,
    valid_versions="4",
    flexible_versions="4+",
    fields=[
        Field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
        Field(
            "PartitionErrors",
            "[]LeaderAndIsrPartitionError",
            "0-4",
            about="Each partition.",
            fields=[
                Field("TopicName", "string", "0-4", about="The topic name."),
                Field("PartitionIndex", "int32", "0+", about="The partition index."),
                Field("ErrorCode", "int16", "0+", about="The partition error code."),
            ],
        ),
    ],
)
