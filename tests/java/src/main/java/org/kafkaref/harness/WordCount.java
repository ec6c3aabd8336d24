package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * The word count of Kafka Streams' quickstart, with exactly-once processing: lines from
 * `input`, split into lowercase words, counted per word in a state store (a repartition
 * topic between the split and the count, a compacted changelog behind the store), every new
 * count sent to `output` (word -> count as a long).
 *
 * <p>processing.guarantee=exactly_once_v2 (KIP-447): each stream thread has one
 * transactional producer; the records it sends, the changelog writes and the input offsets
 * commit or abort together. The record cache is off, so every input word yields one output
 * record: read read_committed, a word's counts are 1, 2, 3, ... whatever crashes happened.
 * Processed records of the repartition topic are deleted every second (DeleteRecords).
 * The state directory is kept across restarts, so a restarted instance keeps its process id
 * (and its transactional ids). Each state change is sent to the test as an event.
 */
final class WordCount {
    private WordCount() {}

    static void run(JsonNode args) throws InterruptedException {
        Map<String, Object> defaults = new HashMap<>();
        defaults.put(StreamsConfig.APPLICATION_ID_CONFIG, args.get("application_id").asText());
        defaults.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        defaults.put(StreamsConfig.STATE_DIR_CONFIG, args.get("state_dir").asText());
        defaults.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        defaults.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        // Records of the repartition topic that are processed and committed are deleted
        // (DeleteRecords) every second rather than every 30.
        defaults.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, "1000");
        defaults.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        defaults.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1000");
        var props = Clients.props(args, defaults);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args.get("input").asText(), Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(args.get("output").asText(), Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            Harness.emit(Map.of("state", now.name()));
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        stopped.await();
        System.exit(streams.state() == KafkaStreams.State.NOT_RUNNING ? 0 : 1);
    }
}
