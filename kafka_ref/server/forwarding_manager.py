"""Admin requests a KRaft broker forwards to the active controller (KIP-590; Kafka:
`ForwardingManager`).

Clients cannot reach a KRaft cluster's controllers: Metadata names a broker as the
controller (KBROKER-3), and the admin client sends it what only the controller decides. A
KRaft broker decides none of it (KBROKER-8): `KafkaApis.handle` hands such a request here,
and it goes to the active controller (server/node_to_controller.py) inside an **Envelope**
(API key 58), with what the controller needs to answer it as if the client had asked
directly (KBROKER-11):

* `request_data`: the request's header and body exactly as the client sent them (the frame
  `Request.frame` keeps), so the controller decodes the version the client chose;
* `request_principal`: the client's principal, serialized as Kafka's
  `DefaultKafkaPrincipalBuilder.serialize` does (security/principal.py);
* `client_host_address`: the client's IP address, 4 or 16 bytes.

The controller answers the inner request and puts its response, header included, in the
Envelope's `response_data`. The header carries the client's own correlation id (it is the
client's header the controller answered), so the broker hands the bytes back unchanged. When
no controller answers in time, the client gets the request's own error response with
REQUEST_TIMED_OUT; when the Envelope itself fails, UNKNOWN_SERVER_ERROR, or for
UNSUPPORTED_VERSION a closed connection, so that the client asks again which versions the
broker speaks (Kafka: `ForwardingManagerImpl.forwardRequest`).

Forwarded, as Kafka 4.4's `KafkaApis` forwards them: CreateTopics, DeleteTopics,
CreatePartitions; IncrementalAlterConfigs and AlterConfigs; CreateAcls and DeleteAcls;
AlterUserScramCredentials; AlterClientQuotas; AlterPartitionReassignments,
ListPartitionReassignments and ElectLeaders (KBROKER-18). What only reads the image is
answered by the broker itself: DescribeConfigs, DescribeAcls, DescribeClientQuotas,
DescribeUserScramCredentials, Metadata, DescribeCluster. The two config requests are first
looked at by the broker (handlers/alter_configs.py `forward`, Kafka's
`ConfigAdminManager.preprocess`): a broker resource must name this broker or the cluster
default and pass the dynamic config checks; the resources it refuses are answered here,
and the others forwarded in a request of their own (`body`), whose answer the broker merges
with its own (`settle`). Not forwarded yet: UpdateFeatures, the delegation tokens.

Kafka's broker does not authorize what it forwards: the controller does, with the
principal of the Envelope (KCTRL-20).

Rules: KBROKER-11, KBROKER-18.
"""

from __future__ import annotations

import ipaddress
import logging
import struct
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.frames import decode_response, encode_request, peek_correlation_id
from kafka_ref.protocol.messages import (
    APIS,
    AlterClientQuotasResponse,
    AlterUserScramCredentialsResponse,
    ApiKey,
    CreateAclsResponse,
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteAclsResponse,
    DeleteTopicsResponse,
    EnvelopeRequest,
)
from kafka_ref.security.principal import serialize_principal
from kafka_ref.server.node_to_controller import ControllerUnavailableError
from kafka_ref.server.reassignment_responses import (
    alter_response,
    elect_response,
    elected_partitions,
    every_partition,
    list_response,
    reassigned_partitions,
)
from kafka_ref.server.request_channel import Request
from kafka_ref.server.response import Response

logger = logging.getLogger("kafka_ref.server.forwarding_manager")

ENVELOPE_VERSION = 0
FORWARDED = frozenset(
    {
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.CREATE_ACLS,
        ApiKey.DELETE_ACLS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.ELECT_LEADERS,
    }
)
_SIZE = struct.Struct(">i")

Respond = Callable[[Request, Any], None]  # KafkaApis.send: a body, or a ready Response


def envelope(request: Request, body: Any = None) -> Any:
    """The Envelope that carries `request` to the controller: as the client sent it, or
    with `body` instead of the client's."""
    assert request.frame is not None, f"{request!r} kept no frame to forward"
    data = bytes(request.frame)
    if body is not None:
        key, version = request.api_key, request.api_version
        data = encode_request(key, version, request.correlation_id, request.client_id, body)
        data = data[_SIZE.size :]
    return EnvelopeRequest(
        request_data=data,
        request_principal=serialize_principal(request.principal),
        client_host_address=ipaddress.ip_address(request.host).packed,
    )


def error_response(api_key: int, api_version: int, body: Any, error: ErrorCode) -> Any:
    """A forwarded request's own answer with `error` everywhere (Kafka:
    `AbstractRequest.getErrorResponse`)."""
    if api_key == ApiKey.CREATE_TOPICS:
        result = CreateTopicsResponse.CreatableTopicResult
        return CreateTopicsResponse(
            topics=[result(name=t.name, error_code=error) for t in body.topics]
        )
    if api_key == ApiKey.DELETE_TOPICS:
        result = DeleteTopicsResponse.DeletableTopicResult
        if api_version >= 6:
            topics = [
                result(name=t.name, topic_id=t.topic_id, error_code=error) for t in body.topics
            ]
        else:
            topics = [result(name=name, error_code=error) for name in body.topic_names]
        return DeleteTopicsResponse(responses=topics)
    if api_key == ApiKey.CREATE_PARTITIONS:
        result = CreatePartitionsResponse.CreatePartitionsTopicResult
        return CreatePartitionsResponse(
            results=[result(name=t.name, error_code=error) for t in body.topics]
        )
    if api_key in (ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS):
        response = APIS[api_key].response
        resource = response.AlterConfigsResourceResponse
        return response(
            responses=[
                resource(
                    error_code=error,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r in body.resources
            ]
        )
    if api_key == ApiKey.CREATE_ACLS:
        result = CreateAclsResponse.AclCreationResult
        return CreateAclsResponse(results=[result(error_code=error) for _ in body.creations])
    if api_key == ApiKey.DELETE_ACLS:
        result = DeleteAclsResponse.DeleteAclsFilterResult
        return DeleteAclsResponse(filter_results=[result(error_code=error) for _ in body.filters])
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
        users = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
        return AlterUserScramCredentialsResponse(
            results=[result(user=user, error_code=error) for user in users]
        )
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        entry, entity = AlterClientQuotasResponse.EntryData, AlterClientQuotasResponse.EntityData
        return AlterClientQuotasResponse(
            entries=[
                entry(
                    error_code=error,
                    entity=[
                        entity(entity_type=c.entity_type, entity_name=c.entity_name)
                        for c in e.entity
                    ],
                )
                for e in body.entries
            ]
        )
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        each = every_partition(reassigned_partitions(body), error)
        return alter_response(error, each, body.allow_replication_factor_change)
    if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        return list_response(error, {})
    if api_key == ApiKey.ELECT_LEADERS:
        return elect_response(error, every_partition(elected_partitions(body), error))
    raise AssertionError(f"{api_key} is not forwarded")


class ForwardingManager:
    """Sends the requests the controller decides to it, and their answers back."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel  # a NodeToControllerChannel: `send(key, version, body, done)`

    def forward(
        self,
        request: Request,
        respond: Respond,
        body: Any = None,
        settle: Callable[[Any], Any] | None = None,
    ) -> None:
        """Forward `request` (with `body` instead of the client's, if given); `respond`
        answers the client once the controller has, with `settle` of the controller's
        answer if given (the broker's own answers merged in), else its bytes unchanged."""
        self.channel.send(
            ApiKey.ENVELOPE,
            ENVELOPE_VERSION,
            envelope(request, body),
            lambda answer: self._answer(request, answer, respond, body, settle),
        )

    def _answer(
        self,
        request: Request,
        answer: Any,
        respond: Respond,
        body: Any,
        settle: Callable[[Any], Any] | None,
    ) -> None:
        name = APIS[request.api_key].name
        if isinstance(answer, ControllerUnavailableError):
            logger.warning("%s from %s not forwarded: %s", name, request.client_id, answer)
            self._fail(request, respond, body, settle, ErrorCode.REQUEST_TIMED_OUT)
            return
        error = ErrorCode(answer.error_code)
        if error == ErrorCode.UNSUPPORTED_VERSION:
            request.close_connection(f"the controller does not support this {name} version")
            return
        if error != ErrorCode.NO_ERROR or answer.response_data is None:
            logger.warning("forwarding %s failed: %s", name, error.name)
            self._fail(request, respond, body, settle, ErrorCode.UNKNOWN_SERVER_ERROR)
            return
        data = bytes(answer.response_data)  # before the channel's buffer is reused
        assert peek_correlation_id(data) == request.correlation_id, "not the client's answer"
        if settle is not None:
            _, inner = decode_response(data, request.api_key, request.api_version)
            respond(request, settle(inner))
            return
        respond(request, Response.of_bytes(_SIZE.pack(len(data)) + data))

    def _fail(
        self,
        request: Request,
        respond: Respond,
        body: Any,
        settle: Callable[[Any], Any] | None,
        error: ErrorCode,
    ) -> None:
        forwarded = request.body if body is None else body
        answer = error_response(request.api_key, request.api_version, forwarded, error)
        respond(request, answer if settle is None else settle(answer))
