package dev.ksmon.assignor;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads from the compacted topic the ksmon job publishes them to (key {@code <cluster>/<application id>},
 * value a loads record). Each call reads the whole topic, from its beginning to the end offsets it had
 * when the read started, with a fresh consumer that is closed afterwards; the whole read, from asking
 * for the topic's partitions to the last poll, fits in a time budget. Only the group leader assigns,
 * so only it reads, once per rebalance.
 *
 * <p>Empty when the topic holds no record for the key (or its latest is a tombstone). A missing
 * topic, a read that does not reach the end within the budget, brokers that do not answer, any other
 * Kafka error and a malformed latest record are thrown as {@link IllegalStateException} with a
 * one-line message naming the topic; the assignor falls back on it.
 */
public final class TopicTaskLoads implements TaskLoads {

    private static final Logger LOG = LoggerFactory.getLogger(TopicTaskLoads.class);

    private final String topic;
    private final String cluster;
    private final Supplier<Consumer<String, String>> consumers;
    private final Duration budget;
    private final Clock clock;

    /**
     * @param consumerConfig the settings of the consumer each read creates (bootstrap servers,
     *                       security, String deserializers, no group id, no auto commit)
     */
    public TopicTaskLoads(String topic, String cluster, Map<String, Object> consumerConfig, Duration budget) {
        this(topic, cluster, consumerFactory(consumerConfig), budget, Clock.systemUTC());
    }

    /** For tests: {@code consumers} hands out the consumer of each read; {@code clock} times the budget. */
    TopicTaskLoads(String topic, String cluster, Supplier<Consumer<String, String>> consumers, Duration budget, Clock clock) {
        this.topic = topic;
        this.cluster = cluster;
        this.consumers = consumers;
        this.budget = budget;
        this.clock = clock;
    }

    private static Supplier<Consumer<String, String>> consumerFactory(Map<String, Object> consumerConfig) {
        Map<String, Object> settings = new HashMap<>(consumerConfig);
        return () -> new KafkaConsumer<>(settings);
    }

    @Override
    public Optional<Measurement> latest(String applicationId) {
        String key = LoadsRecord.key(cluster, applicationId);
        long deadline = clock.millis() + budget.toMillis();
        Consumer<String, String> consumer;
        try {
            consumer = consumers.get();
        } catch (KafkaException e) {
            throw failure("cannot be read: " + describe(e));
        }
        String value;
        try {
            value = latestValue(consumer, key, deadline);
        } catch (TimeoutException e) {
            throw failure("not read to its end within " + budget.toMillis() + " ms");
        } catch (KafkaException e) {
            throw failure("cannot be read: " + describe(e));
        } finally {
            close(consumer);
        }
        if (value == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(LoadsRecord.parse(value));
        } catch (LoadsRecord.MalformedException e) {
            throw new IllegalStateException("loads topic " + topic + ", key " + key + ": " + e.getMessage(), e);
        }
    }

    /** The value of the last record for {@code key} from the beginning to the end of the topic; null if none. */
    private String latestValue(Consumer<String, String> consumer, String key, long deadline) {
        List<PartitionInfo> infos;
        try {
            infos = consumer.partitionsFor(topic, remaining(deadline));
        } catch (TimeoutException e) {
            throw failure("not reached: no broker answered within " + budget.toMillis() + " ms");
        }
        if (infos == null || infos.isEmpty()) {
            throw failure("does not exist");
        }
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo info : infos) {
            partitions.add(new TopicPartition(info.topic(), info.partition()));
        }
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, remaining(deadline));

        String value = null;
        while (!atEnd(consumer, partitions, ends, deadline)) {
            if (clock.millis() >= deadline) {
                throw failure("not read to its end within " + budget.toMillis() + " ms");
            }
            for (ConsumerRecord<String, String> record : consumer.poll(remaining(deadline))) {
                // Records for one key share a partition, so the last one polled is the latest.
                if (key.equals(record.key())) {
                    value = record.value();
                }
            }
        }
        return value;
    }

    /** Whether every partition's position has reached the end offset it had when the read started. */
    private boolean atEnd(Consumer<String, String> consumer, List<TopicPartition> partitions,
                          Map<TopicPartition, Long> ends, long deadline) {
        for (TopicPartition p : partitions) {
            long end = ends.getOrDefault(p, 0L);
            if (consumer.position(p, remaining(deadline)) < end) {
                return false;
            }
        }
        return true;
    }

    private Duration remaining(long deadline) {
        return Duration.ofMillis(Math.max(0, deadline - clock.millis()));
    }

    private IllegalStateException failure(String what) {
        return new IllegalStateException("loads topic " + topic + " " + what);
    }

    /** An exception and its causes on one line: "TopicAuthorizationException: Not authorized ...". */
    private static String describe(Throwable e) {
        StringBuilder out = new StringBuilder();
        String last = null;
        int depth = 0;
        for (Throwable t = e; t != null && depth < 5; t = t.getCause(), depth++) {
            String message = t.getMessage() == null ? "" : t.getMessage().replaceAll("\\s+", " ").trim();
            if (message.equals(last)) {
                continue;
            }
            out.append(out.length() == 0 ? "" : "; ").append(t.getClass().getSimpleName());
            if (!message.isEmpty()) {
                out.append(": ").append(message);
            }
            last = message;
        }
        return out.toString();
    }

    private static void close(Consumer<String, String> consumer) {
        try {
            // Without a group there is nothing to commit or leave, so this returns at once.
            // (Not close(CloseOptions): that needs kafka-clients 4.1, and apps on 3.8+ run this.)
            consumer.close();
        } catch (RuntimeException e) {
            LOG.debug("closing the loads consumer failed", e);
        }
    }
}
