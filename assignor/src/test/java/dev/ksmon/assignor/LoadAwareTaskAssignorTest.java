package dev.ksmon.assignor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;
import org.junit.jupiter.api.Test;

class LoadAwareTaskAssignorTest {

    static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");
    static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);

    static LoadAwareTaskAssignor assignor(TaskLoads loads) {
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(loads, CLOCK);
        a.configure(Map.of("application.id", "app"));
        return a;
    }

    static FakeLoads loads(Map<String, Double> loads) {
        return new FakeLoads("app", NOW.minusSeconds(30), loads);
    }

    static Map<String, String> actives(FakeState state, TaskAssignment done) {
        Map<ProcessId, String> nameOf = new HashMap<>();
        state.names.forEach((n, p) -> nameOf.put(p, n));
        Map<String, String> out = new HashMap<>();
        for (KafkaStreamsAssignment a : done.assignment()) {
            for (AssignedTask t : a.tasks().values()) {
                if (t.type() == AssignedTask.Type.ACTIVE) {
                    out.put(t.id().toString(), nameOf.get(a.processId()));
                }
            }
        }
        return out;
    }

    static FakeState twoHotOnA(boolean stateful) {
        return new FakeState()
            .task("0_0", stateful).task("0_1", stateful).task("0_2", stateful).task("0_3", stateful)
            .client("A", 1, null, Set.of("0_0", "0_1"), Set.of())
            .client("B", 1, null, Set.of("0_2", "0_3"), Set.of());
    }

    static final Map<String, Double> HOT = Map.of("0_0", 90.0, "0_1", 80.0, "0_2", 5.0, "0_3", 5.0);

    @Test
    void hotTasksArePlacedApart() {
        FakeState state = twoHotOnA(false);
        LoadAwareTaskAssignor a = assignor(loads(HOT));
        Map<String, String> placed = actives(state, a.assign(state));
        assertNotEquals(placed.get("0_0"), placed.get("0_1"), a.lastDecision());
        assertTrue(a.lastDecision().startsWith("load-aware"), a.lastDecision());
        assertEquals("A", placed.get("0_0"), "the hottest task stays: one move suffices");
    }

    @Test
    void statefulTasksStayWhenTheGainIsBelowTheThreshold() {
        // Moving 0_1 would lower the busiest instance from 105 to 100: under 10 %.
        FakeState state = twoHotOnA(true);
        LoadAwareTaskAssignor a = assignor(loads(Map.of("0_0", 55.0, "0_1", 50.0, "0_2", 50.0, "0_3", 45.0)));
        Map<String, String> placed = actives(state, a.assign(state));
        assertEquals(Map.of("0_0", "A", "0_1", "A", "0_2", "B", "0_3", "B"), placed);
    }

    @Test
    void statefulTasksMoveWhenTheGainPassesTheThreshold() {
        FakeState state = twoHotOnA(true);
        LoadAwareTaskAssignor a = assignor(loads(HOT));
        Map<String, String> placed = actives(state, a.assign(state));
        assertNotEquals(placed.get("0_0"), placed.get("0_1"), a.lastDecision());
    }

    @Test
    void standbysNeverSitWithTheirActiveAndPreferAnotherRack() {
        FakeState state = new FakeState()
            .task("0_0", true).task("0_1", true)
            .client("A", 1, "r1", Set.of("0_0"), Set.of())
            .client("B", 1, "r1", Set.of("0_1"), Set.of())
            .client("C", 1, "r2", Set.of(), Set.of());
        state.standbys = 1;
        LoadAwareTaskAssignor a = assignor(loads(Map.of("0_0", 10.0, "0_1", 10.0)));
        TaskAssignment done = a.assign(state);
        for (KafkaStreamsAssignment c : done.assignment()) {
            long standbys = c.tasks().values().stream().filter(t -> t.type() == AssignedTask.Type.STANDBY).count();
            if (c.processId().equals(FakeState.pid("C"))) {
                assertEquals(2, standbys, "both standbys go to the only other rack");
            } else {
                assertEquals(0, standbys);
            }
        }
    }

    void assertFallsBack(FakeState state, LoadAwareTaskAssignor a, String why) {
        TaskAssignment done = a.assign(state);
        assertTrue(a.lastDecision().startsWith("fallback: ") && a.lastDecision().contains(why), a.lastDecision());
        Validity.check(state, done);
    }

    @Test
    void noLoadSourceFallsBack() {
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor();
        a.configure(Map.of("application.id", "app"));
        assertFallsBack(twoHotOnA(false), a,
            "no load source configured (" + LoadAwareTaskAssignor.LOADS_FILE_CONFIG + " or " + LoadAwareTaskAssignor.LOADS_TOPIC_CONFIG + ")");
    }

    @Test
    void noLoadsFallsBack() {
        assertFallsBack(twoHotOnA(false), assignor(new FakeLoads(null, NOW, Map.of())), "no loads measured");
    }

    @Test
    void staleLoadsFallBack() {
        FakeLoads old = new FakeLoads("app", NOW.minus(Duration.ofMinutes(6)), HOT);
        assertFallsBack(twoHotOnA(false), assignor(old), "older than");
    }

    @Test
    void loadsOfAnotherApplicationFallBack() {
        assertFallsBack(twoHotOnA(false), assignor(new FakeLoads("other", NOW, HOT)), "for application other");
    }

    @Test
    void loadsWithATaskTheTopologyLacksFallBack() {
        Map<String, Double> extra = new HashMap<>(HOT);
        extra.put("7_0", 1.0);
        assertFallsBack(twoHotOnA(false), assignor(loads(extra)), "does not have");
    }

    @Test
    void aTaskWithoutLoadFallsBack() {
        Map<String, Double> missing = new HashMap<>(HOT);
        missing.remove("0_3");
        assertFallsBack(twoHotOnA(false), assignor(loads(missing)), "no load measured for task 0_3");
    }

    @Test
    void aClientWithoutProcessIdFallsBack() {
        FakeState state = twoHotOnA(false).clientWithoutProcessId("X");
        LoadAwareTaskAssignor a = assignor(loads(HOT));
        try {
            a.assign(state);
        } catch (RuntimeException sticky) {
            // Kafka Streams' own assignor may refuse such a client too; the decision is what counts.
        }
        assertTrue(a.lastDecision().contains("no process id"), a.lastDecision());
    }

    @Test
    void malformedLoadsFileFallsBack(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path file = dir.resolve("loads.json");
        java.nio.file.Files.writeString(file, "{\"schema_version\":2}");
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(null, CLOCK);
        a.configure(Map.of("application.id", "app", LoadAwareTaskAssignor.LOADS_FILE_CONFIG, file.toString()));
        assertFallsBack(twoHotOnA(false), a, "schema_version 2, expected 1");
    }

    @Test
    void everyAssignmentOnRandomInputsIsValid() {
        Random random = new Random(7);
        for (int round = 0; round < 200; round++) {
            FakeState state = new FakeState();
            int tasks = 1 + random.nextInt(14);
            int clients = 1 + random.nextInt(4);
            state.standbys = random.nextInt(3);
            Map<String, Double> load = new HashMap<>();
            Map<Integer, Set<String>> previous = new HashMap<>();
            for (int t = 0; t < tasks; t++) {
                String id = (t % 3) + "_" + t;
                state.task(id, random.nextBoolean());
                load.put(id, (double) random.nextInt(100));
                previous.computeIfAbsent(random.nextInt(clients + 1), k -> new HashSet<>()).add(id);
            }
            for (int c = 0; c < clients; c++) {
                state.client("c" + c, 1 + random.nextInt(3), random.nextBoolean() ? "r" + random.nextInt(2) : null,
                    previous.getOrDefault(c, Set.of()), Set.of());
            }
            LoadAwareTaskAssignor a = assignor(loads(load));
            TaskAssignment done = a.assign(state);
            assertTrue(a.lastDecision().startsWith("load-aware"), a.lastDecision());
            Validity.check(state, done);
            for (KafkaStreamsAssignment c : done.assignment()) {
                for (AssignedTask t : c.tasks().values()) {
                    assertTrue(state.allTasks().containsKey(t.id()));
                }
            }
            Set<TaskId> seen = new HashSet<>();
            done.assignment().forEach(c -> c.tasks().values().stream()
                .filter(t -> t.type() == AssignedTask.Type.ACTIVE).forEach(t -> assertTrue(seen.add(t.id()))));
            assertEquals(state.allTasks().keySet(), seen);
        }
    }

    @Test
    void aBadNumberInTheConfigIsNamed() {
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(null, CLOCK);
        Exception e = org.junit.jupiter.api.Assertions.assertThrows(
            org.apache.kafka.common.config.ConfigException.class,
            () -> a.configure(Map.of(LoadAwareTaskAssignor.STATEFUL_GAIN_CONFIG, "lots")));
        assertTrue(e.getMessage().contains(LoadAwareTaskAssignor.STATEFUL_GAIN_CONFIG), e.getMessage());
    }
}
