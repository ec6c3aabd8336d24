"""The admin client: create and delete topics, add partitions, read configs, delete records.

    admin = Admin(bootstrap_servers="127.0.0.1:9092")
    admin.create_topics([NewTopic("clicks", num_partitions=3, replication_factor=1,
                                  configs={"retention.ms": "86400000"})])
    print(admin.describe_topics(["clicks"]))
    admin.close()

Kafka's admin operations are ordinary requests (KIP-4), each sent to the broker that can
answer it (Kafka's `KafkaAdminClient`):

| operation          | API              | sent to                                        |
|--------------------|------------------|------------------------------------------------|
| create_topics      | CreateTopics     | the controller (Metadata's `controller_id`)    |
| delete_topics      | DeleteTopics     | the controller                                 |
| create_partitions  | CreatePartitions | the controller                                 |
| list/describe      | Metadata         | any broker                                     |
| describe_configs   | DescribeConfigs  | any broker for a topic; that broker for BROKER |
| describe_log_dirs  | DescribeLogDirs  | each broker asked about                        |
| delete_records     | DeleteRecords    | each partition's leader                        |
| list_offsets       | ListOffsets      | each partition's leader                        |
| groups             | see admin_groups.py: the group's coordinator   |                  |
| share groups       | see admin_share_groups.py (KIP-932)            |                  |
| transactions       | see admin_transactions.py (KIP-664)            |                  |
| ACLs               | see admin_acls.py: any broker                  |                  |
| client quotas      | see admin_quotas.py: any broker                |                  |
| SCRAM users        | see admin_scram.py: any broker                 |                  |
| reassignments      | see admin_replicas.py: the controller          |                  |

The controller can move, so NOT_CONTROLLER means "refresh the metadata and resend".
Each call blocks until every answer arrived and raises a `KafkaError` naming the first
resource that failed (Kafka returns a future per resource; `all().get()` is the common
use, and the one this client offers). `num_partitions=-1` and `replication_factor=-1` ask
for the broker's defaults (`num.partitions`, `default.replication.factor`, KIP-464).

**One flat interface, parts inside.** Kafka's `Admin` is a single interface
(`Admin.createTopics`, `describeConfigs`, `createAcls`, `listConsumerGroupOffsets`...), and
so is this one: every operation is a method of `Admin`, as in Java and in the tools that
call it. Inside, each area is an object `Admin` composes, constructed with only the routes
it uses (admin_requests.py): `AclAdmin`, `QuotaAdmin` and `ScramAdmin` a request to any
broker; `ReplicaAdmin` the route to the controller; `GroupAdmin` and `TransactionAdmin`
the cluster, a broker, and a coordinator. The methods of those areas are listed below as
one-line delegations: the whole API reads in one place, and each area's constructor says
what it depends on. Topics, configs, log dirs and records, the first admin operations
(KIP-4), are `Admin`'s own.

Spec rules: CLIENT-18, CLIENT-30 (spec/client.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafka_ref.client.admin_acls import AclAdmin
from kafka_ref.client.admin_groups import (
    ConsumerGroupDescription,
    GroupAdmin,
    GroupListing,
    MemberDescription,
)
from kafka_ref.client.admin_quotas import QuotaAdmin
from kafka_ref.client.admin_replicas import Outcomes, ReplicaAdmin
from kafka_ref.client.admin_requests import AdminRequests, check
from kafka_ref.client.admin_scram import ScramAdmin
from kafka_ref.client.admin_share_groups import (
    ShareAdmin,
    ShareGroupDescription,
    SharePartitionOffsetInfo,
)
from kafka_ref.client.admin_transactions import (
    ProducerState,
    TransactionAdmin,
    TransactionDescription,
    TransactionListing,
)
from kafka_ref.client.cluster_view import Metadata, Node, PartitionInfo, error_code, partitions_of
from kafka_ref.client.connection import parse_bootstrap_servers
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.client.offset_lookup import OffsetFetcher
from kafka_ref.client.subscription_state import SubscriptionState
from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
)
from kafka_ref.quota.entity import QuotaEntity
from kafka_ref.security.acls import AclBinding, AclBindingFilter
from kafka_ref.security.client_security import ClientSecurity, resolve_security

__all__ = [
    "Admin",
    "ConfigEntry",
    "ConfigResource",
    "ConsumerGroupDescription",
    "GroupListing",
    "MemberDescription",
    "NewTopic",
    "ProducerState",
    "TopicDescription",
    "TransactionDescription",
    "TransactionListing",
]

_ids = itertools.count(1)


@dataclass
class NewTopic:
    """A topic to create; -1 takes the broker's default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)


class TopicDescription(NamedTuple):
    name: str
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


class ReplicaInfo(NamedTuple):
    """One partition in a log directory (DescribeLogDirs)."""

    size: int
    offset_lag: int
    is_future: bool


class LogDirInfo(NamedTuple):
    """One log directory of a broker: its error and its partitions (DescribeLogDirs)."""

    path: str
    error: ErrorCode
    replicas: dict[TopicPartition, ReplicaInfo]


class ConfigResource(NamedTuple):
    """A config owner: `ConfigResource(ConfigResource.TOPIC, "clicks")`, (BROKER, "1") or
    (GROUP, "queue")."""

    type: int
    name: str

    TOPIC = 2
    BROKER = 4
    GROUP = 32  # a group's configs (KIP-848, KIP-932)


def _node_of(resource: ConfigResource) -> int | None:
    """Where a config request goes: a broker's own configs to that broker; a topic's, or
    the cluster-wide broker defaults (name ""), to any broker."""
    if resource.type == ConfigResource.BROKER and resource.name:
        return int(resource.name)
    return None


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: int  # 1 DYNAMIC_TOPIC_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG, ...
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[tuple[int, str, str | None], ...] = ()  # (source, name, value), if asked

    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5

    @property
    def is_default(self) -> bool:
        return self.source == ConfigEntry.DEFAULT_CONFIG


class Admin:
    """Kafka's admin client, blocking: every method returns when the brokers have answered."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        *,
        client_id: str | None = None,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        security: Mapping[str, Any] | ClientSecurity | None = None,
    ) -> None:
        self.request_timeout_ms = request_timeout_ms
        self.metadata = Metadata(
            parse_bootstrap_servers(bootstrap_servers),
            retry_backoff_ms=retry_backoff_ms,
            allow_auto_topic_creation=False,
        )
        self.metadata.need_all_topics = True  # an admin's view is the whole cluster
        self.client = NetworkClient(
            self.metadata,
            client_id=client_id or f"kafka-ref-admin-{next(_ids)}",
            request_timeout_ms=request_timeout_ms,
            security=resolve_security(security),
        )
        requests = AdminRequests(self.client, self.metadata, request_timeout_ms)
        self._requests = requests
        self._groups = GroupAdmin(requests)
        self._share_groups = ShareAdmin(requests)
        self._transactions = TransactionAdmin(requests)
        self._acls = AclAdmin(requests.send_to_any)
        self._quotas = QuotaAdmin(requests.send_to_any)
        self._scram = ScramAdmin(requests.send_to_any)
        self._replicas = ReplicaAdmin(requests)

    def _to_controller(self, api_key: ApiKey, body: Any, results: str, name: str) -> Any:
        """Send to the controller, again if any result says NOT_CONTROLLER; raise for the
        first result that failed."""

        def not_controller(response: Any) -> ErrorCode:
            codes = (error_code(i.error_code) for i in getattr(response, results))
            moved = any(code == ErrorCode.NOT_CONTROLLER for code in codes)
            return ErrorCode.NOT_CONTROLLER if moved else ErrorCode.NO_ERROR

        response = self._requests.to_controller(api_key, body, not_controller)
        for item in getattr(response, results):
            check(
                f"{name} {getattr(item, 'name', '')}".strip(),
                item.error_code,
                getattr(item, "error_message", None),
            )
        return response

    # -- topics ------------------------------------------------------------------------

    def create_topics(self, topics: Iterable[NewTopic], *, validate_only: bool = False) -> None:
        """Create topics; raises for the first one that failed (e.g. TOPIC_ALREADY_EXISTS)."""
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    assignments=[],
                    configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=str(v))
                        for k, v in t.configs.items()
                    ],
                )
                for t in topics
            ],
            timeout_ms=self.request_timeout_ms,
            validate_only=validate_only,
        )
        self._to_controller(ApiKey.CREATE_TOPICS, request, "topics", "create topic")

    def delete_topics(self, names: Iterable[str]) -> None:
        names = list(names)
        request = DeleteTopicsRequest(  # v6+ names topics in `topics`, older in `topic_names`
            topic_names=names,
            topics=[DeleteTopicsRequest.DeleteTopicState(name=name) for name in names],
            timeout_ms=self.request_timeout_ms,
        )
        self._to_controller(ApiKey.DELETE_TOPICS, request, "responses", "delete topic")

    def create_partitions(
        self, new_totals: Mapping[str, int], *, validate_only: bool = False
    ) -> None:
        """Grow topics to `new_totals[topic]` partitions (partitions can only be added)."""
        request = CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(name=t, count=n, assignments=None)
                for t, n in new_totals.items()
            ],
            timeout_ms=self.request_timeout_ms,
            validate_only=validate_only,
        )
        self._to_controller(ApiKey.CREATE_PARTITIONS, request, "results", "create partitions for")

    def _metadata(self, topics: list[str] | None) -> Any:
        request = MetadataRequest(
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        response = self._requests.send(None, ApiKey.METADATA, request)
        if topics is None:  # a full answer is also a fresh cluster view
            self.metadata.update(response, now_ms())
        return response

    def list_topics(self, *, internal: bool = False) -> list[str]:
        response = self._metadata(None)
        return sorted(t.name for t in response.topics if internal or not t.is_internal)

    def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        """Partitions, leaders, replicas and ISR; raises if a named topic does not exist."""
        names = None if names is None else list(names)
        response = self._metadata(names)
        described = []
        for topic in response.topics:
            check(f"describe topic {topic.name}", topic.error_code)
            described.append(TopicDescription(topic.name, topic.is_internal, partitions_of(topic)))
        return sorted(described)

    def describe_cluster(self) -> tuple[list[Node], int, str | None]:
        """(brokers, controller id, cluster id)."""
        cluster = self._requests.cluster(refresh=True)
        return list(cluster.nodes), cluster.controller_id, cluster.cluster_id

    # -- configs and records -----------------------------------------------------------

    def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        keys: Iterable[str] | None = None,
        *,
        include_synonyms: bool = False,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Every config of each resource with its value and source (defaults included);
        with `include_synonyms` each entry's layers, most specific first."""
        out: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        for resource in resources:
            node = _node_of(resource)
            request = DescribeConfigsRequest(
                resources=[
                    DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=resource.type,
                        resource_name=resource.name,
                        configuration_keys=None if keys is None else list(keys),
                    )
                ],
                include_synonyms=include_synonyms,
            )
            self._requests.cluster()
            response = self._requests.send(node, ApiKey.DESCRIBE_CONFIGS, request)
            for result in response.results:
                what = f"describe configs of {resource.name}"
                check(what, result.error_code, result.error_message)
                out[resource] = {
                    c.name: ConfigEntry(
                        c.name,
                        c.value,
                        c.config_source,
                        c.read_only,
                        c.is_sensitive,
                        tuple((y.source, y.name, y.value) for y in c.synonyms or ()),
                    )
                    for c in result.configs
                }
        return out

    def incremental_alter_configs(
        self,
        resource: ConfigResource,
        changes: Iterable[tuple[str, str | None, int]],
        *,
        validate_only: bool = False,
    ) -> None:
        """Change a resource's configs key by key: (name, value, operation), operation 0 SET,
        1 DELETE, 2 APPEND, 3 SUBTRACT (IncrementalAlterConfigs, KIP-339; CONFIG-2)."""
        make = IncrementalAlterConfigsRequest.AlterableConfig
        request = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource.type,
                    resource_name=resource.name,
                    configs=[make(name=n, config_operation=op, value=v) for n, v, op in changes],
                )
            ],
            validate_only=validate_only,
        )
        self._requests.cluster()
        node = _node_of(resource)
        response = self._requests.send(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, request)
        for result in response.responses:
            check(f"alter configs of {resource.name}", result.error_code, result.error_message)

    def describe_log_dirs(self, brokers: Iterable[int]) -> dict[int, list[LogDirInfo]]:
        """Each broker's log directories with every partition in them (DescribeLogDirs)."""
        self._requests.cluster()
        out: dict[int, list[LogDirInfo]] = {}
        for broker in brokers:
            response = self._requests.send(
                broker, ApiKey.DESCRIBE_LOG_DIRS, DescribeLogDirsRequest(topics=None)
            )
            check(f"describe log dirs of broker {broker}", response.error_code)
            out[broker] = [
                LogDirInfo(
                    r.log_dir,
                    error_code(r.error_code),
                    {
                        TopicPartition(t.name, p.partition_index): ReplicaInfo(
                            p.partition_size, p.offset_lag, p.is_future_key
                        )
                        for t in r.topics
                        for p in t.partitions
                    },
                )
                for r in response.results
            ]
        return out

    def delete_records(self, before: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Delete records below the given offsets (-1: the high watermark); returns the new
        low watermarks. Sent to each partition's leader."""
        cluster = self._requests.cluster(refresh=True)
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, offset in before.items():
            tp = TopicPartition(*tp)
            leader = cluster.leader_for(tp)
            if leader is None:
                raise KafkaError(f"no leader for {tp}", code=ErrorCode.LEADER_NOT_AVAILABLE)
            by_leader.setdefault(leader, {})[tp] = offset
        low_watermarks = {}
        for leader, offsets in by_leader.items():
            topics: dict[str, list] = {}
            for tp, offset in offsets.items():
                topics.setdefault(tp.topic, []).append(
                    DeleteRecordsRequest.DeleteRecordsPartition(
                        partition_index=tp.partition, offset=offset
                    )
                )
            request = DeleteRecordsRequest(
                topics=[
                    DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=p)
                    for t, p in topics.items()
                ],
                timeout_ms=self.request_timeout_ms,
            )
            response = self._requests.send(leader, ApiKey.DELETE_RECORDS, request)
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    check(f"delete records of {tp}", p.error_code)
                    low_watermarks[tp] = p.low_watermark
        return low_watermarks

    def list_offsets(
        self, specs: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets to each leader: spec -2 earliest, -1 latest, t >= 0 the first offset
        with a timestamp at or after t. Returns {tp: (offset, timestamp)}; offset -1 when no
        record is that late."""
        self._requests.cluster()
        fetcher = OffsetFetcher(
            self.client,
            self.metadata,
            SubscriptionState(),
            request_timeout_ms=self.request_timeout_ms,
        )
        return fetcher.list_offsets(dict(specs), self.request_timeout_ms)

    # -- consumer groups (admin_groups.py) ----------------------------------------------

    def list_groups(self) -> list[GroupListing]:
        return self._groups.list_groups()

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, ConsumerGroupDescription]:
        return self._groups.describe_groups(group_ids)

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return self._groups.list_consumer_group_offsets(group_id, partitions)

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
    ) -> None:
        self._groups.alter_consumer_group_offsets(group_id, offsets)

    def delete_groups(self, group_ids: Iterable[str]) -> None:
        self._groups.delete_groups(group_ids)

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        return self._groups.delete_consumer_group_offsets(group_id, partitions)

    # -- share groups (admin_share_groups.py) ------------------------------------------

    def list_share_groups(self) -> list[GroupListing]:
        return self._share_groups.list_share_groups()

    def describe_share_groups(self, group_ids: Iterable[str]) -> dict[str, ShareGroupDescription]:
        return self._share_groups.describe_share_groups(group_ids)

    def list_share_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, int]:
        return self._share_groups.list_share_group_offsets(group_id, partitions)

    def list_share_group_offsets_info(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        return self._share_groups.list_share_group_offsets_info(group_id, partitions)

    def alter_share_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> None:
        self._share_groups.alter_share_group_offsets(group_id, offsets)

    def delete_share_group_offsets(
        self, group_id: str, topics: Iterable[str]
    ) -> dict[str, ErrorCode]:
        return self._share_groups.delete_share_group_offsets(group_id, topics)

    # -- transactions (admin_transactions.py) ------------------------------------------

    def list_transactions(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
    ) -> list[TransactionListing]:
        return self._transactions.list_transactions(states, producer_ids)

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription]:
        return self._transactions.describe_transactions(transactional_ids)

    def describe_producers(self, tp: TopicPartition) -> list[ProducerState]:
        return self._transactions.describe_producers(tp)

    # -- ACLs (admin_acls.py) ----------------------------------------------------------

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        self._acls.create_acls(bindings)

    def describe_acls(self, selector: AclBindingFilter) -> list[AclBinding]:
        return self._acls.describe_acls(selector)

    def delete_acls(self, selectors: Iterable[AclBindingFilter]) -> list[AclBinding]:
        return self._acls.delete_acls(selectors)

    # -- client quotas (admin_quotas.py) -----------------------------------------------

    def describe_client_quotas(
        self, components: Iterable[tuple[str, int, str | None]] = (), *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        return self._quotas.describe_client_quotas(components, strict=strict)

    def alter_client_quotas(
        self,
        entity: QuotaEntity,
        set_: Mapping[str, float] | None = None,
        remove: Iterable[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        self._quotas.alter_client_quotas(entity, set_, remove, validate_only=validate_only)

    # -- SCRAM users (admin_scram.py) --------------------------------------------------

    def describe_user_scram_credentials(
        self, users: list[str] | None = None
    ) -> dict[str, dict[str, int]]:
        return self._scram.describe_user_scram_credentials(users)

    def alter_user_scram_credentials(
        self,
        upsertions: dict[str, dict[str, tuple[str, int]]] | None = None,
        deletions: dict[str, list[str]] | None = None,
    ) -> None:
        self._scram.alter_user_scram_credentials(upsertions, deletions)

    # -- reassignments and elections (admin_replicas.py) -------------------------------

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Outcomes:
        return self._replicas.alter_partition_reassignments(targets)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        return self._replicas.list_partition_reassignments(partitions)

    def elect_leaders(
        self, election_type: int, partitions: Iterable[TopicPartition] | None = None
    ) -> Outcomes:
        return self._replicas.elect_leaders(election_type, partitions)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
