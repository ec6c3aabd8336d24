package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

/** The Java consumer: reading a topic, a classic group of several members, seeking. */
final class ConsumerOps {
    private static final Duration READ_TIMEOUT = Duration.ofSeconds(30);

    private ConsumerOps() {}

    static void register(Map<String, Harness.Operation> operations) {
        operations.put("read", ConsumerOps::read);
        operations.put("group", ConsumerOps::group);
        operations.put("seek", ConsumerOps::seek);
    }

    static KafkaConsumer<String, String> consumer(JsonNode request, Map<String, Object> defaults) {
        Map<String, Object> all = new HashMap<>(Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"));
        all.putAll(defaults);
        return new KafkaConsumer<>(Clients.props(request, all), new StringDeserializer(), new StringDeserializer());
    }

    /** Polls until every partition's position reaches `end`; the records, in arrival order. */
    static List<ConsumerRecord<String, String>> readToEnd(
            KafkaConsumer<String, String> consumer, Map<TopicPartition, Long> end) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
        while (end.entrySet().stream().anyMatch(e -> consumer.position(e.getKey()) < e.getValue())) {
            if (System.nanoTime() > deadline) {
                Map<String, Long> at = new TreeMap<>();
                end.keySet().forEach(tp -> at.put(Clients.name(tp), consumer.position(tp)));
                throw new IllegalStateException("positions " + at + " did not reach " + Clients.byName(end));
            }
            consumer.poll(Duration.ofMillis(200)).forEach(records::add);
        }
        return records;
    }

    /**
     * Every record of `topic` at `isolation` (read_uncommitted unless given), partition by
     * partition: [offset, key, value, timestamp] each, and the end offsets it read to.
     */
    static Object read(JsonNode request, Harness.Events events) {
        String topic = request.get("topic").asText();
        String isolation = request.path("isolation").asText("read_uncommitted");
        try (KafkaConsumer<String, String> consumer =
                consumer(request, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            Map<String, List<List<Object>>> records = new TreeMap<>();
            partitions.forEach(tp -> records.put(String.valueOf(tp.partition()), new ArrayList<>()));
            for (ConsumerRecord<String, String> r : readToEnd(consumer, end)) {
                records.get(String.valueOf(r.partition()))
                        .add(List.of(r.offset(), String.valueOf(r.key()), r.value(), r.timestamp()));
            }
            return Map.of("records", records, "end_offsets", Clients.byName(end));
        }
    }

    /**
     * A classic consumer group of up to three members, each in its own thread, reading
     * `topic` (`partitions` partitions) and committing after every poll (and, for what it
     * processed, in onPartitionsRevoked):
     * <ol>
     * <li>member 1 joins alone; members 2 and 3 join (a rebalance);
     * <li>half of `records` records are produced and read; member 3 leaves (a rebalance);
     * <li>the other half is produced and read by members 1 and 2;
     * <li>the admin client describes the group and lists its committed offsets.
     * </ol>
     * Answers each assignment in turn, what each member read, the description, the
     * committed offsets and the end offsets.
     */
    static Object group(JsonNode request, Harness.Events events) throws Exception {
        String topic = request.get("topic").asText();
        String group = request.get("group").asText();
        int partitions = request.get("partitions").asInt();
        int records = request.get("records").asInt();
        Duration wait = Duration.ofSeconds(request.path("wait_seconds").asInt(30));
        Map<String, Object> result = new LinkedHashMap<>();
        List<Member> everyone = new ArrayList<>();
        List<Member> active = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                        Clients.props(request, Map.of()), new StringSerializer(), new StringSerializer());
                Admin admin = Admin.create(Clients.props(request, Map.of()))) {
            join(request, group, topic, "member-1", everyone, active);
            require(Clients.await(() -> covered(active, partitions), wait), "member 1 owns every partition");
            result.put("alone", assignments(active));

            join(request, group, topic, "member-2", everyone, active);
            join(request, group, topic, "member-3", everyone, active);
            require(Clients.await(() -> covered(active, partitions), wait), "three members share the partitions");
            result.put("three", assignments(active));

            produce(producer, topic, partitions, 0, records / 2);
            require(Clients.await(() -> read(everyone) >= records / 2, wait), "the first half read");
            active.remove(2).close();
            require(Clients.await(() -> covered(active, partitions), wait), "two members share the partitions");
            result.put("two", assignments(active));

            produce(producer, topic, partitions, records / 2, records);
            require(Clients.await(() -> read(everyone) >= records, wait), "every record read");
            result.put("read", readBy(everyone));

            ConsumerGroupDescription description =
                    admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            result.put("description", describe(description));
            Map<String, Long> committed = new TreeMap<>();
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                    .forEach((tp, offset) -> committed.put(Clients.name(tp), offset.offset()));
            result.put("committed", committed);
            List<TopicPartition> all = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                all.add(new TopicPartition(topic, p));
            }
            try (KafkaConsumer<String, String> reader = consumer(request, Map.of())) {
                result.put("end_offsets", Clients.byName(reader.endOffsets(all)));
            }
            result.put("commit_failures", everyone.stream().mapToInt(m -> m.commitFailures.get()).sum());
        } finally {
            for (Member member : everyone) {
                member.close();
            }
        }
        return result;
    }

    private static void join(JsonNode request, String group, String topic, String name,
            List<Member> everyone, List<Member> active) {
        Member member = Member.start(request, group, topic, name);
        everyone.add(member);
        active.add(member);
    }

    private static void require(boolean condition, String what) {
        if (!condition) {
            throw new IllegalStateException("timed out waiting until " + what);
        }
    }

    private static void produce(KafkaProducer<String, String> producer, String topic, int partitions, int from, int to) {
        for (int i = from; i < to; i++) {
            producer.send(new ProducerRecord<>(topic, i % partitions, null, "r" + i));
        }
        producer.flush();
    }

    /** Every partition owned by exactly one member, and every member owns one. */
    private static boolean covered(List<Member> members, int partitions) {
        Set<TopicPartition> owned = new java.util.HashSet<>();
        int total = 0;
        for (Member member : members) {
            Set<TopicPartition> mine = member.assignment();
            if (mine.isEmpty()) {
                return false;
            }
            owned.addAll(mine);
            total += mine.size();
        }
        return owned.size() == partitions && total == partitions;
    }

    private static int read(List<Member> members) {
        return members.stream().mapToInt(Member::readCount).sum();
    }

    private static Map<String, List<String>> assignments(List<Member> members) {
        Map<String, List<String>> assigned = new TreeMap<>();
        members.forEach(m -> assigned.put(m.name, Clients.names(m.assignment())));
        return assigned;
    }

    private static Map<String, List<String>> readBy(List<Member> members) {
        Map<String, List<String>> read = new TreeMap<>();
        members.forEach(m -> read.put(m.name, m.values()));
        return read;
    }

    static Map<String, Object> describe(ConsumerGroupDescription description) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("state", description.groupState().name());
        out.put("type", description.type().name());
        out.put("assignor", description.partitionAssignor());
        out.put("coordinator", description.coordinator().id());
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription member : description.members()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("client_id", member.clientId());
            m.put("member_id", member.consumerId());
            m.put("host", member.host());
            m.put("assignment", Clients.names(member.assignment().topicPartitions()));
            members.add(m);
        }
        members.sort((a, b) -> String.valueOf(a.get("client_id")).compareTo(String.valueOf(b.get("client_id"))));
        out.put("members", members);
        return out;
    }

    /** One member: its own KafkaConsumer polled by its own thread until closed. */
    private static final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final AtomicInteger commitFailures = new AtomicInteger();
        private final KafkaConsumer<String, String> consumer;
        private final Thread thread;
        private final Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        private final List<String> values = new ArrayList<>();
        private volatile Set<TopicPartition> assignment = Set.of();
        private volatile boolean closing;
        private volatile Throwable failure;

        private Member(JsonNode request, String group, String name) {
            this.name = name;
            Map<String, Object> config = new HashMap<>(Map.of(
                    ConsumerConfig.GROUP_ID_CONFIG, group,
                    ConsumerConfig.CLIENT_ID_CONFIG, name,
                    ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"));
            // The consumer protocol (KIP-848) takes its session and heartbeat from the broker:
            // the consumer refuses these two when group.protocol=consumer.
            if (!"consumer".equals(request.path("props").path("group.protocol").asText())) {
                config.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
                config.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            }
            this.consumer = consumer(request, config);
            this.thread = new Thread(this, name);
        }

        static Member start(JsonNode request, String group, String topic, String name) {
            Member member = new Member(request, group, name);
            member.consumer.subscribe(List.of(topic), member);
            member.thread.start();
            return member;
        }

        @Override
        public void run() {
            try {
                while (!closing) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
                        synchronized (values) {
                            values.add(record.value());
                        }
                        processed.put(new TopicPartition(record.topic(), record.partition()),
                                new OffsetAndMetadata(record.offset() + 1));
                    }
                    commitProcessed();
                }
                commitProcessed();
            } catch (Throwable e) {
                failure = e;
                e.printStackTrace();
            } finally {
                consumer.close();
            }
        }

        /** Commits what was processed; a commit refused by a rebalance is retried in onPartitionsRevoked. */
        private void commitProcessed() {
            if (processed.isEmpty()) {
                return;
            }
            try {
                consumer.commitSync(processed);
                processed.clear();
            } catch (KafkaException e) {
                commitFailures.incrementAndGet();
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            commitProcessed();
            processed.clear();
            Set<TopicPartition> kept = new java.util.HashSet<>(assignment);
            kept.removeAll(partitions);
            assignment = Set.copyOf(kept);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assignment = Set.copyOf(consumer.assignment());
        }

        Set<TopicPartition> assignment() {
            if (failure != null) {
                throw new IllegalStateException(name + " failed", failure);
            }
            return assignment;
        }

        int readCount() {
            synchronized (values) {
                return values.size();
            }
        }

        List<String> values() {
            synchronized (values) {
                return new ArrayList<>(values);
            }
        }

        void close() throws InterruptedException {
            closing = true;
            thread.join(30_000);
        }
    }

    /**
     * Positions by seek on partition 0 of `topic`, which holds `records` records "s0", "s1",
     * ... with timestamps `base`, `base`+1000, ...: seek(5) then poll, seekToBeginning,
     * seekToEnd, offsetsForTimes(`base`+3500); then a commit of offset 7 in `group`, which a
     * new member of the group starts from.
     */
    static Object seek(JsonNode request, Harness.Events events) throws Exception {
        String topic = request.get("topic").asText();
        String group = request.get("group").asText();
        int records = request.get("records").asInt();
        long base = request.get("base").asLong();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                Clients.props(request, Map.of()), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, 0, base + 1000L * i, null, "s" + i));
            }
            producer.flush();
        }
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> consumer = consumer(request, Map.of(
                ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"))) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 5);
            List<ConsumerRecord<String, String>> got = List.of();
            long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
            while (got.isEmpty() && System.nanoTime() < deadline) {
                got = consumer.poll(Duration.ofMillis(200)).records(tp);
            }
            result.put("after_seek_5", List.of(got.get(0).offset(), got.get(0).value()));
            consumer.seekToBeginning(List.of(tp));
            result.put("beginning", consumer.position(tp));
            consumer.seekToEnd(List.of(tp));
            result.put("end", consumer.position(tp));
            OffsetAndTimestamp found = consumer.offsetsForTimes(Map.of(tp, base + 3500)).get(tp);
            result.put("for_time", List.of(found.offset(), found.timestamp()));
            consumer.commitSync(Map.of(tp, new OffsetAndMetadata(7, "seven")));
            OffsetAndMetadata committed = consumer.committed(Set.of(tp)).get(tp);
            result.put("committed", List.of(committed.offset(), committed.metadata()));
        }
        try (KafkaConsumer<String, String> next = consumer(request, Map.of(
                ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"))) {
            next.assign(List.of(tp));
            result.put("new_member_position", next.position(tp));
        }
        return result;
    }
}
