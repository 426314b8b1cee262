package dev.ksmon.assignor;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
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

    /** The relative drop in the busiest instance's load that load-driven moves must bring. */
    public static final String MIN_IMPROVEMENT_CONFIG = "ksmon.assignor.min.improvement";
    /** How long after load-driven moves no further load-driven moves are made. */
    public static final String COOLDOWN_CONFIG = "ksmon.assignor.cooldown.ms";
    /** At most this many active tasks are moved for load in one rebalance. */
    public static final String MAX_MOVES_CONFIG = "ksmon.assignor.max.moves";
    /** How long after a rebalance that left the group unbalanced the assignor asks for another (0: never). */
    public static final String RECHECK_INTERVAL_CONFIG = "ksmon.assignor.recheck.interval.ms";

    static final Duration DEFAULT_MAX_AGE = Duration.ofMinutes(5);
    static final Duration DEFAULT_READ_TIMEOUT = Duration.ofMillis(2000);
    static final double DEFAULT_STATEFUL_GAIN = 0.10;
    static final double DEFAULT_MIN_IMPROVEMENT = 0.10;
    static final Duration DEFAULT_COOLDOWN = Duration.ofMinutes(5);
    static final int DEFAULT_MAX_MOVES = 4;
    static final Duration DEFAULT_RECHECK_INTERVAL = Duration.ofMinutes(10);

    /** The lag Kafka Streams reports for an active task that is running (caught up). */
    private static final long LAG_RUNNING = -2;

    private static final Logger LOG = LoggerFactory.getLogger(LoadAwareTaskAssignor.class);

    private TaskLoads loads;
    private final Clock clock;
    private String applicationId;
    private Duration maxAge = DEFAULT_MAX_AGE;
    private double statefulGain = DEFAULT_STATEFUL_GAIN;
    private double minImprovement = DEFAULT_MIN_IMPROVEMENT;
    private Duration cooldown = DEFAULT_COOLDOWN;
    private int maxMoves = DEFAULT_MAX_MOVES;
    private Duration recheckInterval = DEFAULT_RECHECK_INTERVAL;
    /** When this instance last moved tasks for load (null: not yet); the leader keeps it across rebalances. */
    private Instant lastLoadMoves;
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
        Object improvement = configs.get(MIN_IMPROVEMENT_CONFIG);
        if (improvement != null) {
            minImprovement = number(MIN_IMPROVEMENT_CONFIG, improvement, "a fraction >= 0 and < 1, such as 0.10");
            if (minImprovement >= 1) {
                throw new ConfigException(MIN_IMPROVEMENT_CONFIG + " is " + improvement + "; expected a fraction >= 0 and < 1, such as 0.10");
            }
        }
        Object pause = configs.get(COOLDOWN_CONFIG);
        if (pause != null) {
            cooldown = Duration.ofMillis(wholeNumber(COOLDOWN_CONFIG, pause, 0, "a whole number of milliseconds >= 0"));
        }
        Object budget = configs.get(MAX_MOVES_CONFIG);
        if (budget != null) {
            maxMoves = (int) Math.min(Integer.MAX_VALUE, wholeNumber(MAX_MOVES_CONFIG, budget, 1, "a whole number of tasks >= 1"));
        }
        Object recheck = configs.get(RECHECK_INTERVAL_CONFIG);
        if (recheck != null) {
            recheckInterval = Duration.ofMillis(wholeNumber(RECHECK_INTERVAL_CONFIG, recheck, 0,
                "a whole number of milliseconds >= 0 (0: never)"));
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

    private static long wholeNumber(String key, Object value, long least, String expected) {
        try {
            long n = Long.parseLong(value.toString().trim());
            if (n >= least) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below with the key
        }
        throw new ConfigException(key + " is " + value + "; expected " + expected);
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

    /**
     * What the last rebalance did, as its log line says it: "load-aware: placed by load: ...",
     * "load-aware: kept the placement for load (why): ..." or "fallback: <why>".
     */
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
                    LOG.info("ksmon load-aware assignor placed {} tasks: {}", state.allTasks().size(), lastDecision);
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
        Instant now = clock.instant();
        Map<ProcessId, KafkaStreamsState> clients = new TreeMap<>(state.kafkaStreamsStates(false));
        Map<String, ProcessId> byName = new HashMap<>();
        clients.keySet().forEach(p -> byName.put(p.toString(), p));

        Map<String, Double> load = new HashMap<>();
        Map<String, TaskId> taskByName = new HashMap<>();
        Set<String> stateful = new HashSet<>();
        for (Map.Entry<TaskId, TaskInfo> e : state.allTasks().entrySet()) {
            String t = e.getKey().toString();
            load.put(t, measured.get(e.getKey()));
            taskByName.put(t, e.getKey());
            if (e.getValue().isStateful()) {
                stateful.add(t);
            }
        }
        Map<String, String> previous = new HashMap<>();
        for (KafkaStreamsState c : clients.values()) {
            for (TaskId t : c.previousActiveTasks()) {
                if (taskByName.containsKey(t.toString())) {
                    previous.putIfAbsent(t.toString(), c.processId().toString());
                }
            }
        }
        List<String> instances = new ArrayList<>(byName.keySet());

        // What membership forces (tasks of gone instances, new tasks, new instances' share): never held back.
        Map<String, String> kept = LoadMoves.membership(load, instances, previous, stateful);
        int forMembership = LoadMoves.moves(previous, kept).size();

        // The best placement by load, starting from there.
        Balancer balancer = new Balancer(load, instances, kept, Map.of());
        Map<String, String> best = balancer.solve();
        double before = balancer.busiest(kept);
        String statefulNote = "";
        // State is costly to move: unless the gain is large, stateful tasks stay where they are.
        Map<String, String> pinned = new HashMap<>();
        boolean movesState = false;
        for (String t : stateful) {
            pinned.put(t, kept.get(t));
            movesState |= !kept.get(t).equals(best.get(t));
        }
        if (movesState) {
            double statefulDrop = LoadMoves.drop(before, balancer.busiest(best));
            if (statefulDrop < statefulGain) {
                best = new Balancer(load, instances, kept, pinned).solve();
                statefulNote = ", stateful tasks kept (gain " + percent(statefulDrop) + " < " + percent(statefulGain) + ")";
            }
        }
        double reachable = balancer.busiest(best);
        List<String> wanted = LoadMoves.moves(kept, best);
        double gain = LoadMoves.drop(before, reachable);

        // The guard rails, in turn; the first that holds keeps the placement for load.
        Map<String, String> chosen = kept;
        String held = null;
        Instant followup = null;
        boolean noFollowup = false;
        Instant coolsAt = lastLoadMoves == null ? null : lastLoadMoves.plus(cooldown);
        if (wanted.isEmpty()) {
            held = "balanced: no load-driven move lowers the busiest instance";
        } else if (gain < minImprovement) {
            held = "the best placement lowers the busiest instance by only " + percent(gain)
                + ", below the minimum improvement of " + percent(minImprovement);
        } else if (coolsAt != null && now.isBefore(coolsAt)) {
            held = "cool-down after the load-driven moves at " + lastLoadMoves + " until " + coolsAt;
            followup = coolsAt;
        } else {
            List<String> restoring = restoring(state);
            if (!restoring.isEmpty()) {
                held = "tasks restoring: " + String.join(", ", restoring);
            } else {
                Map<String, String> partial = LoadMoves.firstMoves(load, instances, kept, best, maxMoves);
                if (wanted.size() <= maxMoves) {
                    chosen = best;
                } else if (balancer.busiest(partial) < before) {
                    chosen = partial;
                    followup = now.plus(cooldown);
                } else {
                    held = "the first " + maxMoves + " of the " + wanted.size() + " moves the best placement needs"
                        + " (" + MAX_MOVES_CONFIG + ") do not lower the busiest instance";
                    noFollowup = true;
                }
            }
        }
        List<String> moved = LoadMoves.moves(kept, chosen);
        if (!moved.isEmpty()) {
            lastLoadMoves = now;
        }

        // Ask for a follow-up only while the group is still worse than it could be by the minimum improvement.
        double after = balancer.busiest(chosen);
        boolean worthIt = after > reachable && LoadMoves.drop(after, reachable) >= minImprovement;
        if (!worthIt || noFollowup) {
            followup = null;
        } else if (followup == null && !recheckInterval.isZero()) {
            followup = now.plus(recheckInterval);
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
        if (followup != null) {
            // Every client gets the deadline: the first to reach it rebalances the group, and one
            // that leaves meanwhile does not take the follow-up with it.
            for (Map.Entry<ProcessId, KafkaStreamsAssignment> e : out.entrySet()) {
                e.setValue(e.getValue().withFollowupRebalance(followup));
            }
        }

        String what = held == null ? "placed by load" : "kept the placement for load (" + held + ")";
        what += statefulNote + ": busiest instance " + balancer.busiest(previousOrKept(previous, kept)) + " -> " + after + " records/s";
        if (moved.size() < wanted.size()) {
            what += " (" + reachable + " reachable with " + count(wanted.size()) + " moved"
                + (held == null ? ", at most " + maxMoves + " per rebalance (" + MAX_MOVES_CONFIG + ")" : "") + ")";
        }
        lastDecision = "load-aware: " + what + ", " + count(moved.size()) + " moved for load, " + count(forMembership)
            + " placed for membership; follow-up " + (followup == null ? "none" : "at " + followup);
        return new TaskAssignment(out.values());
    }

    /** The previous placement where it covers every task, else the one membership forces (for the "before" load). */
    private static Map<String, String> previousOrKept(Map<String, String> previous, Map<String, String> kept) {
        return previous.keySet().containsAll(kept.keySet()) ? previous : kept;
    }

    private static String count(int tasks) {
        return tasks == 1 ? "1 task" : tasks + " tasks";
    }

    private static String percent(double fraction) {
        return Math.round(fraction * 100) + " %";
    }

    /**
     * Stateful tasks whose active copy is not caught up on the client that ran it (restoring, or
     * its lag unknown), as "1_0 on <process id> (lag 1234)". Lags are asked for only when the
     * topology has stateful tasks. Standbys are not looked at: they trail their active by design.
     */
    private static List<String> restoring(ApplicationState state) {
        boolean anyStateful = state.allTasks().values().stream().anyMatch(TaskInfo::isStateful);
        if (!anyStateful) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (KafkaStreamsState c : new TreeMap<>(state.kafkaStreamsStates(true)).values()) {
            for (TaskId t : c.previousActiveTasks()) {
                TaskInfo info = state.allTasks().get(t);
                if (info == null || !info.isStateful()) {
                    continue;
                }
                String lag;
                try {
                    long n = c.lagFor(t);
                    if (n == 0 || n == LAG_RUNNING) {
                        continue;
                    }
                    lag = n > 0 ? "lag " + n : "lag unknown";
                } catch (RuntimeException e) {
                    lag = "lag unknown";
                }
                out.add(t + " on " + c.processId() + " (" + lag + ")");
            }
        }
        return out;
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
