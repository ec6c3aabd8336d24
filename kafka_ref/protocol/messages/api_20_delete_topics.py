"""DeleteTopics (API key 20): the admin API that deletes whole topics (KIP-4).

Deleting a topic removes all of its partitions, on every broker, with all their data. Like
CreateTopics it is sent to the controller, which marks the topics for deletion, tells every
replica to stop and delete its log directories, and removes the topic from the cluster
metadata. `timeout_ms` bounds how long the broker waits for that to finish; a timeout does
not undo the deletion, it only means the answer came before the end.

Errors per topic: UNKNOWN_TOPIC_OR_PARTITION (3) for a topic that does not exist,
TOPIC_DELETION_DISABLED (73, v3+) when the broker runs with `delete.topic.enable=false`,
NOT_CONTROLLER (41) when sent to the wrong broker, REQUEST_TIMED_OUT (7).

The request body is the same from v0 to v3: an array of topic names and the timeout. v4 is
flexible; v5 adds error messages and THROTTLING_QUOTA_EXCEEDED (KIP-599); v6 reorganises the
request as `topics` entries that carry a name *or* a topic id (KIP-516), which is why
`topic_names` stops at v5 and the names in v6 responses may be null.

Version history (Kafka's JSON comments): v1 throttle time; v2 throttle before response; v3
TOPIC_DELETION_DISABLED; v4 flexible; v5 error messages; v6 topic ids. v0 was removed in
Kafka 4.0. kafka-ref declares 1-6, as Kafka 4.4 (BROKER-74); it has no controller mutation
quota, so never THROTTLING_QUOTA_EXCEEDED.

Kafka's definitions: DeleteTopicsRequest.json, DeleteTopicsResponse.json.
"""

from kafka_ref.protocol.schema import Field, Message

DeleteTopicsRequest = Message(
    "DeleteTopicsRequest",
    api_key=20,
    valid_versions="1-6",
    flexible_versions="4+",
    listeners=("broker", "controller"),
    fields=[
        Field(
            "Topics",
            "[]DeleteTopicState",
            "6+",
            about="The name or topic ID of the topic.",
            fields=[
                Field(
                    "Name",
                    "string",
                    "6+",
                    nullable_versions="6+",
                    default=None,
                    about="The topic name.",
                ),
                Field("TopicId", "uuid", "6+", about="The unique topic ID."),
            ],
        ),
        Field("TopicNames", "[]string", "0-5", about="The names of the topics to delete."),
        Field(
            "TimeoutMs",
            "int32",
            "0+",
            about="The length of time in milliseconds to wait for the deletions to complete.",
        ),
    ],
)

DeleteTopicsResponse = Message(
    "DeleteTopicsResponse",
    api_key=20,
    valid_versions="1-6",
    flexible_versions="4+",
    fields=[
        Field("ThrottleTimeMs", "int32", "1+", about="The quota throttle time in ms, or zero."),
        Field(
            "Responses",
            "[]DeletableTopicResult",
            "0+",
            about="The results for each topic we tried to delete.",
            fields=[
                Field(
                    "Name",
                    "string",
                    "0+",
                    nullable_versions="6+",
                    about="The topic name.",
                ),
                Field("TopicId", "uuid", "6+", about="The unique topic ID."),
                Field("ErrorCode", "int16", "0+", about="The deletion error, or 0."),
                Field(
                    "ErrorMessage",
                    "string",
                    "5+",
                    nullable_versions="5+",
                    default=None,
                    about="The error message, or null if there was no error.",
                ),
            ],
        ),
    ],
)
