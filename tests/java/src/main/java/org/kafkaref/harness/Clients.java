package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;

/** What every operation shares: client properties, partition names, waiting. */
final class Clients {
    private Clients() {}

    /**
     * The client's properties: `defaults`, then the request's `props` (any Kafka client
     * config, as strings) over them, and `bootstrap.servers` from the request's `bootstrap`.
     */
    static Properties props(JsonNode request, Map<String, Object> defaults) {
        Properties props = new Properties();
        props.putAll(defaults);
        request.path("props").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
        props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, request.get("bootstrap").asText());
        return props;
    }

    /** "topic-3" for TopicPartition(topic, 3): the tests' name of a partition. */
    static String name(TopicPartition tp) {
        return tp.topic() + "-" + tp.partition();
    }

    /** The partition named "topic-3" (a topic name may itself hold dashes). */
    static TopicPartition partition(String name) {
        int dash = name.lastIndexOf('-');
        return new TopicPartition(name.substring(0, dash), Integer.parseInt(name.substring(dash + 1)));
    }

    static List<String> names(Collection<TopicPartition> partitions) {
        List<String> names = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            names.add(name(tp));
        }
        names.sort(null);
        return names;
    }

    static Map<String, Long> byName(Map<TopicPartition, Long> offsets) {
        Map<String, Long> named = new TreeMap<>();
        offsets.forEach((tp, offset) -> named.put(name(tp), offset));
        return named;
    }

    static List<String> strings(JsonNode array) {
        List<String> strings = new ArrayList<>();
        array.forEach(node -> strings.add(node.asText()));
        return strings;
    }

    /** Waits until `condition` holds; false if `timeout` passed first. */
    static boolean await(BooleanSupplier condition, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }

    static String error(Throwable e) {
        Throwable cause = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
}
