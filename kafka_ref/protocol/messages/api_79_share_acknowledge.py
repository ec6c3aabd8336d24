"""ShareAcknowledge (API key 79): a share group's member says what became of its records (KIP-932).

A member that holds acquired records (ShareFetch's `AcquiredRecords`) acknowledges them:
ACCEPT (1) processed, RELEASE (2) give it to someone again, REJECT (3) never deliver it
again, GAP (0) not a record, RENEW (4, v2) keep my lock (kafka_ref/share/share_partition.py).
It can ride on the next ShareFetch, or, when the member has nothing more to fetch (a
commitSync, closing), travel alone in ShareAcknowledge. It steps the same share session
epoch as ShareFetch but cannot open a session; epoch -1 acknowledges and closes it.

The broker answers once the share-partition's new state is written to the share
coordinator. Errors per partition: INVALID_RECORD_STATE (121) for records the member does
not hold, NOT_LEADER_OR_FOLLOWER (6) with the `CurrentLeader` and `NodeEndpoints`,
UNKNOWN_TOPIC_ID (100), UNKNOWN_TOPIC_OR_PARTITION (3), TOPIC_AUTHORIZATION_FAILED (29);
for the request: GROUP_AUTHORIZATION_FAILED (30), SHARE_SESSION_NOT_FOUND (122),
INVALID_SHARE_SESSION_EPOCH (123), INVALID_REQUEST (42).

Version history (Kafka's JSON comments): v0 was early access (Kafka 4.0), removed in 4.1;
v1 is the first stable version; v2 adds RENEW (KIP-1222) and the response's
`AcquisitionLockTimeoutMs`. kafka-ref declares 1-2, as Kafka 4.4.

Kafka's definitions: ShareAcknowledgeRequest.json, ShareAcknowledgeResponse.json.
"""

from kafka_ref.protocol.messages.api_78_share_fetch import (
    ACKNOWLEDGEMENT_BATCH,
    LEADER_ID_AND_EPOCH,
    NODE_ENDPOINT,
)
from kafka_ref.protocol.schema import Field, Message

ShareAcknowledgeRequest = Message(
    "ShareAcknowledgeRequest",
    api_key=79,
    valid_versions="1-2",
    flexible_versions="0+",
    fields=[
        Field(
            "GroupId",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The share group.",
        ),
        Field("MemberId", "string", "0+", nullable_versions="0+", about="The member id."),
        Field(
            "ShareSessionEpoch",
            "int32",
            "0+",
            about="The share session's next epoch, or -1 to close it.",
        ),
        Field(
            "IsRenewAck",
            "bool",
            "2+",
            default=False,
            about="Whether the acknowledgements hold RENEW (KIP-1222).",
        ),
        Field(
            "Topics",
            "[]AcknowledgeTopic",
            "0+",
            about="The topics whose records are acknowledged.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field(
                    "Partitions",
                    "[]AcknowledgePartition",
                    "0+",
                    about="The partitions.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field(
                            "AcknowledgementBatches",
                            "[]AcknowledgementBatch",
                            "0+",
                            about="The records acknowledged.",
                            fields=ACKNOWLEDGEMENT_BATCH,
                        ),
                    ],
                ),
            ],
        ),
    ],
)

ShareAcknowledgeResponse = Message(
    "ShareAcknowledgeResponse",
    api_key=79,
    valid_versions="1-2",
    flexible_versions="0+",
    fields=[
        Field("ThrottleTimeMs", "int32", "0+", about="The quota throttle time in ms, or zero."),
        Field("ErrorCode", "int16", "0+", about="The top-level error code, or 0."),
        Field(
            "ErrorMessage",
            "string",
            "0+",
            nullable_versions="0+",
            default=None,
            about="The top-level error message, or null.",
        ),
        Field(
            "AcquisitionLockTimeoutMs",
            "int32",
            "2+",
            about="How long the acquired records are locked, in ms (v2).",
        ),
        Field(
            "Responses",
            "[]ShareAcknowledgeTopicResponse",
            "0+",
            about="The topics.",
            fields=[
                Field("TopicId", "uuid", "0+", about="The topic id."),
                Field(
                    "Partitions",
                    "[]PartitionData",
                    "0+",
                    about="The partitions.",
                    fields=[
                        Field("PartitionIndex", "int32", "0+", about="The partition index."),
                        Field("ErrorCode", "int16", "0+", about="The error code, or 0."),
                        Field(
                            "ErrorMessage",
                            "string",
                            "0+",
                            nullable_versions="0+",
                            default=None,
                            about="The error message, or null.",
                        ),
                        Field(
                            "CurrentLeader",
                            "LeaderIdAndEpoch",
                            "0+",
                            about="The partition's current leader.",
                            fields=LEADER_ID_AND_EPOCH,
                        ),
                    ],
                ),
            ],
        ),
        Field(
            "NodeEndpoints",
            "[]NodeEndpoint",
            "0+",
            about="The endpoints of the leaders named in NOT_LEADER_OR_FOLLOWER answers.",
            fields=NODE_ENDPOINT,
        ),
    ],
)
