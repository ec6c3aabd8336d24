"""ElectLeaders (API key 43, KIP-183, KIP-460): ask the controller to elect partition leaders.

An admin client (`kafka-leader-election.sh`, `AdminClient.electLeaders`) sends it to the
controller with an *election type* and the partitions (null: every partition):

* **PREFERRED** (0): make the *preferred replica*, the first of the assignment, the leader,
  if it is alive and in the ISR. Leaders drift away from it when brokers bounce (CTRL-6
  moves leadership to another ISR member and never back); this puts them back so that
  leaders stay spread over the brokers as the assignment spread them.
* **UNCLEAN** (1): for a partition with no leader, elect one even from outside the ISR, the
  same choice as `unclean.leader.election.enable` but for these partitions only, now.

Each partition gets its own error: ELECTION_NOT_NEEDED when the wanted leader already
leads (or, for UNCLEAN, the partition has a leader), PREFERRED_LEADER_NOT_AVAILABLE when
the preferred replica cannot lead, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica can,
UNKNOWN_TOPIC_OR_PARTITION. A broker that is not the controller answers NOT_CONTROLLER.

Version history (Kafka's JSON comments): v0 is KIP-183's preferred election only
(`ElectPreferredLeaders`); v1 adds the election type and a top-level error (KIP-460); v2
flexible. Kafka 3.x renamed the request's `PartitionId` to `Partitions` (same bytes).
kafka-ref declares 0-2.

Kafka's definitions: ElectLeadersRequest.json, ElectLeadersResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

ElectLeadersRequest = Message(
    "ElectLeadersRequest",
    api_key=43,
    listeners=("broker", "controller"),
    valid_versions="0-2",
    flexible_versions="2+",
    fields=[
        Field(
            "ElectionType",
            "int8",
            "1+",
            about="0: the preferred replica; 1: the first live replica if no ISR member lives.",
        ),
        Field(
            "TopicPartitions",
            "[]TopicPartitions",
            "0+",
            nullable_versions="0+",
            about="The topic partitions to elect leaders, or null for every partition.",
            fields=[
                Field("Topic", "string", "0+", about="The name of a topic."),
                Field("Partitions", "[]int32", "0+", about="The partitions of this topic."),
            ],
        ),
        Field("TimeoutMs", "int32", "0+", default=60000, about="The time in ms to wait."),
    ],
)

ElectLeadersResponse = Message(
    "ElectLeadersResponse",
    api_key=43,
    valid_versions="0-2",
    flexible_versions="2+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "1+", about="The top level response error code."),
        Field(
            "ReplicaElectionResults",
            "[]ReplicaElectionResult",
            "0+",
            about="The election results.",
            fields=[
                Field("Topic", "string", "0+", about="The topic name."),
                Field(
                    "PartitionResult",
                    "[]PartitionResult",
                    "0+",
                    about="The results for each partition.",
                    fields=[
                        Field("PartitionId", "int32", "0+", about="The partition id."),
                        Field("ErrorCode", "int16", "0+", about="The result error, or zero."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            about="The result message, or null if there was no error.",
                        ),
                    ],
                ),
            ],
        ),
    ],
)
