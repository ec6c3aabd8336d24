package org.kafkaref.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

/**
 * Apache Kafka's own Java clients, driven by kafka-ref's tests (tests/java_clients/).
 *
 * <p>The harness is a set of named operations (the producer's, the consumer's, the admin
 * client's: {@link ProducerOps}, {@link ConsumerOps}, {@link AdminOps}); each takes a JSON
 * request and answers with what the clients observed, as JSON. The Python tests decide what
 * is right: the harness reports, it does not judge. It runs in one of three modes:
 *
 * <pre>
 *   serve            one JSON request per line on stdin, one JSON answer per line on stdout
 *   run REQUEST      one request (JSON), its answer; exit code 0 when it succeeded
 *   wordcount ARGS   the Kafka Streams word count ({@link WordCount}) until it is killed
 * </pre>
 *
 * <p>A request is {@code {"op": NAME, ...arguments}}; the answer {@code {"ok": true,
 * "result": ...}} or {@code {"ok": false, "error": CLASS, "message": ...}}. An operation may
 * send events before its answer ({@code {"event": ...}}), so that a test can act while it
 * runs (restart the broker once half the records are acknowledged). Standard output carries
 * nothing else: the clients log to standard error.
 */
public final class Harness {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = System.out;

    /** One operation: its request in, what it observed out (Maps, Lists, numbers, strings). */
    interface Operation {
        Object run(JsonNode request, Events events) throws Exception;
    }

    /** Lines sent to the test while an operation runs. */
    interface Events {
        void emit(Map<String, Object> event);
    }

    static final Map<String, Operation> OPERATIONS = new TreeMap<>();

    static {
        ProducerOps.register(OPERATIONS);
        ConsumerOps.register(OPERATIONS);
        AdminOps.register(OPERATIONS);
        TransactionsV2Ops.register(OPERATIONS);
        ShareConsumerOps.register(OPERATIONS);
        ShareGroupOps.register(OPERATIONS);
    }

    private Harness() {}

    public static void main(String[] args) throws Exception {
        // Standard output is the answers' channel: nothing else may print there.
        System.setOut(System.err);
        if (args.length == 1 && args[0].equals("serve")) {
            serve();
        } else if (args.length == 2 && args[0].equals("run")) {
            ObjectNode answer = answer(JSON.readTree(args[1]));
            System.exit(answer.get("ok").asBoolean() ? 0 : 1);
        } else if (args.length == 2 && args[0].equals("wordcount")) {
            WordCount.run(JSON.readTree(args[1]));
        } else {
            System.err.println("usage: Harness serve | run REQUEST | wordcount ARGS");
            System.exit(2);
        }
    }

    private static void serve() throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (!line.isBlank()) {
                answer(JSON.readTree(line));
            }
        }
    }

    private static ObjectNode answer(JsonNode request) {
        ObjectNode answer = JSON.createObjectNode();
        String name = request.path("op").asText();
        Operation operation = OPERATIONS.get(name);
        try {
            if (operation == null) {
                throw new IllegalArgumentException(
                        "no operation " + name + "; known: " + OPERATIONS.keySet());
            }
            Object result = operation.run(request, Harness::emit);
            answer.put("ok", true);
            answer.set("result", JSON.valueToTree(result));
        } catch (Exception e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            answer.put("ok", false);
            answer.put("error", cause.getClass().getName());
            answer.put("message", String.valueOf(cause.getMessage()));
            cause.printStackTrace();
        }
        print(answer);
        return answer;
    }

    static void emit(Map<String, Object> event) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        print(line);
    }

    private static synchronized void print(Object line) {
        try {
            OUT.println(JSON.writeValueAsString(line));
            OUT.flush();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
