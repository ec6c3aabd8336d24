package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ProducerState;
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

/**
 * Transactions as the Java producer runs them when the cluster finalizes
 * transaction.version 2 (KIP-890 part 2): no AddPartitionsToTxn or AddOffsetsToTxn, an
 * epoch bump at every commit or abort.
 */
final class TransactionsV2Ops {
    private TransactionsV2Ops() {}

    static void register(Map<String, Harness.Operation> operations) {
        operations.put("transactions_v2", TransactionsV2Ops::transactions);
    }

    /**
     * One transactional producer runs the transactions of `outcomes` ("commit" or "abort")
     * on partition 0 of `topic`: `records` values "N-i" for the N-th transaction, and offset N
     * for `group`. After each, the producer epoch partition 0 holds for it (DescribeProducers).
     * Then a read_committed consumer reads the partition. Answers the epochs, the values read
     * and the group's committed offsets.
     */
    static Object transactions(JsonNode request, Harness.Events events) throws Exception {
        String topic = request.get("topic").asText();
        String group = request.get("group").asText();
        int records = request.path("records").asInt(5);
        List<String> outcomes = Clients.strings(request.get("outcomes"));
        TopicPartition partition = new TopicPartition(topic, 0);
        Properties props = Clients.props(request, Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, request.get("transactional_id").asText()));
        List<Integer> epochs = new ArrayList<>();
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaProducer<String, String> producer =
                        new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
                Admin admin = Admin.create(Clients.props(request, Map.of()))) {
            producer.initTransactions();
            for (int n = 0; n < outcomes.size(); n++) {
                producer.beginTransaction();
                for (int i = 0; i < records; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, "k", n + "-" + i)).get();
                }
                producer.sendOffsetsToTransaction(
                        Map.of(partition, new OffsetAndMetadata(n)), new ConsumerGroupMetadata(group));
                if (outcomes.get(n).equals("commit")) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                epochs.add(epochAt(admin, partition));
            }
        }
        result.put("epochs", epochs);
        result.put("values", readCommitted(request, partition));
        Map<String, Long> committed = new LinkedHashMap<>();
        try (Admin admin = Admin.create(Clients.props(request, Map.of()))) {
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                    .forEach((tp, offset) -> committed.put(Clients.name(tp), offset.offset()));
        }
        result.put("offsets", committed);
        return result;
    }

    /** The producer epoch the partition holds once its marker is written (the LSO caught up). */
    private static int epochAt(Admin admin, TopicPartition partition) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            DescribeProducersResult.PartitionProducerState state =
                    admin.describeProducers(List.of(partition)).partitionResult(partition).get();
            List<ProducerState> active = state.activeProducers();
            if (active.size() == 1 && active.get(0).currentTransactionStartOffset().isEmpty()) {
                return active.get(0).producerEpoch();
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the transaction's marker never came: " + active);
            }
            Thread.sleep(50);
        }
    }

    private static List<String> readCommitted(JsonNode request, TopicPartition partition) {
        Properties props = Clients.props(request, Map.of(
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"));
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumer.position(partition) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
        }
        return values;
    }
}
