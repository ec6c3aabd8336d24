"""Topics a KRaft broker creates on its own account: the active controller creates them
(Kafka: `AutoTopicCreationManager`, `DefaultAutoTopicCreationManager.sendCreateTopicRequest`).

Two requests make a broker create a topic nobody asked an admin to create: a Metadata
request naming a topic that does not exist, when `auto.create.topics.enable` is on
(BROKER-11), and a FindCoordinator whose coordinator needs `__consumer_offsets` or
`__transaction_state` (BROKER-45, TXN-9). A KRaft broker decides no topic (KBROKER-8): it
sends a CreateTopics to the active controller (server/node_to_controller.py) with its own
settings, the partition count and replication factor of `num.partitions` and
`default.replication.factor` (or the internal topic's), and answers the client at once,
without waiting: UNKNOWN_TOPIC_OR_PARTITION for a Metadata request, as Kafka 4 does, and
COORDINATOR_NOT_AVAILABLE for FindCoordinator while the topic has no leader. The client
asks again; once the controller has created the topic, the broker's image has it
(KBROKER-12).

A topic already on its way to the controller is not sent again while its request is in
flight (Kafka's `inflightTopics`): a client that asks every 100 ms sends one CreateTopics,
not one per Metadata request. The answer only ends the flight; an error (the topic exists
already, the controller refused it) is logged, and the next request that names the topic
tries again.

Kafka wraps this CreateTopics in an Envelope carrying the client's principal, for the
controller's audit log; kafka-ref's broker has authorized the creation already (CREATE on
the cluster or the topic) and sends it in its own name.

Rules: KBROKER-12.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, CreateTopicsRequest
from kafka_ref.server.node_to_controller import ControllerUnavailableError

logger = logging.getLogger("kafka_ref.server.auto_topic_creation")

CREATE_TOPICS_VERSION = 7


class AutoTopicCreationManager:
    """Sends the topics this broker creates to the active controller, each once at a time."""

    def __init__(self, channel: Any, request_timeout_ms: int = 30_000) -> None:
        self.channel = channel  # a NodeToControllerChannel: `send(key, version, body, done)`
        self.request_timeout_ms = request_timeout_ms
        self.in_flight: set[str] = set()

    def create_topic(
        self, name: str, num_partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> None:
        """Ask the controller to create `name`, unless a request for it is on its way."""
        if name in self.in_flight:
            return
        self.in_flight.add(name)
        body = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=name,
                    num_partitions=num_partitions,
                    replication_factor=replication_factor,
                    assignments=[],
                    configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                        for k, v in sorted(configs.items())
                    ],
                )
            ],
            timeout_ms=self.request_timeout_ms,
        )
        logger.info("asking the active controller to create topic %s", name)
        self.channel.send(
            ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, body, lambda r: self._done(name, r)
        )

    def _done(self, name: str, response: Any) -> None:
        self.in_flight.discard(name)
        if isinstance(response, ControllerUnavailableError):
            logger.warning("topic %s not created: %s", name, response)
            return
        for result in response.topics:
            error = ErrorCode(result.error_code)
            if error not in (ErrorCode.NO_ERROR, ErrorCode.TOPIC_ALREADY_EXISTS):
                logger.warning("topic %s not created: %s", result.name, error.name)
