package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/** The Java producer: idempotent sends, and transactions committed, aborted and fenced. */
final class ProducerOps {
    private ProducerOps() {}

    static void register(Map<String, Harness.Operation> operations) {
        operations.put("produce", ProducerOps::produce);
        operations.put("transactions", ProducerOps::transactions);
    }

    /**
     * Sends `count` records to `topic`: values "PREFIX0", "PREFIX1", ..., keys "k0".."k{keys-1}"
     * in turn (so each key's values increase), with the producer configs of `props` over
     * acks=all and idempotence. Every `event_every` acknowledgements an event says how many.
     * Answers how many were acknowledged, the first errors, each partition's offsets, and
     * the producer metrics (group producer-metrics) named in `metrics`.
     */
    static Object produce(JsonNode request, Harness.Events events) {
        String topic = request.get("topic").asText();
        int count = request.get("count").asInt();
        int keys = request.path("keys").asInt(10);
        int every = request.path("event_every").asInt(0);
        String prefix = request.path("prefix").asText("");
        Properties props = Clients.props(request, Map.of(
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
                ProducerConfig.LINGER_MS_CONFIG, "5"));
        AtomicInteger acked = new AtomicInteger();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        Map<Integer, List<Long>> offsets = new TreeMap<>();
        Map<String, Object> metrics = new TreeMap<>();
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                ProducerRecord<String, String> record =
                        new ProducerRecord<>(topic, "k" + (i % keys), prefix + i);
                producer.send(record, (metadata, exception) -> {
                    if (exception != null) {
                        errors.add(Clients.error(exception));
                        return;
                    }
                    synchronized (offsets) {
                        offsets.computeIfAbsent(metadata.partition(), p -> new ArrayList<>())
                                .add(metadata.offset());
                    }
                    int done = acked.incrementAndGet();
                    if (every > 0 && done % every == 0) {
                        events.emit(Map.of("acked", done));
                    }
                });
            }
            producer.flush();
            List<String> wanted = Clients.strings(request.path("metrics"));
            producer.metrics().forEach((name, metric) -> {
                if (name.group().equals("producer-metrics") && wanted.contains(name.name())) {
                    metrics.put(name.name(), metric.metricValue());
                }
            });
        }
        Map<String, Object> partitions = new TreeMap<>();
        offsets.forEach((partition, list) -> {
            list.sort(null);
            partitions.put(String.valueOf(partition), Map.of(
                    "count", list.size(), "first", list.get(0), "last", list.get(list.size() - 1)));
        });
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("acked", acked.get());
        result.put("errors", errors.stream().limit(10).toList());
        result.put("partitions", partitions);
        result.put("metrics", metrics);
        return result;
    }

    /**
     * One transactional producer over the partitions of `topic`, in steps:
     * <ol>
     * <li>"c1-N" records, committed;
     * <li>"a-N" records and offset 100 of partition 0 for group `group`, aborted;
     * <li>"c2-N" records and offset 7 for `group`, left open while a read_committed and a
     *     read_uncommitted consumer look at the end offsets and read; then committed;
     * <li>a second producer with the same transactional.id starts: the first one's next
     *     transaction fails (fenced); the second commits "c3-N".
     * </ol>
     * Answers what each step observed; the test reads the topic afterwards.
     */
    static Object transactions(JsonNode request, Harness.Events events) throws Exception {
        String topic = request.get("topic").asText();
        String group = request.get("group").asText();
        int perTxn = request.path("records").asInt(10);
        Properties props = Clients.props(request, Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, request.get("transactional_id").asText(),
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "20000"));
        Map<String, Object> result = new LinkedHashMap<>();
        TopicPartition first = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> producer = producer(props);
                Admin admin = Admin.create(Clients.props(request, Map.of()))) {
            producer.initTransactions();

            producer.beginTransaction();
            sendAll(producer, topic, "c1-", perTxn);
            producer.commitTransaction();

            producer.beginTransaction();
            sendAll(producer, topic, "a-", perTxn);
            producer.sendOffsetsToTransaction(
                    Map.of(first, new OffsetAndMetadata(100)), new ConsumerGroupMetadata(group));
            producer.flush();
            producer.abortTransaction();
            result.put("offsets_after_abort", committed(admin, group));

            producer.beginTransaction();
            sendAll(producer, topic, "c2-", perTxn);
            producer.sendOffsetsToTransaction(
                    Map.of(first, new OffsetAndMetadata(7)), new ConsumerGroupMetadata(group));
            producer.flush();
            result.put("while_open", whileOpen(request, topic));
            result.put("offsets_while_open", committed(admin, group));
            producer.commitTransaction();
            result.put("offsets_after_commit", committed(admin, group));

            try (KafkaProducer<String, String> successor = producer(props)) {
                successor.initTransactions();
                String fenced = "not fenced";
                try {
                    producer.beginTransaction();
                    sendAll(producer, topic, "zombie-", perTxn);
                    producer.commitTransaction();
                } catch (Exception e) {
                    fenced = (e instanceof ExecutionException ? e.getCause() : e).getClass().getName();
                }
                result.put("fenced", fenced);
                successor.beginTransaction();
                sendAll(successor, topic, "c3-", perTxn);
                successor.commitTransaction();
            }
        }
        return result;
    }

    private static KafkaProducer<String, String> producer(Properties props) {
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    /** `count` records PREFIX0.. keyed k0, k1 in turn (two keys: both partitions of two). */
    private static void sendAll(KafkaProducer<String, String> producer, String topic, String prefix, int count)
            throws Exception {
        List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sent.add(producer.send(new ProducerRecord<>(topic, i % 2, "k" + (i % 2), prefix + i)));
        }
        producer.flush();
        for (java.util.concurrent.Future<?> future : sent) {
            future.get();
        }
    }

    private static Map<String, Long> committed(Admin admin, String group) throws Exception {
        Map<String, Long> offsets = new TreeMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .forEach((tp, offset) -> {
                    if (offset != null) {
                        offsets.put(Clients.name(tp), offset.offset());
                    }
                });
        return offsets;
    }

    /** With a transaction open: the end offsets and the values each isolation level reads. */
    private static Map<String, Object> whileOpen(JsonNode request, String topic) {
        Map<String, Object> seen = new LinkedHashMap<>();
        for (String isolation : List.of("read_committed", "read_uncommitted")) {
            Properties props = Clients.props(request, Map.of(
                    ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation,
                    ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"));
            try (KafkaConsumer<String, String> consumer =
                    new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                List<TopicPartition> partitions = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
                consumer.assign(partitions);
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
                List<String> values = new ArrayList<>();
                for (ConsumerRecord<String, String> record : ConsumerOps.readToEnd(consumer, end)) {
                    values.add(record.value());
                }
                // A little longer: a read_committed consumer must not read past the open transaction.
                consumer.poll(Duration.ofMillis(500)).forEach(record -> values.add(record.value()));
                seen.put(isolation, Map.of("end_offsets", Clients.byName(end), "values", values));
            }
        }
        return seen;
    }
}
