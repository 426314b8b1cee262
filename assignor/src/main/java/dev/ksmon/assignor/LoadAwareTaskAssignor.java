package dev.ksmon.assignor;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A KIP-924 task assignor that places active tasks by their measured load (records/s) rather than
 * their count, with few moves; whenever the loads cannot be trusted it hands the rebalance to Kafka
 * Streams' {@link StickyTaskAssignor} and says why in one log line.
 */
public class LoadAwareTaskAssignor implements TaskAssignor {

    /** A file holding one loads record value (see the README). */
    public static final String LOADS_FILE_CONFIG = "ksmon.assignor.loads.file";
    /** The compacted topic the ksmon job publishes loads records to, read at each rebalance. */
    public static final String LOADS_TOPIC_CONFIG = "ksmon.assignor.loads.topic";
    /** ksmon's name of the cluster: the first part of the record key; required with the topic. */
    public static final String LOADS_CLUSTER_CONFIG = "ksmon.assignor.loads.cluster";
    /** How long one read of the loads topic may take before the assignor falls back. */
    public static final String LOADS_READ_TIMEOUT_CONFIG = "ksmon.assignor.loads.read.timeout.ms";
    /** Prefix of the loads consumer's own settings, which win over those taken from the application. */
    public static final String LOADS_CONSUMER_PREFIX = "ksmon.assignor.loads.consumer.";
    /** Loads measured longer ago than this are not used. */
    public static final String MAX_AGE_CONFIG = "ksmon.assignor.loads.max.age.ms";
    /** The relative gain in busiest-instance load that justifies moving a stateful task. */
    public static final String STATEFUL_GAIN_CONFIG = "ksmon.assignor.stateful.min.gain";

    static final Duration DEFAULT_MAX_AGE = Duration.ofMinutes(5);
    static final Duration DEFAULT_READ_TIMEOUT = Duration.ofMillis(2000);
    static final double DEFAULT_STATEFUL_GAIN = 0.10;

    private static final Logger LOG = LoggerFactory.getLogger(LoadAwareTaskAssignor.class);

    private TaskLoads loads;
    private final Clock clock;
    private String applicationId;
    private Duration maxAge = DEFAULT_MAX_AGE;
    private double statefulGain = DEFAULT_STATEFUL_GAIN;
    private String lastDecision = "not assigned yet";

    /** The constructor Kafka Streams uses; the loads come from {@link #LOADS_FILE_CONFIG} or {@link #LOADS_TOPIC_CONFIG}. */
    public LoadAwareTaskAssignor() {
        this(null, Clock.systemUTC());
    }

    public LoadAwareTaskAssignor(TaskLoads loads, Clock clock) {
        this.loads = loads;
        this.clock = clock;
    }

    @Override
    public void configure(Map<String, ?> configs) {
        Object app = configs.get("application.id");
        applicationId = app == null ? null : app.toString();
        String file = text(configs, LOADS_FILE_CONFIG);
        String topic = text(configs, LOADS_TOPIC_CONFIG);
        if (file != null && topic != null) {
            throw new ConfigException("both " + LOADS_FILE_CONFIG + " and " + LOADS_TOPIC_CONFIG
                + " are set; set only one load source");
        }
        if (topic != null) {
            String cluster = text(configs, LOADS_CLUSTER_CONFIG);
            if (cluster == null) {
                throw new ConfigException(LOADS_CLUSTER_CONFIG + " is required with " + LOADS_TOPIC_CONFIG
                    + ": ksmon's name of the cluster, the first part of the loads record key");
            }
            Duration timeout = DEFAULT_READ_TIMEOUT;
            Object ms = configs.get(LOADS_READ_TIMEOUT_CONFIG);
            if (ms != null) {
                timeout = Duration.ofMillis(positiveWholeNumber(LOADS_READ_TIMEOUT_CONFIG, ms));
            }
            Map<String, Object> consumer = loadsConsumerConfig(configs);
            if (consumer.get(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG) == null) {
                throw new ConfigException(LOADS_TOPIC_CONFIG + " is set but there is no bootstrap.servers to read it"
                    + " from (set bootstrap.servers or " + LOADS_CONSUMER_PREFIX + "bootstrap.servers)");
            }
            if (loads == null) {
                loads = new TopicTaskLoads(topic, cluster, consumer, timeout);
            }
        }
        if (file != null && loads == null) {
            loads = new FileTaskLoads(Path.of(file));
        }
        Object age = configs.get(MAX_AGE_CONFIG);
        if (age != null) {
            maxAge = Duration.ofMillis((long) number(MAX_AGE_CONFIG, age, "a whole number of milliseconds > 0"));
        }
        Object gain = configs.get(STATEFUL_GAIN_CONFIG);
        if (gain != null) {
            statefulGain = number(STATEFUL_GAIN_CONFIG, gain, "a fraction >= 0, such as 0.10");
        }
    }

    /**
     * The settings of the consumer that reads the loads topic: the application's bootstrap servers
     * and security settings, then {@link #LOADS_CONSUMER_PREFIX} overrides, then what the reader
     * needs whatever the overrides say (String deserializers, no group, no auto commit, no topic
     * creation). Values are passed on as they are: a {@code Password} stays one.
     */
    static Map<String, Object> loadsConsumerConfig(Map<String, ?> configs) {
        Map<String, Object> out = new HashMap<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            String key = e.getKey();
            boolean shared = key.equals(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG) || key.equals("security.protocol")
                || key.startsWith("sasl.") || key.startsWith("ssl.");
            if (shared && e.getValue() != null) {
                out.put(key, e.getValue());
            }
        }
        Object app = configs.get("application.id");
        out.put(ConsumerConfig.CLIENT_ID_CONFIG, (app == null ? "ksmon" : app) + "-ksmon-loads");
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            if (e.getKey().startsWith(LOADS_CONSUMER_PREFIX) && e.getValue() != null) {
                out.put(e.getKey().substring(LOADS_CONSUMER_PREFIX.length()), e.getValue());
            }
        }
        out.remove(ConsumerConfig.GROUP_ID_CONFIG);
        out.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        out.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        out.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        out.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        return out;
    }

    /** A setting's text, or null when it is absent or blank. */
    private static String text(Map<String, ?> configs, String key) {
        Object value = configs.get(key);
        if (value == null || value.toString().isBlank()) {
            return null;
        }
        return value.toString().trim();
    }

    private static long positiveWholeNumber(String key, Object value) {
        try {
            long n = Long.parseLong(value.toString().trim());
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below with the key
        }
        throw new ConfigException(key + " is " + value + "; expected a whole number of milliseconds > 0");
    }

    private static double number(String key, Object value, String expected) {
        try {
            double n = Double.parseDouble(value.toString().trim());
            if (n >= 0 && !Double.isInfinite(n)) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below with the key
        }
        throw new ConfigException(key + " is " + value + "; expected " + expected);
    }

    /** What the last rebalance did: "load-aware: ..." or "fallback: <why>". */
    public String lastDecision() {
        return lastDecision;
    }

    @Override
    public TaskAssignment assign(ApplicationState state) {
        String why;
        try {
            Optional<String> refused = refusal(state);
            if (refused.isEmpty()) {
                // Read once per rebalance: a topic read takes time, and two reads could disagree.
                Optional<TaskLoads.Measurement> latest = loads.latest(applicationId);
                refused = latest.isEmpty()
                    ? Optional.of("no loads measured for application " + applicationId)
                    : mismatch(state, latest.get());
                if (refused.isEmpty()) {
                    TaskAssignment done = place(state, latest.get().loads());
                    Validity.check(state, done);
                    LOG.info("ksmon load-aware assignor placed {} tasks by load: {}", state.allTasks().size(), lastDecision);
                    return done;
                }
            }
            why = refused.get();
        } catch (RuntimeException e) {
            why = "cannot place by load: " + e.getMessage();
        }
        lastDecision = "fallback: " + why;
        LOG.info("ksmon load-aware assignor falls back to Kafka Streams' sticky assignor: {}", why);
        return new StickyTaskAssignor().assign(state);
    }

    /** Why this rebalance cannot be placed by load whatever the loads say, if it cannot. */
    private Optional<String> refusal(ApplicationState state) {
        if (loads == null) {
            return Optional.of("no load source configured (" + LOADS_FILE_CONFIG + " or " + LOADS_TOPIC_CONFIG + ")");
        }
        if (applicationId == null) {
            return Optional.of("application.id not configured");
        }
        Map<ProcessId, KafkaStreamsState> clients = state.kafkaStreamsStates(false);
        for (Map.Entry<ProcessId, KafkaStreamsState> e : clients.entrySet()) {
            if (e.getKey() == null || e.getValue().processId() == null) {
                return Optional.of("a client has no process id");
            }
        }
        if (clients.isEmpty()) {
            return Optional.of("no clients");
        }
        return Optional.empty();
    }

    /** Why these loads cannot be used for this rebalance, if they cannot. */
    private Optional<String> mismatch(ApplicationState state, TaskLoads.Measurement m) {
        if (!applicationId.equals(m.applicationId())) {
            return Optional.of("loads are for application " + m.applicationId() + ", not " + applicationId);
        }
        Duration age = Duration.between(m.measuredAt(), clock.instant());
        if (age.compareTo(maxAge) > 0 || age.isNegative()) {
            return Optional.of("loads measured at " + m.measuredAt() + " are older than " + maxAge + " or in the future");
        }
        Set<TaskId> tasks = state.allTasks().keySet();
        for (TaskId t : new java.util.TreeSet<>(tasks)) {
            if (!m.loads().containsKey(t)) {
                return Optional.of("no load measured for task " + t);
            }
        }
        for (TaskId t : new java.util.TreeSet<>(m.loads().keySet())) {
            if (!tasks.contains(t)) {
                return Optional.of("loads name task " + t + ", which this topology does not have");
            }
        }
        return Optional.empty();
    }

    private TaskAssignment place(ApplicationState state, Map<TaskId, Double> measured) {
        Map<ProcessId, KafkaStreamsState> clients = new TreeMap<>(state.kafkaStreamsStates(false));
        Map<String, ProcessId> byName = new HashMap<>();
        clients.keySet().forEach(p -> byName.put(p.toString(), p));

        Map<String, Double> load = new HashMap<>();
        Map<String, TaskId> taskByName = new HashMap<>();
        for (TaskId t : state.allTasks().keySet()) {
            load.put(t.toString(), measured.get(t));
            taskByName.put(t.toString(), t);
        }
        Map<String, String> current = new HashMap<>();
        for (KafkaStreamsState c : clients.values()) {
            for (TaskId t : c.previousActiveTasks()) {
                if (taskByName.containsKey(t.toString())) {
                    current.putIfAbsent(t.toString(), c.processId().toString());
                }
            }
        }
        List<String> instances = new ArrayList<>(byName.keySet());
        Balancer free = new Balancer(load, instances, current, Map.of());
        Map<String, String> placement = free.solve();

        // State is costly to move: unless the gain is large, stateful tasks stay where it is.
        Map<String, String> pinned = new HashMap<>();
        for (Map.Entry<TaskId, TaskInfo> e : state.allTasks().entrySet()) {
            String t = e.getKey().toString();
            if (e.getValue().isStateful() && current.containsKey(t)) {
                pinned.put(t, current.get(t));
            }
        }
        boolean movesState = pinned.entrySet().stream().anyMatch(p -> !p.getValue().equals(placement.get(p.getKey())));
        Map<String, String> chosen = placement;
        String how = "load-aware";
        if (movesState) {
            double before = free.busiest(free.asIs());
            double after = free.busiest(placement);
            double gain = before > 0 ? (before - after) / before : 0;
            if (gain < statefulGain) {
                chosen = new Balancer(load, instances, current, pinned).solve();
                how = "load-aware, stateful tasks kept (gain " + Math.round(gain * 100) + " % < " + Math.round(statefulGain * 100) + " %)";
            }
        }

        Map<ProcessId, KafkaStreamsAssignment> out = new TreeMap<>();
        for (ProcessId p : clients.keySet()) {
            out.put(p, KafkaStreamsAssignment.of(p, new HashSet<>()));
        }
        Map<TaskId, ProcessId> activeOf = new HashMap<>();
        for (Map.Entry<String, String> e : chosen.entrySet()) {
            TaskId t = taskByName.get(e.getKey());
            ProcessId p = byName.get(e.getValue());
            activeOf.put(t, p);
            out.get(p).assignTask(new AssignedTask(t, AssignedTask.Type.ACTIVE));
        }
        Standbys.place(state, clients, activeOf, out);
        lastDecision = how + ": busiest instance " + free.busiest(free.asIs()) + " -> " + free.busiest(chosen) + " records/s";
        return new TaskAssignment(out.values());
    }

    /** Standby replicas: never with their active, on another rack where there is one, near their state. */
    static final class Standbys {
        private Standbys() {
        }

        static void place(ApplicationState state, Map<ProcessId, KafkaStreamsState> clients,
                          Map<TaskId, ProcessId> activeOf, Map<ProcessId, KafkaStreamsAssignment> out) {
            int copies = state.assignmentConfigs().numStandbyReplicas();
            Map<ProcessId, Integer> count = new HashMap<>();
            for (TaskId t : new java.util.TreeSet<>(activeOf.keySet())) {
                TaskInfo info = state.allTasks().get(t);
                if (!info.isStateful()) {
                    continue;
                }
                ProcessId active = activeOf.get(t);
                Optional<String> activeRack = clients.get(active).rackId();
                Set<String> usedRacks = new HashSet<>();
                activeRack.ifPresent(usedRacks::add);
                for (int n = 0; n < copies; n++) {
                    Optional<ProcessId> pick = clients.values().stream()
                        .filter(c -> !c.processId().equals(active))
                        .filter(c -> !out.get(c.processId()).tasks().containsKey(t))
                        .sorted(Comparator
                            .comparing((KafkaStreamsState c) -> c.rackId().map(usedRacks::contains).orElse(false))
                            .thenComparing(c -> !c.previousStandbyTasks().contains(t) && !c.previousActiveTasks().contains(t))
                            .thenComparing(c -> count.getOrDefault(c.processId(), 0))
                            .thenComparing(KafkaStreamsState::processId))
                        .map(KafkaStreamsState::processId)
                        .findFirst();
                    if (pick.isEmpty()) {
                        break;
                    }
                    out.get(pick.get()).assignTask(new AssignedTask(t, AssignedTask.Type.STANDBY));
                    count.merge(pick.get(), 1, Integer::sum);
                    clients.get(pick.get()).rackId().ifPresent(usedRacks::add);
                }
            }
        }
    }
}
