"""AlterPartition (API key 56, KIP-497): a partition leader asks the controller to change
the partition's ISR. Brokers send it; clients never do.

The leader decides that a follower joins the ISR (it caught up, ISR-2) or leaves it (it
lagged, ISR-3), but it does not write the decision itself: it sends the new ISR with its
leader epoch and the partition epoch (the state znode's version) it knows. The controller
checks the sender's broker epoch (STALE_BROKER_EPOCH), the leader epoch
(FENCED_LEADER_EPOCH), the partition epoch (INVALID_UPDATE_VERSION: the controller changed
the state since) and that every new ISR member is a live replica (OPERATION_NOT_ATTEMPTED
at this version; INELIGIBLE_REPLICA from v2, KIP-841). It writes the new state to
ZooKeeper and answers with it, leader epoch unchanged and a new partition epoch; the other
brokers learn it from UpdateMetadata (CTRL-22). Before KIP-497 the leader wrote the state
znode itself, and the controller learned of it through `/isr_change_notification`.

Version history (Kafka's JSON comments): v0 is AlterIsr (Kafka 2.7, IBP 2.7+); v1 adds
LeaderRecoveryState (KIP-704) and the new name; v2 topic ids instead of names (KIP-841);
v3 the new ISR with broker epochs (KIP-903). Kafka 4.0 removed v0-1. kafka-ref declares
v0-3: a ZooKeeper-mode broker sends v0, the version a ZooKeeper-mode Kafka with IBP 2.7
sends (topics by name, no leader recovery state); a KRaft broker sends v3 to the active
controller on the controller listener, as Kafka 4 does (topic ids, each ISR member with its
broker epoch, so that a member that restarted since is refused: KIP-903).

Kafka's definitions: AlterPartitionRequest.json, AlterPartitionResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

AlterPartitionRequest = Message(
    "AlterPartitionRequest",
    api_key=56,
    valid_versions="0-3",
    flexible_versions="0+",
    listeners=("broker", "controller"),
    fields=[
        Field("BrokerId", "int32", "0+", about="The ID of the requesting broker."),
        Field("BrokerEpoch", "int64", "0+", default=-1, about="The requesting broker's epoch."),
        Field(
            "Topics",
            "[]TopicData",
            "0+",
            about="The topics to alter ISRs for.",
            fields=[
                Field("TopicName", "string", "0-1", about="The name of the topic."),
                Field(
                    "TopicId",
                    "uuid",
                    "2+",
                    about="The ID of the topic to alter ISRs for.",
                ),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The partitions to alter ISRs for.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                        Field(
                            "NewIsr",
                            "[]int32",
                            "0-2",
                            about="The ISR for this partition. Deprecated since version 3.",
                        ),
                        Field(
                            "NewIsrWithEpochs",
                            "[]BrokerState",
                            "3+",
                            about="The ISR for this partition.",
                            fields=[
                                Field("BrokerId", "int32", "3+", about="The ID of the broker."),
                                Field(
                                    "BrokerEpoch",
                                    "int64",
                                    "3+",
                                    default=-1,
                                    about="The epoch of the broker. It will be -1 if the epoch "
                                    "check is not supported.",
                                ),
                            ],
                        ),
                        Field(
                            "LeaderRecoveryState",
                            "int8",
                            "1+",
                            default=0,
                            about="1 if the partition is recovering from an unclean leader "
                            "election; 0 otherwise.",
                        ),
                        Field(
                            "PartitionEpoch",
                            "int32",
                            "0+",
                            about="The expected epoch of the partition which is being updated.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)

AlterPartitionResponse = Message(
    "AlterPartitionResponse",
    api_key=56,
    valid_versions="0-3",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The throttle time in milliseconds."),
        Field("ErrorCode", "int16", "0+", about="The top level response error code."),
        Field(
            "Topics",
            "[]TopicData",
            "0+",
            about="The responses for each topic.",
            fields=[
                Field("TopicName", "string", "0-1", about="The name of the topic."),
                Field("TopicId", "uuid", "2+", about="The ID of the topic."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The responses for each partition.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The partition level error code."),
                        Field("LeaderId", "int32", "0+", about="The broker ID of the leader."),
                        Field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
                        Field("Isr", "[]int32", "0+", about="The in-sync replica IDs."),
                        Field(
                            "LeaderRecoveryState",
                            "int8",
                            "1+",
                            default=0,
                            about="1 if the partition is recovering from an unclean leader "
                            "election; 0 otherwise.",
                        ),
                        Field("PartitionEpoch", "int32", "0+", about="The partition epoch."),
                    ],
                ),
            ],
        ),
    ],
)
