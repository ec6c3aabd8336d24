"""The administration a KRaft broker forwards, as the active controller answers it (Kafka:
`ControllerApis.handleIncrementalAlterConfigs`, `handleLegacyAlterConfigs`,
`handleCreateAcls`, `handleDeleteAcls`, `handleAlterUserScramCredentials`,
`handleAlterClientQuotas`, `handleAlterPartitionReassignments`,
`handleListPartitionReassignments`, `handleElectLeaders`).

Each handler checks that the client may do it, turns the request into a decision of the
quorum controller (metadata/controller/: config_control.py, acl_control.py,
scram_control.py, quota_control.py, replication_control.py) and answers once its records
are committed (`when_committed`, quorum_controller_apis.py): ConfigRecords,
AccessControlEntryRecords and their removals, UserScramCredentialRecords and their
removals, ClientQuotaRecords, PartitionChangeRecords. ListPartitionReassignments writes
nothing: it reads the active controller's image. A controller that is not active answers
NOT_CONTROLLER, and the broker's request follows the quorum's leader (KBROKER-10).

**Who may.** The client's principal and address come in the Envelope (KCTRL-18); when an
authorizer is configured the controller checks them against the ACLs of its committed
image, as Kafka's controller does with its own `StandardAuthorizer` (KCTRL-20): ALTER on
the cluster for ACLs, SCRAM credentials, reassignments and elections, ALTER_CONFIGS on the
cluster for client quotas and broker configs, on the topic for a topic's configs, on the
group for a group's configs,
DESCRIBE on the cluster to list reassignments. A refusal is the API's own error code.
Without an authorizer every client may, but there are no ACLs to create or delete:
SECURITY_DISABLED, as Kafka's `AclApis` answers.

Rules: KCTRL-19, KCTRL-20.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode
from kafka_ref.group.group_configs import GROUP_RESOURCE
from kafka_ref.metadata.controller import config_control as cc
from kafka_ref.metadata.controller import quota_control, scram_control
from kafka_ref.metadata.controller.result import ApiError
from kafka_ref.protocol.messages import (
    AlterClientQuotasResponse,
    AlterConfigsResponse,
    AlterUserScramCredentialsResponse,
    ApiKey,
    CreateAclsResponse,
    DeleteAclsResponse,
    IncrementalAlterConfigsResponse,
)
from kafka_ref.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    ResourceType,
)
from kafka_ref.security.authorizer import Authorizer
from kafka_ref.server.active_controller import ActiveController
from kafka_ref.server.handlers.acls import (
    binding_filter,
    creation_binding,
    delete_acls_response,
)
from kafka_ref.server.quorum_controller_apis import when_committed
from kafka_ref.server.reassignment_responses import (
    KAFKA_MESSAGES,
    alter_response,
    elect_response,
    elected_partitions,
    every_partition,
    list_response,
    reassigned_partitions,
)
from kafka_ref.server.request_channel import Request

Op, Res = AclOperation, ResourceType
REFUSED = ApiError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
NO_AUTHORIZER = ApiError(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")


def _merged(count: int, settled: dict[int, ApiError], decided: list[ApiError]) -> list[ApiError]:
    """The answers to `count` items in order: those settled before deciding (refused,
    invalid) by index, the controller's for the others in turn."""
    rest = iter(decided)
    merged = [settled[i] if i in settled else next(rest) for i in range(count)]
    assert next(rest, None) is None, "the controller answered more items than it was given"
    return merged


class ControllerAdminApis:
    """The forwarded administration's handlers, over one active controller."""

    def __init__(self, active: ActiveController, authorizer: Authorizer | None = None) -> None:
        self.active = active
        self.authorizer = authorizer  # over the committed image's ACLs (KCTRL-20)

    def handlers(self) -> dict[int, Callable[[Request], Any]]:
        return {
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs,
            ApiKey.ALTER_CONFIGS: self.alter_configs,
            ApiKey.CREATE_ACLS: self.create_acls,
            ApiKey.DELETE_ACLS: self.delete_acls,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.alter_user_scram_credentials,
            ApiKey.ALTER_CLIENT_QUOTAS: self.alter_client_quotas,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self.alter_partition_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.list_partition_reassignments,
            ApiKey.ELECT_LEADERS: self.elect_leaders,
        }

    def authorized(
        self, request: Request, operation: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        if self.authorizer is None:
            return True
        self.authorizer.reload()  # the ACLs committed so far
        return self.authorizer.authorize(request.principal, request.host, operation, rtype, name)

    def _may_alter_config(self, request: Request, resource_type: int, name: str) -> ApiError:
        if resource_type == cc.TOPIC:
            if self.authorized(request, Op.ALTER_CONFIGS, Res.TOPIC, name):
                return ApiError()
            return ApiError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
        if resource_type == GROUP_RESOURCE:
            if self.authorized(request, Op.ALTER_CONFIGS, Res.GROUP, name):
                return ApiError()
            return ApiError(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
        return (
            ApiError()
            if self.authorized(request, Op.ALTER_CONFIGS, Res.CLUSTER, CLUSTER_NAME)
            else REFUSED
        )

    # ------------------------------------------------------------------ configs
    def _configs(self, request: Request, response: Any, decide: Callable) -> asyncio.Future:
        """Both config requests: refuse what the client may not alter, decide the rest."""
        resources = request.body.resources
        refused = {
            i: error
            for i, r in enumerate(resources)
            if not (error := self._may_alter_config(request, r.resource_type, r.resource_name)).ok
        }
        allowed = [r for i, r in enumerate(resources) if i not in refused]

        def answer(decided: list[ApiError]) -> Any:
            errors = _merged(len(resources), refused, decided)
            return response(
                throttle_time_ms=0,
                responses=[
                    response.AlterConfigsResourceResponse(
                        error_code=error.code,
                        error_message=error.message,
                        resource_type=r.resource_type,
                        resource_name=r.resource_name,
                    )
                    for r, error in zip(resources, errors, strict=True)
                ],
            )

        return when_committed(
            self.active,
            lambda controller, _now: decide(controller, allowed),
            lambda results: answer([error for _, error in results]),
            lambda code, message: answer([ApiError(code, message)] * len(allowed)),
        )

    def incremental_alter_configs(self, request: Request) -> asyncio.Future:
        validate_only = request.body.validate_only

        def decide(controller: Any, resources: list[Any]) -> Any:
            return controller.incremental_alter_configs(
                [
                    cc.AlterConfigsResource(
                        r.resource_type,
                        r.resource_name,
                        [
                            cc.AlterableConfig(c.name, c.config_operation, c.value)
                            for c in r.configs
                        ],
                    )
                    for r in resources
                ],
                validate_only=validate_only,
            )

        return self._configs(request, IncrementalAlterConfigsResponse, decide)

    def alter_configs(self, request: Request) -> asyncio.Future:
        validate_only = request.body.validate_only

        def decide(controller: Any, resources: list[Any]) -> Any:
            return controller.legacy_alter_configs(
                [
                    (r.resource_type, r.resource_name, {c.name: c.value for c in r.configs})
                    for r in resources
                ],
                validate_only=validate_only,
            )

        return self._configs(request, AlterConfigsResponse, decide)

    # ------------------------------------------------------------------ ACLs
    def _acls_refusal(self, request: Request) -> ApiError | None:
        if self.authorizer is None:
            return NO_AUTHORIZER
        if not self.authorized(request, Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
            return REFUSED
        return None

    def create_acls(self, request: Request) -> Any:
        result = CreateAclsResponse.AclCreationResult
        creations = request.body.creations
        refused = self._acls_refusal(request)
        if refused is not None:
            return CreateAclsResponse(
                results=[result(error_code=refused.code, error_message=refused.message)]
                * len(creations)
            )
        valid: list[AclBinding] = []
        invalid: dict[int, ApiError] = {}
        for i, c in enumerate(creations):
            try:
                valid.append(creation_binding(c))
            except ValueError as err:  # a code no operation, type... has
                invalid[i] = ApiError(ErrorCode.INVALID_REQUEST, str(err))

        def answer(decided: list[ApiError]) -> Any:
            return CreateAclsResponse(
                throttle_time_ms=0,
                results=[
                    result(error_code=e.code, error_message=e.message)
                    for e in _merged(len(creations), invalid, decided)
                ],
            )

        return when_committed(
            self.active,
            lambda controller, _now: controller.create_acls(valid),
            answer,
            lambda code, message: answer([ApiError(code, message)] * len(valid)),
        )

    def delete_acls(self, request: Request) -> Any:
        result = DeleteAclsResponse.DeleteAclsFilterResult
        filters = request.body.filters
        refused = self._acls_refusal(request)
        if refused is not None:
            answer = result(error_code=refused.code, error_message=refused.message)
            return DeleteAclsResponse(filter_results=[answer] * len(filters))
        try:
            selectors = [binding_filter(f) for f in filters]
        except ValueError as err:
            invalid = result(error_code=ErrorCode.INVALID_REQUEST, error_message=str(err))
            return DeleteAclsResponse(filter_results=[invalid] * len(filters))
        return when_committed(
            self.active,
            lambda controller, _now: controller.delete_acls(selectors),
            delete_acls_response,
            lambda code, message: DeleteAclsResponse(
                filter_results=[result(error_code=code, error_message=message)] * len(filters)
            ),
        )

    # ------------------------------------------------------------------ SCRAM, quotas
    def alter_user_scram_credentials(self, request: Request) -> Any:
        body = request.body
        result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
        users = list(
            dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
        )

        def every_user(code: ErrorCode, message: str | None) -> Any:
            return AlterUserScramCredentialsResponse(
                results=[result(user=u, error_code=code, error_message=message) for u in users]
            )

        if not self.authorized(request, Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
            return every_user(REFUSED.code, REFUSED.message)
        deletions = [scram_control.ScramDeletion(d.name, d.mechanism) for d in body.deletions]
        upsertions = [
            scram_control.ScramUpsertion(
                u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password)
            )
            for u in body.upsertions
        ]
        return when_committed(
            self.active,
            lambda controller, _now: controller.alter_user_scram_credentials(deletions, upsertions),
            lambda results: AlterUserScramCredentialsResponse(
                throttle_time_ms=0,
                results=[
                    result(user=name, error_code=e.code, error_message=e.message)
                    for name, e in results
                ],
            ),
            every_user,
        )

    def alter_client_quotas(self, request: Request) -> Any:
        body = request.body
        response = AlterClientQuotasResponse

        def answer(errors: list[ApiError]) -> Any:
            return response(
                throttle_time_ms=0,
                entries=[
                    response.EntryData(
                        error_code=e.code,
                        error_message=e.message,
                        entity=[
                            response.EntityData(
                                entity_type=c.entity_type, entity_name=c.entity_name
                            )
                            for c in entry.entity
                        ],
                    )
                    for entry, e in zip(body.entries, errors, strict=True)
                ],
            )

        if not self.authorized(request, Op.ALTER_CONFIGS, Res.CLUSTER, CLUSTER_NAME):
            return answer([REFUSED] * len(body.entries))
        entries = [
            quota_control.QuotaAlteration(
                tuple((c.entity_type, c.entity_name) for c in entry.entity),
                [quota_control.QuotaOp(op.key, op.value, op.remove) for op in entry.ops],
            )
            for entry in body.entries
        ]
        return when_committed(
            self.active,
            lambda controller, _now: controller.alter_client_quotas(
                entries, validate_only=body.validate_only
            ),
            answer,
            lambda code, message: answer([ApiError(code, message)] * len(entries)),
        )

    # ------------------------------------------------------------------ replicas, leaders
    def alter_partition_reassignments(self, request: Request) -> Any:
        body = request.body
        allow = body.allow_replication_factor_change

        def failed(code: ErrorCode) -> Any:
            return alter_response(code, every_partition(reassigned_partitions(body), code), allow)

        if not self.authorized(request, Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
            return failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        wanted = {
            (t.name, p.partition_index): None if p.replicas is None else list(p.replicas)
            for t in body.topics
            for p in t.partitions
        }
        return when_committed(
            self.active,
            lambda controller, _now: controller.alter_partition_reassignments(wanted),
            lambda results: alter_response(
                ErrorCode.NO_ERROR,
                {tp: (e.code, e.message) for tp, e in results.items()},
                allow,
            ),
            lambda code, _message: failed(code),
        )

    def list_partition_reassignments(self, request: Request) -> Any:
        if not self.authorized(request, Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
            return list_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
        if not self.active.is_active:
            return list_response(ErrorCode.NOT_CONTROLLER, {})
        image = self.active.controller.image
        asked = request.body.topics
        wanted = (
            None if asked is None else {(t.name, p) for t in asked for p in t.partition_indexes}
        )
        moves = {
            (topic.name, index): (p.replicas, p.adding_replicas, p.removing_replicas)
            for topic in image.topics.values()
            for index, p in topic.partitions.items()
            if (p.adding_replicas or p.removing_replicas)
            and (wanted is None or (topic.name, index) in wanted)
        }
        return list_response(ErrorCode.NO_ERROR, moves)

    def elect_leaders(self, request: Request) -> Any:
        body = request.body

        def failed(code: ErrorCode) -> Any:
            return elect_response(code, every_partition(elected_partitions(body), code))

        if not self.authorized(request, Op.ALTER, Res.CLUSTER, CLUSTER_NAME):
            return failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if body.election_type not in (0, 1):
            return failed(ErrorCode.INVALID_REQUEST)
        partitions = (
            None
            if body.topic_partitions is None
            else [(t.topic, p) for t in body.topic_partitions for p in t.partitions]
        )
        return when_committed(
            self.active,
            lambda controller, _now: controller.elect_leaders(body.election_type, partitions),
            lambda results: elect_response(
                ErrorCode.NO_ERROR,
                {
                    tp: (e.code, e.message or KAFKA_MESSAGES.get(e.code))
                    for tp, e in results.items()
                },
            ),
            lambda code, _message: failed(code),
        )
