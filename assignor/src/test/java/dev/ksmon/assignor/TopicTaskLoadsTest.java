package dev.ksmon.assignor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.streams.processor.TaskId;
import org.junit.jupiter.api.Test;

class TopicTaskLoadsTest {

    static final String TOPIC = "ksmon.task-loads";
    static final Duration BUDGET = Duration.ofMillis(2000);

    static String value(String app, String measuredAt, double load) {
        return "{\"schema_version\": 1, \"application_id\": \"" + app + "\", \"measured_at\": \"" + measuredAt + "\","
            + " \"tasks\": {\"0_0\": " + load + "}}";
    }

    static ConsumerRecord<String, String> record(int partition, long offset, String key, String value) {
        return new ConsumerRecord<>(TOPIC, partition, offset, key, value);
    }

    /** A topic of {@code partitions} partitions holding {@code records}; each partition ends after its last record. */
    static MockConsumer<String, String> topic(int partitions, List<ConsumerRecord<String, String>> records) {
        MockConsumer<String, String> consumer = new MockConsumer<>("earliest");
        List<PartitionInfo> infos = new ArrayList<>();
        Map<TopicPartition, Long> beginnings = new HashMap<>();
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            infos.add(new PartitionInfo(TOPIC, p, null, null, null));
            beginnings.put(new TopicPartition(TOPIC, p), 0L);
            ends.put(new TopicPartition(TOPIC, p), 0L);
        }
        for (ConsumerRecord<String, String> r : records) {
            ends.merge(new TopicPartition(TOPIC, r.partition()), r.offset() + 1, Math::max);
        }
        consumer.updatePartitions(TOPIC, infos);
        consumer.updateBeginningOffsets(beginnings);
        consumer.updateEndOffsets(ends);
        // Records can only be added once the reader has assigned the partitions: at its first poll.
        consumer.schedulePollTask(() -> records.forEach(consumer::addRecord));
        return consumer;
    }

    static TopicTaskLoads reading(Consumer<String, String> consumer) {
        return new TopicTaskLoads(TOPIC, "prod", () -> consumer, BUDGET, Clock.systemUTC());
    }

    @Test
    void theLatestRecordForTheKeyWins() {
        MockConsumer<String, String> consumer = topic(2, List.of(
            record(0, 0, "prod/app", "{\"schema_version\": 7}"),
            record(0, 1, "prod/app", value("app", "2026-01-01T00:00:00Z", 1.0)),
            record(1, 0, "prod/other", value("other", "2026-01-01T00:02:00Z", 9.0)),
            record(0, 2, "prod/app", value("app", "2026-01-01T00:01:00Z", 2.0))));
        Optional<TaskLoads.Measurement> m = reading(consumer).latest("app");
        assertTrue(m.isPresent());
        assertEquals(Instant.parse("2026-01-01T00:01:00Z"), m.get().measuredAt());
        assertEquals(Map.of(new TaskId(0, 0), 2.0), m.get().loads(), "an older, even malformed, record does not count");
        assertTrue(consumer.closed(), "the consumer is closed after the read");
    }

    @Test
    void aTombstoneRemovesTheLoads() {
        MockConsumer<String, String> consumer = topic(1, List.of(
            record(0, 0, "prod/app", value("app", "2026-01-01T00:00:00Z", 1.0)),
            record(0, 1, "prod/app", null)));
        assertEquals(Optional.empty(), reading(consumer).latest("app"));
    }

    @Test
    void otherApplicationsAndClustersAreIgnored() {
        MockConsumer<String, String> consumer = topic(3, List.of(
            record(0, 0, "prod/other", value("other", "2026-01-01T00:00:00Z", 1.0)),
            record(1, 0, "staging/app", value("app", "2026-01-01T00:00:00Z", 1.0)),
            record(2, 0, null, value("app", "2026-01-01T00:00:00Z", 1.0))));
        assertEquals(Optional.empty(), reading(consumer).latest("app"));
    }

    @Test
    void anEmptyTopicGivesNoLoads() {
        MockConsumer<String, String> consumer = topic(4, List.of());
        assertEquals(Optional.empty(), reading(consumer).latest("app"));
        assertTrue(consumer.closed());
    }

    @Test
    void eachReadUsesAFreshConsumerAndClosesIt() {
        List<MockConsumer<String, String>> made = new ArrayList<>();
        TopicTaskLoads loads = new TopicTaskLoads(TOPIC, "prod", () -> {
            MockConsumer<String, String> c = topic(1, List.of(record(0, 0, "prod/app", value("app", "2026-01-01T00:00:00Z", 3.0))));
            made.add(c);
            return c;
        }, BUDGET, Clock.systemUTC());
        assertTrue(loads.latest("app").isPresent());
        assertTrue(loads.latest("app").isPresent());
        assertEquals(2, made.size());
        assertTrue(made.stream().allMatch(MockConsumer::closed));
    }

    @Test
    void aMalformedLatestRecordIsAClearError() {
        MockConsumer<String, String> consumer = topic(1, List.of(
            record(0, 0, "prod/app", value("app", "2026-01-01T00:00:00Z", 1.0)),
            record(0, 1, "prod/app", "{\"schema_version\": 2}")));
        Exception e = assertThrows(IllegalStateException.class, () -> reading(consumer).latest("app"));
        assertEquals("loads topic ksmon.task-loads, key prod/app: loads record has schema_version 2, expected 1", e.getMessage());
    }

    @Test
    void aMissingTopicIsAClearError() {
        MockConsumer<String, String> consumer = new MockConsumer<>("earliest");
        Exception e = assertThrows(IllegalStateException.class, () -> reading(consumer).latest("app"));
        assertEquals("loads topic ksmon.task-loads does not exist", e.getMessage());
        assertTrue(consumer.closed());
    }

    @Test
    void aReadThatCannotReachTheEndInTimeIsAClearError() {
        // The partition claims 10 records but only 2 ever arrive.
        MockConsumer<String, String> consumer = topic(1, List.of(
            record(0, 0, "prod/app", value("app", "2026-01-01T00:00:00Z", 1.0)),
            record(0, 1, "prod/other", value("other", "2026-01-01T00:00:00Z", 1.0))));
        consumer.updateEndOffsets(Map.of(new TopicPartition(TOPIC, 0), 10L));
        TopicTaskLoads loads = new TopicTaskLoads(TOPIC, "prod", () -> consumer, BUDGET, ManualClock.ticking(Duration.ofMillis(100)));
        Exception e = assertThrows(IllegalStateException.class, () -> loads.latest("app"));
        assertEquals("loads topic ksmon.task-loads not read to its end within 2000 ms", e.getMessage());
        assertTrue(consumer.closed());
    }

    @Test
    void brokersThatDoNotAnswerAreAClearError() {
        MockConsumer<String, String> consumer = new MockConsumer<>("earliest") {
            @Override
            public List<PartitionInfo> partitionsFor(String topic, Duration timeout) {
                throw new TimeoutException("Timeout expired while fetching topic metadata");
            }
        };
        Exception e = assertThrows(IllegalStateException.class, () -> reading(consumer).latest("app"));
        assertEquals("loads topic ksmon.task-loads not reached: no broker answered within 2000 ms", e.getMessage());
    }

    @Test
    void otherKafkaErrorsAreNamedOnOneLine() {
        MockConsumer<String, String> consumer = topic(1, List.of(record(0, 0, "prod/app", "x")));
        consumer.setPollException(new TopicAuthorizationException(Set.of(TOPIC)));
        Exception e = assertThrows(IllegalStateException.class, () -> reading(consumer).latest("app"));
        assertTrue(e.getMessage().startsWith("loads topic ksmon.task-loads cannot be read: TopicAuthorizationException"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    // The assignor with a topic: it places by the topic's loads, and falls back when the topic fails.

    static LoadAwareTaskAssignor assignor(TopicTaskLoads loads) {
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(loads, LoadAwareTaskAssignorTest.CLOCK);
        a.configure(Map.of("application.id", "app"));
        return a;
    }

    static String hotRecord() {
        return "{\"schema_version\": 1, \"application_id\": \"app\", \"measured_at\": \"2025-12-31T23:59:30Z\","
            + " \"tasks\": {\"0_0\": 90, \"0_1\": 80, \"0_2\": 5, \"0_3\": 5}}";
    }

    @Test
    void theAssignorPlacesByTheTopicsLoadsReadingItOnce() {
        List<MockConsumer<String, String>> made = new ArrayList<>();
        TopicTaskLoads loads = new TopicTaskLoads(TOPIC, "prod", () -> {
            MockConsumer<String, String> c = topic(1, List.of(record(0, 0, "prod/app", hotRecord())));
            made.add(c);
            return c;
        }, BUDGET, Clock.systemUTC());
        LoadAwareTaskAssignor a = assignor(loads);
        FakeState state = LoadAwareTaskAssignorTest.twoHotOnA(false);
        Map<String, String> placed = LoadAwareTaskAssignorTest.actives(state, a.assign(state));
        assertTrue(a.lastDecision().startsWith("load-aware"), a.lastDecision());
        assertNotEquals(placed.get("0_0"), placed.get("0_1"), a.lastDecision());
        assertEquals(1, made.size(), "one read per rebalance");
    }

    @Test
    void theAssignorFallsBackOnAMissingTopic() {
        LoadAwareTaskAssignor a = assignor(reading(new MockConsumer<>("earliest")));
        FakeState state = LoadAwareTaskAssignorTest.twoHotOnA(false);
        Validity.check(state, a.assign(state));
        assertEquals("fallback: cannot place by load: loads topic ksmon.task-loads does not exist", a.lastDecision());
    }

    @Test
    void theAssignorFallsBackOnATimeout() {
        MockConsumer<String, String> consumer = topic(1, List.of());
        consumer.updateEndOffsets(Map.of(new TopicPartition(TOPIC, 0), 3L));
        LoadAwareTaskAssignor a = assignor(new TopicTaskLoads(TOPIC, "prod", () -> consumer, BUDGET, ManualClock.ticking(Duration.ofMillis(500))));
        FakeState state = LoadAwareTaskAssignorTest.twoHotOnA(false);
        Validity.check(state, a.assign(state));
        assertEquals("fallback: cannot place by load: loads topic ksmon.task-loads not read to its end within 2000 ms", a.lastDecision());
    }

    @Test
    void anUnreachableBrokerFallsBackWithinTheBudget() {
        // A real KafkaConsumer, built from the configuration, against a port nothing listens on.
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(null, LoadAwareTaskAssignorTest.CLOCK);
        a.configure(Map.of(
            "application.id", "app",
            "bootstrap.servers", "127.0.0.1:1",
            LoadAwareTaskAssignor.LOADS_TOPIC_CONFIG, TOPIC,
            LoadAwareTaskAssignor.LOADS_CLUSTER_CONFIG, "prod",
            LoadAwareTaskAssignor.LOADS_READ_TIMEOUT_CONFIG, "300"));
        FakeState state = LoadAwareTaskAssignorTest.twoHotOnA(false);
        long start = System.nanoTime();
        Validity.check(state, a.assign(state));
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertEquals("fallback: cannot place by load: loads topic ksmon.task-loads not reached: no broker answered within 300 ms",
            a.lastDecision());
        assertTrue(tookMs < 10_000, "took " + tookMs + " ms");
    }

    // Configuration.

    static Map<String, Object> withTopic() {
        Map<String, Object> c = new HashMap<>();
        c.put("application.id", "app");
        c.put("bootstrap.servers", "broker:9092");
        c.put(LoadAwareTaskAssignor.LOADS_TOPIC_CONFIG, TOPIC);
        c.put(LoadAwareTaskAssignor.LOADS_CLUSTER_CONFIG, "prod");
        return c;
    }

    static ConfigException refused(Map<String, Object> configs) {
        return assertThrows(ConfigException.class, () -> new LoadAwareTaskAssignor().configure(configs));
    }

    @Test
    void theTopicNeedsTheCluster() {
        Map<String, Object> c = withTopic();
        c.remove(LoadAwareTaskAssignor.LOADS_CLUSTER_CONFIG);
        ConfigException e = refused(c);
        assertTrue(e.getMessage().contains(LoadAwareTaskAssignor.LOADS_CLUSTER_CONFIG), e.getMessage());
    }

    @Test
    void aFileAndATopicAreNotBothAllowed() {
        Map<String, Object> c = withTopic();
        c.put(LoadAwareTaskAssignor.LOADS_FILE_CONFIG, "/tmp/loads.json");
        ConfigException e = refused(c);
        assertTrue(e.getMessage().contains(LoadAwareTaskAssignor.LOADS_FILE_CONFIG)
            && e.getMessage().contains(LoadAwareTaskAssignor.LOADS_TOPIC_CONFIG), e.getMessage());
    }

    @Test
    void theReadTimeoutIsAWholeNumberAboveZero() {
        for (String bad : List.of("0", "-5", "1.5", "soon")) {
            Map<String, Object> c = withTopic();
            c.put(LoadAwareTaskAssignor.LOADS_READ_TIMEOUT_CONFIG, bad);
            ConfigException e = refused(c);
            assertTrue(e.getMessage().contains(LoadAwareTaskAssignor.LOADS_READ_TIMEOUT_CONFIG), e.getMessage());
        }
        Map<String, Object> c = withTopic();
        c.put(LoadAwareTaskAssignor.LOADS_READ_TIMEOUT_CONFIG, 5000);
        new LoadAwareTaskAssignor().configure(c);
    }

    @Test
    void theConsumerTakesTheApplicationsServersAndSecurity() {
        Password jaas = new Password("org.apache.kafka.common.security.plain.PlainLoginModule required;");
        Map<String, Object> c = withTopic();
        c.put("security.protocol", "SASL_SSL");
        c.put("sasl.mechanism", "PLAIN");
        c.put("sasl.jaas.config", jaas);
        c.put("ssl.truststore.location", "/etc/kafka/truststore.jks");
        c.put("group.id", "app");
        c.put("client.id", "app-StreamThread-1-consumer");
        c.put("max.poll.records", "1000");
        c.put("enable.auto.commit", "true");
        Map<String, Object> consumer = LoadAwareTaskAssignor.loadsConsumerConfig(c);
        assertEquals("broker:9092", consumer.get("bootstrap.servers"));
        assertEquals("SASL_SSL", consumer.get("security.protocol"));
        assertEquals("PLAIN", consumer.get("sasl.mechanism"));
        assertSame(jaas, consumer.get("sasl.jaas.config"), "a password is passed on as it is");
        assertEquals("/etc/kafka/truststore.jks", consumer.get("ssl.truststore.location"));
        assertEquals("app-ksmon-loads", consumer.get("client.id"));
        assertEquals("org.apache.kafka.common.serialization.StringDeserializer", consumer.get("key.deserializer"));
        assertEquals("org.apache.kafka.common.serialization.StringDeserializer", consumer.get("value.deserializer"));
        assertEquals("false", consumer.get("enable.auto.commit"));
        assertEquals("false", consumer.get("allow.auto.create.topics"));
        assertFalse(consumer.containsKey("group.id"), "no group");
        assertFalse(consumer.containsKey("max.poll.records"), "the application's other settings stay its own");
        assertFalse(consumer.keySet().stream().anyMatch(k -> k.startsWith("ksmon.")), consumer.toString());
    }

    @Test
    void theLoadsConsumersOwnSettingsWin() {
        Map<String, Object> c = withTopic();
        c.put("security.protocol", "SASL_SSL");
        c.put("sasl.mechanism", "PLAIN");
        String prefix = LoadAwareTaskAssignor.LOADS_CONSUMER_PREFIX;
        c.put(prefix + "bootstrap.servers", "other:9093");
        c.put(prefix + "sasl.mechanism", "SCRAM-SHA-512");
        c.put(prefix + "client.id", "loads-reader");
        c.put(prefix + "fetch.max.bytes", "1048576");
        // What the reader depends on cannot be overridden.
        c.put(prefix + "group.id", "someone");
        c.put(prefix + "value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        Map<String, Object> consumer = LoadAwareTaskAssignor.loadsConsumerConfig(c);
        assertEquals("other:9093", consumer.get("bootstrap.servers"));
        assertEquals("SASL_SSL", consumer.get("security.protocol"));
        assertEquals("SCRAM-SHA-512", consumer.get("sasl.mechanism"));
        assertEquals("loads-reader", consumer.get("client.id"));
        assertEquals("1048576", consumer.get("fetch.max.bytes"));
        assertFalse(consumer.containsKey("group.id"));
        assertEquals("org.apache.kafka.common.serialization.StringDeserializer", consumer.get("value.deserializer"));
    }
}
