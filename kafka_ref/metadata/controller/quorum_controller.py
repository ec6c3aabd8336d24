"""The active controller: every decision of the cluster, made by appending records.

In KRaft mode one controller of the Raft quorum is active, the quorum's leader (Kafka:
`QuorumController`). It answers the brokers (BrokerRegistration, BrokerHeartbeat,
AlterPartition, AllocateProducerIds, AssignReplicasToDirs) and the admin requests the
brokers forward to it (CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
AlterPartitionReassignments, IncrementalAlterConfigs, AlterConfigs, CreateAcls, DeleteAcls,
AlterUserScramCredentials, AlterClientQuotas). Each operation reads the current image and
returns a `ControllerResult`: the records that make the change and the response. Nothing
changes yet. The quorum appends the records and `replay` folds them into the image: on the
active controller as soon as they are appended, so that the next decision sees them, and on
every follower and broker once they are committed; the response is sent when they are committed
(Kafka: the controller's event queue, its `ControllerWriteEvent`s, the `MetadataDelta` it
replays, the snapshot registry that reverts records the quorum lost).

    request --decide(image)--> records + response --append, commit--> replay --> image'

The work is split by concept as Kafka splits it: cluster_control.py (brokers),
replication_control.py (topics and partitions) with partition_change.py (one partition's
change), config_control.py, producer_ids.py, acl_control.py, scram_control.py,
quota_control.py, features.py (bootstrap). This class composes them and keeps the little
that is not in the image: the log's next offset (the next broker epoch), the offset of each
broker's registration, the brokers' heartbeat sessions, and the random source for replica
placement and new ids, all injected so that a run can be replayed exactly. Time is a
parameter, `now_ms`; there are no sockets, threads or clocks here.

Rules: KCTRL-1..KCTRL-16, KCTRL-19, KCTRL-21, KCTRL-22.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence

from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller import (
    acl_control,
    config_control,
    producer_ids,
    quota_control,
    replication_control,
    scram_control,
)
from kafka_ref.metadata.controller.cluster_control import (
    BrokerControlState,
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerHeartbeats,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    check_broker_epoch,
    controlled_shutdown_record,
    current_state,
    fencing_record,
    is_new_incarnation,
    next_state,
    registration_record,
    shut_down_uncleanly,
)
from kafka_ref.metadata.controller.controller_config import ControllerConfig
from kafka_ref.metadata.controller.features import BOOTSTRAP_FEATURES, bootstrap_records
from kafka_ref.metadata.controller.result import NONE, ApiError, ControllerResult
from kafka_ref.metadata.image import EMPTY, MetadataImage, load
from kafka_ref.metadata.serde import ApiMessageAndVersion
from kafka_ref.security.acls import AclBinding, AclBindingFilter


class QuorumController:
    """The active controller's decisions over an image it replays."""

    def __init__(
        self,
        cluster_id: str,
        config: ControllerConfig | None = None,
        *,
        image: MetadataImage = EMPTY,
        next_offset: int = 0,
        rng: random.Random | None = None,
        epoch_source: Callable[[], int] | None = None,
    ) -> None:
        self.cluster_id = cluster_id
        self.config = config or ControllerConfig()
        self.image = image
        self.next_offset = next_offset  # the offset the next appended record gets
        self.registration_offsets: dict[int, int] = {}
        self.heartbeats = BrokerHeartbeats(self.config.session_timeout_ms)
        self.rng = rng or random.Random()
        # Kafka's new broker epoch is the log's next write offset: epochs only grow.
        self.epoch_source = epoch_source or (lambda: self.next_offset)

    # -- the log -----------------------------------------------------------------------

    def replay(self, records: Iterable[ApiMessageAndVersion]) -> MetadataImage:
        """Fold committed records into the image, numbering them from the next offset."""
        records = list(records)
        for offset, entry in enumerate(records, start=self.next_offset):
            if entry.name == "RegisterBrokerRecord":
                self.registration_offsets[entry.message.broker_id] = offset
        self.image = load(records, self.image)
        self.next_offset += len(records)
        return self.image

    def commit(self, result: ControllerResult):
        """Append, commit and replay `result`'s records, then give its response: what the
        quorum does for the active controller (a test's or a simulation's shortcut)."""
        self.replay(result.records)
        return result.response

    def _new_id(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def bootstrap(self, features: Mapping[str, int] = BOOTSTRAP_FEATURES) -> ControllerResult[None]:
        """The records a new cluster's log begins with (KCTRL-1)."""
        assert not self.image.features, "the cluster is already bootstrapped"
        return ControllerResult.of(bootstrap_records(features), None, atomic=True)

    # -- brokers -----------------------------------------------------------------------

    def register_broker(
        self, request: BrokerRegistrationRequest, now_ms: int
    ) -> ControllerResult[BrokerRegistrationReply]:
        """BrokerRegistration (KCTRL-2): a new incarnation gets a new epoch and starts
        fenced; the leaderships of the previous one end (KCTRL-4)."""
        image = self.image
        try:
            record = registration_record(
                image, self.heartbeats, self.cluster_id, request, self.epoch_source(), now_ms
            )
        except KafkaError as e:
            return ControllerResult.of([], BrokerRegistrationReply(ApiError.of(e)))
        records: list[object] = []
        if is_new_incarnation(image, request):
            broker_id = request.broker_id
            if shut_down_uncleanly(image, request):
                records += replication_control.broker_restarted_uncleanly(
                    image, self.config, broker_id
                )
            elif broker_id in image.brokers and not image.brokers[broker_id].fenced:
                records += replication_control.broker_leaves(image, self.config, broker_id)
            self.heartbeats.remove(broker_id)
        records.append(record)
        self.heartbeats.touch(request.broker_id, now_ms)
        reply = BrokerRegistrationReply(NONE, record.broker_epoch)
        return ControllerResult.of(records, reply, atomic=True)

    def broker_heartbeat(
        self, request: BrokerHeartbeatRequest, now_ms: int
    ) -> ControllerResult[BrokerHeartbeatReply]:
        """BrokerHeartbeat (KCTRL-3, KCTRL-5, KCTRL-21): take the replicas of newly failed
        log directories offline, unfence once caught up, fence on request, move leaderships
        away for a controlled shutdown, then let the broker go."""
        try:
            check_broker_epoch(self.image, request.broker_id, request.broker_epoch)
        except KafkaError as e:
            return ControllerResult.of([], BrokerHeartbeatReply(ApiError.of(e)))
        # The failed directories first: the state change below decides on the image they
        # leave (Kafka handles them after the state change, on the state before either).
        records: list[object] = replication_control.directories_offline(
            self.image, self.config, request.broker_id, request.offline_log_dirs
        )
        image = load([ApiMessageAndVersion.of(m) for m in records], self.image)
        broker = image.brokers[request.broker_id]
        registration_offset = self.registration_offsets.get(broker.id, broker.epoch)
        state = current_state(broker)
        new_state = next_state(
            broker,
            request,
            registration_offset,
            replication_control.has_leaderships(image, broker.id),
            self.heartbeats.sessions.get(broker.id),
            self.heartbeats.lowest_active_offset(image),
        )
        if new_state != state:
            if new_state.fenced:
                records += replication_control.broker_leaves(image, self.config, broker.id)
                records.append(fencing_record(broker, fenced=True))
            elif new_state == BrokerControlState.UNFENCED:
                records.append(fencing_record(broker, fenced=False))
                records += replication_control.broker_joins(image, self.config, broker.id)
            else:
                records.append(controlled_shutdown_record(broker))
                records += replication_control.broker_leaves(image, self.config, broker.id)
        self.heartbeats.touch(broker.id, now_ms, request.current_metadata_offset)
        session = self.heartbeats.sessions[broker.id]
        if (
            new_state == BrokerControlState.CONTROLLED_SHUTDOWN
            and session.controlled_shutdown_offset < 0
        ):
            # The last record that moved its leaderships: every active broker must replay
            # it before this one may stop (Kafka: `maybeUpdateControlledShutdownOffset`).
            session.controlled_shutdown_offset = self.next_offset + len(records) - 1
        reply = BrokerHeartbeatReply(
            NONE,
            is_caught_up=request.current_metadata_offset >= registration_offset,
            is_fenced=new_state.fenced,
            in_controlled_shutdown=new_state == BrokerControlState.CONTROLLED_SHUTDOWN,
            should_shut_down=new_state == BrokerControlState.SHUTDOWN_NOW,
        )
        return ControllerResult.of(records, reply)

    def fence_stale_broker(self, now_ms: int) -> ControllerResult[int | None]:
        """Fence the unfenced broker whose session expired longest ago, if any, and elect
        new leaders for its partitions (KCTRL-4; Kafka: `maybeFenceOneStaleBroker`, one
        broker a run)."""
        broker_id = self.heartbeats.stale_broker(self.image, now_ms)
        if broker_id is None:
            return ControllerResult.of([], None)
        broker = self.image.brokers[broker_id]
        records: list[object] = replication_control.broker_leaves(
            self.image, self.config, broker_id
        )
        records.append(fencing_record(broker, fenced=True))
        return ControllerResult.of(records, broker_id)

    def unregister_broker(self, broker_id: int) -> ControllerResult[ApiError]:
        """UnregisterBroker: the broker leaves every ISR, then its registration goes."""
        broker = self.image.brokers.get(broker_id)
        if broker is None:
            error = ApiError(
                ErrorCode.BROKER_ID_NOT_REGISTERED,
                f"Broker ID {broker_id} is not currently registered",
            )
            return ControllerResult.of([], error)
        records: list[object] = replication_control.broker_leaves(
            self.image, self.config, broker_id
        )
        records.append(r.UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker.epoch))
        self.heartbeats.remove(broker_id)
        return ControllerResult.of(records, NONE)

    # -- topics and partitions ---------------------------------------------------------

    def create_topics(
        self, topics: Sequence[replication_control.CreatableTopic], *, validate_only: bool = False
    ) -> ControllerResult[list[replication_control.CreatableTopicResult]]:
        return replication_control.create_topics(
            self.image,
            self.config,
            topics,
            validate_only=validate_only,
            rng=self.rng,
            new_topic_id=self._new_id,
        )

    def delete_topics(self, names: Sequence[str]) -> ControllerResult[list[tuple[str, ApiError]]]:
        return replication_control.delete_topics(self.image, names)

    def create_partitions(
        self,
        topics: Sequence[replication_control.CreatePartitionsTopic],
        *,
        validate_only: bool = False,
    ) -> ControllerResult[list[tuple[str, ApiError]]]:
        return replication_control.create_partitions(
            self.image, topics, validate_only=validate_only, rng=self.rng
        )

    def alter_partition(
        self,
        broker_id: int,
        broker_epoch: int,
        topics: Mapping[uuid.UUID, Sequence[replication_control.AlterPartitionData]],
    ) -> ControllerResult[
        ApiError | dict[uuid.UUID, list[replication_control.AlterPartitionResult]]
    ]:
        """AlterPartition (KCTRL-8): from a leader at its current broker epoch."""
        try:
            check_broker_epoch(self.image, broker_id, broker_epoch)
        except KafkaError as e:
            return ControllerResult.of([], ApiError.of(e))
        return replication_control.alter_partition(self.image, self.config, broker_id, topics)

    def assign_replicas_to_dirs(
        self,
        broker_id: int,
        broker_epoch: int,
        assignments: replication_control.DirectoryAssignments,
    ) -> ControllerResult[ApiError | dict]:
        """AssignReplicasToDirs (KCTRL-22): from a broker at its current broker epoch."""
        try:
            check_broker_epoch(self.image, broker_id, broker_epoch)
        except KafkaError as e:
            return ControllerResult.of([], ApiError.of(e))
        return replication_control.assign_replicas_to_dirs(
            self.image, self.config, broker_id, assignments
        )

    def elect_leaders(
        self, election_type: int, partitions: Sequence[tuple[str, int]] | None
    ) -> ControllerResult[dict[tuple[str, int], ApiError]]:
        return replication_control.elect_leaders(self.image, self.config, election_type, partitions)

    def alter_partition_reassignments(
        self, reassignments: Mapping[tuple[str, int], Sequence[int] | None]
    ) -> ControllerResult[dict[tuple[str, int], ApiError]]:
        return replication_control.alter_partition_reassignments(
            self.image, self.config, reassignments
        )

    # -- configs, producer ids, security, quotas ---------------------------------------

    def incremental_alter_configs(
        self,
        resources: Sequence[config_control.AlterConfigsResource],
        *,
        validate_only: bool = False,
    ) -> ControllerResult:
        return config_control.incremental_alter_configs(
            self.image, self.config, resources, validate_only=validate_only
        )

    def legacy_alter_configs(
        self,
        resources: Sequence[tuple[int, str, Mapping[str, str]]],
        *,
        validate_only: bool = False,
    ) -> ControllerResult:
        return config_control.legacy_alter_configs(
            self.image, self.config, resources, validate_only=validate_only
        )

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> ControllerResult[producer_ids.ProducerIdsBlock]:
        return producer_ids.allocate_producer_ids(self.image, broker_id, broker_epoch)

    def create_acls(self, bindings: Sequence[AclBinding]) -> ControllerResult[list[ApiError]]:
        return acl_control.create_acls(self.image, bindings, self._new_id)

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> ControllerResult:
        return acl_control.delete_acls(self.image, filters)

    def alter_user_scram_credentials(
        self,
        deletions: Sequence[scram_control.ScramDeletion],
        upsertions: Sequence[scram_control.ScramUpsertion],
    ) -> ControllerResult:
        return scram_control.alter_user_scram_credentials(self.image, deletions, upsertions)

    def alter_client_quotas(
        self, entries: Sequence[quota_control.QuotaAlteration], *, validate_only: bool = False
    ) -> ControllerResult[list[ApiError]]:
        return quota_control.alter_client_quotas(self.image, entries, validate_only=validate_only)
