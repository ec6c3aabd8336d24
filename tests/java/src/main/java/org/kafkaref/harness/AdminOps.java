package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The Java admin client, one call per operation. Each answers what the broker answered:
 * per-resource results as "ok" or "ErrorClass: message", descriptions as plain maps.
 * Partitions are named "topic-N", config resources "topic:NAME" or "broker:ID" ("broker:"
 * for the cluster-wide default).
 */
final class AdminOps {
    private AdminOps() {}

    interface AdminCall {
        Object run(Admin admin, JsonNode request) throws Exception;
    }

    static void register(Map<String, Harness.Operation> operations) {
        Map<String, AdminCall> calls = new LinkedHashMap<>();
        calls.put("describe-cluster", AdminOps::describeCluster);
        calls.put("create-topics", AdminOps::createTopics);
        calls.put("list-topics", AdminOps::listTopics);
        calls.put("describe-topics", AdminOps::describeTopics);
        calls.put("create-partitions", AdminOps::createPartitions);
        calls.put("delete-topics", AdminOps::deleteTopics);
        calls.put("describe-configs", AdminOps::describeConfigs);
        calls.put("alter-configs", AdminOps::alterConfigs);
        calls.put("create-acls", AdminOps::createAcls);
        calls.put("describe-acls", AdminOps::describeAcls);
        calls.put("delete-acls", AdminOps::deleteAcls);
        calls.put("describe-scram", AdminOps::describeScram);
        calls.put("alter-scram", AdminOps::alterScram);
        calls.put("describe-quotas", AdminOps::describeQuotas);
        calls.put("alter-quotas", AdminOps::alterQuotas);
        calls.put("reassign", AdminOps::reassign);
        calls.put("list-reassignments", AdminOps::listReassignments);
        calls.put("elect-leaders", AdminOps::electLeaders);
        calls.put("describe-log-dirs", AdminOps::describeLogDirs);
        calls.put("list-groups", AdminOps::listGroups);
        calls.put("describe-groups", AdminOps::describeGroups);
        calls.put("list-group-offsets", AdminOps::listGroupOffsets);
        calls.put("alter-group-offsets", AdminOps::alterGroupOffsets);
        calls.put("delete-groups", AdminOps::deleteGroups);
        calls.put("describe-producers", AdminOps::describeProducers);
        calls.forEach((name, call) -> operations.put(name, (request, events) -> {
            try (Admin admin = Admin.create(Clients.props(request, Map.of()))) {
                return call.run(admin, request);
            }
        }));
    }

    /** name -> "ok" or the error of its future. */
    private static <K> Map<String, String> outcomes(Map<K, ? extends KafkaFuture<?>> futures) {
        Map<String, String> outcomes = new TreeMap<>();
        futures.forEach((key, future) -> {
            String name = key instanceof TopicPartition tp ? Clients.name(tp) : String.valueOf(key);
            try {
                future.get();
                outcomes.put(name, "ok");
            } catch (Exception e) {
                outcomes.put(name, Clients.error(e));
            }
        });
        return outcomes;
    }

    private static List<Integer> ids(Collection<Node> nodes) {
        return nodes.stream().map(Node::id).sorted().toList();
    }

    private static Object describeCluster(Admin admin, JsonNode request) throws Exception {
        DescribeClusterResult cluster = admin.describeCluster();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("cluster_id", cluster.clusterId().get());
        out.put("controller", cluster.controller().get().id());
        out.put("nodes", ids(cluster.nodes().get()));
        return out;
    }

    /** topics: [{name, partitions, replication_factor | assignment {p: [ids]}, configs}] */
    private static Object createTopics(Admin admin, JsonNode request) {
        List<NewTopic> topics = new ArrayList<>();
        for (JsonNode t : request.get("topics")) {
            NewTopic topic;
            if (t.has("assignment")) {
                Map<Integer, List<Integer>> assignment = new TreeMap<>();
                t.get("assignment").fields().forEachRemaining(e -> {
                    List<Integer> replicas = new ArrayList<>();
                    e.getValue().forEach(id -> replicas.add(id.asInt()));
                    assignment.put(Integer.parseInt(e.getKey()), replicas);
                });
                topic = new NewTopic(t.get("name").asText(), assignment);
            } else {
                topic = new NewTopic(t.get("name").asText(),
                        Optional.of(t.path("partitions").asInt(1)),
                        Optional.of((short) t.path("replication_factor").asInt(1)));
            }
            Map<String, String> configs = new HashMap<>();
            t.path("configs").fields().forEachRemaining(e -> configs.put(e.getKey(), e.getValue().asText()));
            topics.add(topic.configs(configs));
        }
        return outcomes(admin.createTopics(topics).values());
    }

    private static Object listTopics(Admin admin, JsonNode request) throws Exception {
        var options = new org.apache.kafka.clients.admin.ListTopicsOptions()
                .listInternal(request.path("internal").asBoolean(false));
        return new java.util.TreeSet<>(admin.listTopics(options).names().get());
    }

    private static Object describeTopics(Admin admin, JsonNode request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        Map<String, TopicDescription> topics =
                admin.describeTopics(Clients.strings(request.get("topics"))).allTopicNames().get();
        topics.forEach((name, description) -> {
            List<Map<String, Object>> partitions = new ArrayList<>();
            for (TopicPartitionInfo p : description.partitions()) {
                Map<String, Object> partition = new LinkedHashMap<>();
                partition.put("partition", p.partition());
                partition.put("leader", p.leader() == null ? -1 : p.leader().id());
                partition.put("replicas", p.replicas().stream().map(Node::id).toList());
                partition.put("isr", ids(p.isr()));
                partitions.add(partition);
            }
            out.put(name, Map.of(
                    "topic_id", description.topicId().toString(),
                    "internal", description.isInternal(),
                    "partitions", partitions));
        });
        return out;
    }

    /** counts: {topic: new total} */
    private static Object createPartitions(Admin admin, JsonNode request) {
        Map<String, NewPartitions> counts = new HashMap<>();
        request.get("counts").fields().forEachRemaining(
                e -> counts.put(e.getKey(), NewPartitions.increaseTo(e.getValue().asInt())));
        return outcomes(admin.createPartitions(counts).values());
    }

    private static Object deleteTopics(Admin admin, JsonNode request) {
        return outcomes(admin.deleteTopics(Clients.strings(request.get("topics"))).topicNameValues());
    }

    private static ConfigResource resource(String name) {
        String[] parts = name.split(":", 2);
        ConfigResource.Type type = switch (parts[0]) {
            case "topic" -> ConfigResource.Type.TOPIC;
            case "broker" -> ConfigResource.Type.BROKER;
            default -> throw new IllegalArgumentException("config resource " + name);
        };
        return new ConfigResource(type, parts[1]);
    }

    private static String resourceName(ConfigResource resource) {
        return resource.type().name().toLowerCase() + ":" + resource.name();
    }

    /** resources: ["topic:NAME", "broker:1"]; names: only these configs (all if absent). */
    private static Object describeConfigs(Admin admin, JsonNode request) throws Exception {
        List<ConfigResource> resources = new ArrayList<>();
        request.get("resources").forEach(r -> resources.add(resource(r.asText())));
        Set<String> only = request.has("names") ? Set.copyOf(Clients.strings(request.get("names"))) : null;
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<ConfigResource, Config> e : admin.describeConfigs(resources).all().get().entrySet()) {
            Map<String, Object> configs = new TreeMap<>();
            for (ConfigEntry entry : e.getValue().entries()) {
                if (only == null || only.contains(entry.name())) {
                    Map<String, Object> config = new LinkedHashMap<>();
                    config.put("value", entry.value());
                    config.put("source", entry.source().name());
                    config.put("read_only", entry.isReadOnly());
                    config.put("sensitive", entry.isSensitive());
                    configs.put(entry.name(), config);
                }
            }
            out.put(resourceName(e.getKey()), configs);
        }
        return out;
    }

    /** alterations: {"topic:NAME": [[OP, config, value], ...]} with OP SET, DELETE, APPEND, SUBTRACT. */
    private static Object alterConfigs(Admin admin, JsonNode request) {
        Map<ConfigResource, Collection<AlterConfigOp>> alterations = new HashMap<>();
        request.get("alterations").fields().forEachRemaining(e -> {
            List<AlterConfigOp> ops = new ArrayList<>();
            for (JsonNode op : e.getValue()) {
                ops.add(new AlterConfigOp(
                        new ConfigEntry(op.get(1).asText(), op.path(2).isMissingNode() ? null : op.get(2).asText()),
                        AlterConfigOp.OpType.valueOf(op.get(0).asText())));
            }
            alterations.put(resource(e.getKey()), ops);
        });
        Map<String, KafkaFuture<Void>> futures = new TreeMap<>();
        admin.incrementalAlterConfigs(alterations).values().forEach((r, f) -> futures.put(resourceName(r), f));
        return outcomes(futures);
    }

    /** {resource_type, name, pattern, principal, host, operation, permission} */
    private static AclBinding binding(JsonNode b) {
        return new AclBinding(
                new ResourcePattern(
                        ResourceType.fromString(b.get("resource_type").asText()),
                        b.get("name").asText(),
                        PatternType.fromString(b.path("pattern").asText("LITERAL"))),
                new AccessControlEntry(
                        b.get("principal").asText(),
                        b.path("host").asText("*"),
                        AclOperation.fromString(b.get("operation").asText()),
                        AclPermissionType.fromString(b.path("permission").asText("ALLOW"))));
    }

    /** A filter: the binding's fields, any of them absent meaning "any" (pattern: MATCH, ANY, ...). */
    private static AclBindingFilter filter(JsonNode f) {
        return new AclBindingFilter(
                new ResourcePatternFilter(
                        ResourceType.fromString(f.path("resource_type").asText("ANY")),
                        f.has("name") ? f.get("name").asText() : null,
                        PatternType.fromString(f.path("pattern").asText("ANY"))),
                new AccessControlEntryFilter(
                        f.has("principal") ? f.get("principal").asText() : null,
                        f.has("host") ? f.get("host").asText() : null,
                        AclOperation.fromString(f.path("operation").asText("ANY")),
                        AclPermissionType.fromString(f.path("permission").asText("ANY"))));
    }

    static Map<String, String> describe(AclBinding binding) {
        Map<String, String> out = new LinkedHashMap<>();
        out.put("resource_type", binding.pattern().resourceType().name());
        out.put("name", binding.pattern().name());
        out.put("pattern", binding.pattern().patternType().name());
        out.put("principal", binding.entry().principal());
        out.put("host", binding.entry().host());
        out.put("operation", binding.entry().operation().name());
        out.put("permission", binding.entry().permissionType().name());
        return out;
    }

    private static List<Map<String, String>> describeAll(Collection<AclBinding> bindings) {
        List<Map<String, String>> out = new ArrayList<>();
        bindings.forEach(b -> out.add(describe(b)));
        out.sort((a, b) -> a.toString().compareTo(b.toString()));
        return out;
    }

    private static Object createAcls(Admin admin, JsonNode request) throws Exception {
        List<AclBinding> bindings = new ArrayList<>();
        request.get("bindings").forEach(b -> bindings.add(binding(b)));
        admin.createAcls(bindings).all().get();
        return bindings.size();
    }

    private static Object describeAcls(Admin admin, JsonNode request) throws Exception {
        return describeAll(admin.describeAcls(filter(request.path("filter"))).values().get());
    }

    /** filters: [...] -> the bindings each deleted. */
    private static Object deleteAcls(Admin admin, JsonNode request) throws Exception {
        List<AclBindingFilter> filters = new ArrayList<>();
        request.get("filters").forEach(f -> filters.add(filter(f)));
        List<Object> deleted = new ArrayList<>();
        var results = admin.deleteAcls(filters).values();
        for (AclBindingFilter f : filters) {
            List<AclBinding> bindings = new ArrayList<>();
            results.get(f).get().values().forEach(r -> bindings.add(r.binding()));
            deleted.add(describeAll(bindings));
        }
        return deleted;
    }

    /**
     * users: [...] (all if absent) -> {user: [[mechanism, iterations], ...]}, or for a user
     * asked by name whose description failed, its error (`all()` leaves unknown users out).
     */
    private static Object describeScram(Admin admin, JsonNode request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        if (!request.has("users")) {
            admin.describeUserScramCredentials().all().get().forEach((user, d) -> out.put(user, credentials(d)));
            return out;
        }
        var result = admin.describeUserScramCredentials(Clients.strings(request.get("users")));
        for (String user : Clients.strings(request.get("users"))) {
            try {
                out.put(user, credentials(result.description(user).get()));
            } catch (Exception e) {
                out.put(user, Clients.error(e));
            }
        }
        return out;
    }

    private static List<List<Object>> credentials(UserScramCredentialsDescription description) {
        List<List<Object>> credentials = new ArrayList<>();
        for (ScramCredentialInfo info : description.credentialInfos()) {
            credentials.add(List.of(info.mechanism().mechanismName(), info.iterations()));
        }
        credentials.sort((a, b) -> a.get(0).toString().compareTo(b.get(0).toString()));
        return credentials;
    }

    /** upserts: [[user, mechanism, iterations, password]], deletions: [[user, mechanism]] */
    private static Object alterScram(Admin admin, JsonNode request) {
        List<UserScramCredentialAlteration> alterations = new ArrayList<>();
        request.path("upserts").forEach(u -> alterations.add(new UserScramCredentialUpsertion(
                u.get(0).asText(),
                new ScramCredentialInfo(ScramMechanism.fromMechanismName(u.get(1).asText()), u.get(2).asInt()),
                u.get(3).asText())));
        request.path("deletions").forEach(d -> alterations.add(new UserScramCredentialDeletion(
                d.get(0).asText(), ScramMechanism.fromMechanismName(d.get(1).asText()))));
        return outcomes(admin.alterUserScramCredentials(alterations).values());
    }

    /** An entity: {"user": "alice", "client-id": null} (null: the default entity). */
    private static ClientQuotaEntity entity(JsonNode e) {
        Map<String, String> entries = new HashMap<>();
        e.fields().forEachRemaining(f -> entries.put(f.getKey(), f.getValue().isNull() ? null : f.getValue().asText()));
        return new ClientQuotaEntity(entries);
    }

    private static String entityName(ClientQuotaEntity entity) {
        return new TreeMap<>(entity.entries()).toString();
    }

    /** components: [[type, name | null (the default) | absent (any)]]; strict: only those types. */
    private static Object describeQuotas(Admin admin, JsonNode request) throws Exception {
        List<ClientQuotaFilterComponent> components = new ArrayList<>();
        request.path("components").forEach(c -> components.add(
                c.size() == 1 ? ClientQuotaFilterComponent.ofEntityType(c.get(0).asText())
                        : c.get(1).isNull() ? ClientQuotaFilterComponent.ofDefaultEntity(c.get(0).asText())
                        : ClientQuotaFilterComponent.ofEntity(c.get(0).asText(), c.get(1).asText())));
        ClientQuotaFilter filter = request.path("strict").asBoolean(false)
                ? ClientQuotaFilter.containsOnly(components) : ClientQuotaFilter.contains(components);
        Map<String, Object> out = new TreeMap<>();
        admin.describeClientQuotas(filter).entities().get()
                .forEach((entity, quotas) -> out.put(entityName(entity), new TreeMap<>(quotas)));
        return out;
    }

    /** alterations: [[entity, {key: value | null (remove)}]] */
    private static Object alterQuotas(Admin admin, JsonNode request) {
        List<ClientQuotaAlteration> alterations = new ArrayList<>();
        for (JsonNode a : request.get("alterations")) {
            List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
            a.get(1).fields().forEachRemaining(op -> ops.add(new ClientQuotaAlteration.Op(
                    op.getKey(), op.getValue().isNull() ? null : op.getValue().asDouble())));
            alterations.add(new ClientQuotaAlteration(entity(a.get(0)), ops));
        }
        Map<String, String> outcomes = new TreeMap<>();
        admin.alterClientQuotas(alterations).values().forEach((entity, future) -> {
            try {
                future.get();
                outcomes.put(entityName(entity), "ok");
            } catch (Exception e) {
                outcomes.put(entityName(entity), Clients.error(e));
            }
        });
        return outcomes;
    }

    /** reassignments: {"topic-p": [replicas] | null (cancel)} */
    private static Object reassign(Admin admin, JsonNode request) {
        Map<TopicPartition, Optional<NewPartitionReassignment>> reassignments = new HashMap<>();
        request.get("reassignments").fields().forEachRemaining(e -> {
            Optional<NewPartitionReassignment> target = Optional.empty();
            if (!e.getValue().isNull()) {
                List<Integer> replicas = new ArrayList<>();
                e.getValue().forEach(id -> replicas.add(id.asInt()));
                target = Optional.of(new NewPartitionReassignment(replicas));
            }
            reassignments.put(Clients.partition(e.getKey()), target);
        });
        return outcomes(admin.alterPartitionReassignments(reassignments).values());
    }

    private static Object listReassignments(Admin admin, JsonNode request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, PartitionReassignment> e :
                admin.listPartitionReassignments().reassignments().get().entrySet()) {
            out.put(Clients.name(e.getKey()), Map.of(
                    "replicas", e.getValue().replicas(),
                    "adding", e.getValue().addingReplicas(),
                    "removing", e.getValue().removingReplicas()));
        }
        return out;
    }

    /** type: PREFERRED or UNCLEAN; partitions: ["topic-p"] (every partition if absent) */
    private static Object electLeaders(Admin admin, JsonNode request) throws Exception {
        Set<TopicPartition> partitions = null;
        if (request.has("partitions")) {
            partitions = new java.util.HashSet<>();
            for (String name : Clients.strings(request.get("partitions"))) {
                partitions.add(Clients.partition(name));
            }
        }
        var result = admin.electLeaders(ElectionType.valueOf(request.get("type").asText()), partitions);
        Map<String, String> out = new TreeMap<>();
        result.partitions().get().forEach((tp, error) -> out.put(
                Clients.name(tp), error.map(e -> e.getClass().getSimpleName() + ": " + e.getMessage()).orElse("ok")));
        return out;
    }

    /** brokers: [ids] -> {broker: {dir: {error, replicas: {tp: size}}}} */
    private static Object describeLogDirs(Admin admin, JsonNode request) throws Exception {
        List<Integer> brokers = new ArrayList<>();
        request.get("brokers").forEach(b -> brokers.add(b.asInt()));
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<Integer, Map<String, LogDirDescription>> broker :
                admin.describeLogDirs(brokers).allDescriptions().get().entrySet()) {
            Map<String, Object> dirs = new TreeMap<>();
            broker.getValue().forEach((path, dir) -> {
                Map<String, Object> replicas = new TreeMap<>();
                for (Map.Entry<TopicPartition, ReplicaInfo> r : dir.replicaInfos().entrySet()) {
                    replicas.put(Clients.name(r.getKey()), Map.of(
                            "size", r.getValue().size(),
                            "offset_lag", r.getValue().offsetLag(),
                            "future", r.getValue().isFuture()));
                }
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("error", dir.error() == null ? null : dir.error().getClass().getSimpleName());
                d.put("replicas", replicas);
                d.put("total_bytes", dir.totalBytes().orElse(-1L));
                d.put("usable_bytes", dir.usableBytes().orElse(-1L));
                dirs.put(path, d);
            });
            out.put(String.valueOf(broker.getKey()), dirs);
        }
        return out;
    }

    private static Object listGroups(Admin admin, JsonNode request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (GroupListing g : admin.listGroups().all().get()) {
            Map<String, Object> listing = new LinkedHashMap<>();
            listing.put("type", g.type().map(Enum::name).orElse(null));
            listing.put("protocol", g.protocol());
            listing.put("state", g.groupState().map(Enum::name).orElse(null));
            out.put(g.groupId(), listing);
        }
        return out;
    }

    private static Object describeGroups(Admin admin, JsonNode request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        admin.describeConsumerGroups(Clients.strings(request.get("groups"))).all().get()
                .forEach((id, description) -> out.put(id, ConsumerOps.describe(description)));
        return out;
    }

    private static Object listGroupOffsets(Admin admin, JsonNode request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        admin.listConsumerGroupOffsets(request.get("group").asText()).partitionsToOffsetAndMetadata().get()
                .forEach((tp, offset) -> out.put(Clients.name(tp),
                        offset == null ? null : List.of(offset.offset(), offset.metadata())));
        return out;
    }

    /** offsets: {"topic-p": offset} */
    private static Object alterGroupOffsets(Admin admin, JsonNode request) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        request.get("offsets").fields().forEachRemaining(
                e -> offsets.put(Clients.partition(e.getKey()), new OffsetAndMetadata(e.getValue().asLong())));
        var result = admin.alterConsumerGroupOffsets(request.get("group").asText(), offsets);
        Map<TopicPartition, KafkaFuture<Void>> futures = new HashMap<>();
        offsets.keySet().forEach(tp -> futures.put(tp, result.partitionResult(tp)));
        return outcomes(futures);
    }

    private static Object deleteGroups(Admin admin, JsonNode request) {
        return outcomes(admin.deleteConsumerGroups(Clients.strings(request.get("groups"))).deletedGroups());
    }

    /** partitions: ["topic-p"] -> {tp: [{producer_id, epoch, last_sequence, txn_start}]} */
    private static Object describeProducers(Admin admin, JsonNode request) throws Exception {
        List<TopicPartition> partitions = new ArrayList<>();
        Clients.strings(request.get("partitions")).forEach(name -> partitions.add(Clients.partition(name)));
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, PartitionProducerState> e :
                admin.describeProducers(partitions).all().get().entrySet()) {
            List<Map<String, Object>> producers = new ArrayList<>();
            for (ProducerState p : e.getValue().activeProducers()) {
                Map<String, Object> producer = new LinkedHashMap<>();
                producer.put("producer_id", p.producerId());
                producer.put("epoch", p.producerEpoch());
                producer.put("last_sequence", p.lastSequence());
                producer.put("txn_start", p.currentTransactionStartOffset().orElse(-1));
                producers.add(producer);
            }
            out.put(Clients.name(e.getKey()), producers);
        }
        return out;
    }
}
