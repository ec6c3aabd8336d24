package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The Java admin client's share group calls (KIP-932): describeShareGroups,
 * listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets, deleteShareGroups.
 * Each answers what it observed, or "ok" / the error of its future.
 */
final class ShareGroupOps {
    private ShareGroupOps() {}

    interface Call {
        Object run(Admin admin, JsonNode request) throws Exception;
    }

    static void register(Map<String, Harness.Operation> operations) {
        Map<String, Call> calls = new TreeMap<>();
        calls.put("describe-share-groups", ShareGroupOps::describe);
        calls.put("list-share-group-offsets", ShareGroupOps::listOffsets);
        calls.put("alter-share-group-offsets", ShareGroupOps::alterOffsets);
        calls.put("delete-share-group-offsets", ShareGroupOps::deleteOffsets);
        calls.put("delete-share-groups", ShareGroupOps::delete);
        calls.forEach((name, call) -> operations.put(name, (request, events) -> {
            try (Admin admin = Admin.create(Clients.props(request, Map.of()))) {
                return call.run(admin, request);
            }
        }));
    }

    /** group -> its state, epochs and members (id, client id, assignment). */
    private static Object describe(Admin admin, JsonNode request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        Map<String, ShareGroupDescription> groups =
                admin.describeShareGroups(Clients.strings(request.get("groups"))).all().get();
        groups.forEach((id, group) -> {
            Map<String, Object> g = new LinkedHashMap<>();
            g.put("state", group.groupState().toString());
            g.put("group_epoch", group.groupEpoch());
            g.put("assignment_epoch", group.targetAssignmentEpoch());
            g.put("coordinator", group.coordinator() == null ? -1 : group.coordinator().id());
            List<Object> members = new ArrayList<>();
            for (ShareMemberDescription m : group.members()) {
                Map<String, Object> member = new LinkedHashMap<>();
                member.put("member_id", m.consumerId());
                member.put("client_id", m.clientId());
                member.put("assignment", Clients.names(m.assignment().topicPartitions()));
                members.add(member);
            }
            g.put("members", members);
            out.put(id, g);
        });
        return out;
    }

    /** partition -> start offset of the group's share-partitions. */
    private static Object listOffsets(Admin admin, JsonNode request) throws Exception {
        String group = request.get("group").asText();
        ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
        if (request.has("partitions")) {
            List<TopicPartition> partitions = new ArrayList<>();
            Clients.strings(request.get("partitions")).forEach(p -> partitions.add(Clients.partition(p)));
            spec.topicPartitions(partitions);
        }
        Map<TopicPartition, SharePartitionOffsetInfo> found =
                admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group).get();
        Map<String, Object> out = new TreeMap<>();
        found.forEach((tp, info) -> out.put(Clients.name(tp), info == null ? null : info.startOffset()));
        return out;
    }

    private static Object alterOffsets(Admin admin, JsonNode request) {
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        request.get("offsets").fields().forEachRemaining(
                e -> offsets.put(Clients.partition(e.getKey()), e.getValue().asLong()));
        try {
            admin.alterShareGroupOffsets(request.get("group").asText(), offsets).all().get();
            return "ok";
        } catch (Exception e) {
            return Clients.error(e);
        }
    }

    private static Object deleteOffsets(Admin admin, JsonNode request) {
        Set<String> topics = Set.copyOf(Clients.strings(request.get("topics")));
        try {
            admin.deleteShareGroupOffsets(request.get("group").asText(), topics).all().get();
            return "ok";
        } catch (Exception e) {
            return Clients.error(e);
        }
    }

    private static Object delete(Admin admin, JsonNode request) {
        try {
            admin.deleteShareGroups(Clients.strings(request.get("groups"))).all().get();
            return "ok";
        } catch (Exception e) {
            return Clients.error(e);
        }
    }
}
