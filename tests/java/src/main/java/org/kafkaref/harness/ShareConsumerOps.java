package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The Java share consumer (KIP-932): several KafkaShareConsumers of one share group read a
 * topic together, acknowledging explicitly.
 */
final class ShareConsumerOps {
    private ShareConsumerOps() {}

    static void register(Map<String, Harness.Operation> operations) {
        operations.put("share_group", ShareConsumerOps::shareGroup);
    }

    /**
     * `members` share consumers of `group` (which starts at the earliest offset) read `topic`
     * until `records` distinct records are accepted. On its first delivery, a record whose
     * offset is a multiple of `release_every` (if > 0) is released, every other record
     * accepted. Answers each member's deliveries as "partition:offset:deliveryCount:verdict",
     * then the group as describeShareGroups sees it while the members are still in it.
     */
    static Object shareGroup(JsonNode request, Harness.Events events) throws Exception {
        String topic = request.get("topic").asText();
        String group = request.get("group").asText();
        int members = request.path("members").asInt(2);
        int records = request.get("records").asInt();
        int releaseEvery = request.path("release_every").asInt(0);
        Duration wait = Duration.ofSeconds(request.path("wait_seconds").asInt(60));
        try (Admin admin = Admin.create(Clients.props(request, Map.of()))) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp earliest = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(earliest))).all().get();
        }
        Set<String> accepted = ConcurrentHashMap.newKeySet();
        Map<String, List<String>> deliveries = new ConcurrentHashMap<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        List<KafkaShareConsumer<String, String>> consumers = Collections.synchronizedList(new ArrayList<>());
        for (int m = 1; m <= members; m++) {
            String name = "member-" + m;
            deliveries.put(name, Collections.synchronizedList(new ArrayList<>()));
            Map<String, Object> defaults = Map.of(
                    "group.id", group, "client.id", name, "share.acknowledgement.mode", "explicit");
            KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(
                    Clients.props(request, defaults), new StringDeserializer(), new StringDeserializer());
            consumers.add(consumer);
            Thread thread = new Thread(() -> {
                try {
                    consumer.subscribe(List.of(topic));
                    while (accepted.size() < records && failure.get() == null) {
                        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                            int count = record.deliveryCount().map(Short::intValue).orElse(-1);
                            boolean release = releaseEvery > 0 && count == 1 && record.offset() % releaseEvery == 0;
                            consumer.acknowledge(record, release ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                            String key = record.partition() + ":" + record.offset();
                            deliveries.get(name).add(key + ":" + count + ":" + (release ? "release" : "accept"));
                            if (!release) {
                                accepted.add(key);
                            }
                        }
                        consumer.commitSync();
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, name);
            threads.add(thread);
            thread.start();
        }
        boolean done = Clients.await(() -> accepted.size() >= records || failure.get() != null, wait);
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Admin.create(Clients.props(request, Map.of()))) {
            ShareGroupDescription description =
                    admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
            Map<String, Object> described = new LinkedHashMap<>();
            described.put("state", description.groupState().toString());
            described.put("members", description.members().size());
            result.put("description", described);
        }
        for (Thread thread : threads) {
            thread.join(wait.toMillis());
        }
        for (KafkaShareConsumer<String, String> consumer : consumers) {
            consumer.close();
        }
        if (failure.get() != null) {
            throw new RuntimeException(Clients.error(failure.get()), failure.get());
        }
        result.put("done", done);
        result.put("deliveries", deliveries);
        return result;
    }
}
