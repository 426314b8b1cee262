package dev.ksmon.assignor;

import static dev.ksmon.assignor.LoadAwareTaskAssignorTest.HOT;
import static dev.ksmon.assignor.LoadAwareTaskAssignorTest.NOW;
import static dev.ksmon.assignor.LoadAwareTaskAssignorTest.actives;
import static dev.ksmon.assignor.LoadAwareTaskAssignorTest.twoHotOnA;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;
import org.junit.jupiter.api.Test;

/** Follow-up rebalances and the guard rails against churn: minimum improvement, cool-down, move cap, restoring. */
class GuardRailsTest {

    /** Loads whose measurement time follows the clock, so they never grow stale in these tests. */
    static TaskLoads loadsAt(ManualClock clock, Map<String, Double> loads) {
        return app -> new FakeLoads("app", clock.now.minusSeconds(30), loads).latest(app);
    }

    static LoadAwareTaskAssignor assignor(ManualClock clock, Map<String, Double> loads, Map<String, String> settings) {
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(loadsAt(clock, loads), clock);
        Map<String, Object> configs = new HashMap<>(settings);
        configs.put("application.id", "app");
        a.configure(configs);
        return a;
    }

    /** The one follow-up deadline every client's assignment carries, or empty when none has one. */
    static Optional<Instant> followup(TaskAssignment done) {
        Set<Optional<Instant>> deadlines = new HashSet<>();
        for (KafkaStreamsAssignment c : done.assignment()) {
            deadlines.add(c.followupRebalanceDeadline());
        }
        assertEquals(1, deadlines.size(), "every client gets the same deadline, or none: " + deadlines);
        return deadlines.iterator().next();
    }

    static int moved(Map<String, String> before, Map<String, String> after) {
        return LoadMoves.moves(before, after).size();
    }

    static final Map<String, String> TWO_HOT_ON_A = Map.of("0_0", "A", "0_1", "A", "0_2", "B", "0_3", "B");

    @Test
    void aBalancedGroupGetsNoFollowup() {
        ManualClock clock = ManualClock.at(NOW);
        FakeState state = twoHotOnA(false);
        LoadAwareTaskAssignor a = assignor(clock, Map.of("0_0", 50.0, "0_1", 10.0, "0_2", 50.0, "0_3", 10.0), Map.of());
        for (int round = 0; round < 3; round++) {
            TaskAssignment done = a.assign(state);
            assertEquals(TWO_HOT_ON_A, actives(state, done));
            assertEquals(Optional.empty(), followup(done), a.lastDecision());
            assertTrue(a.lastDecision().startsWith("load-aware: kept the placement for load (balanced"), a.lastDecision());
            assertTrue(a.lastDecision().endsWith("follow-up none"), a.lastDecision());
            clock.now = clock.now.plus(Duration.ofMinutes(20));
        }
    }

    @Test
    void theMoveCapLimitsLoadMovesAndSchedulesAFollowupThatFinishesTheJob() {
        // Ten tasks of 10 records/s on A, an idle one on B: the best placement needs five moves.
        ManualClock clock = ManualClock.at(NOW);
        Map<String, Double> loads = new HashMap<>();
        FakeState state = new FakeState().task("1_0", false);
        Set<String> onA = new HashSet<>();
        for (int p = 0; p < 10; p++) {
            state.task("0_" + p, false);
            loads.put("0_" + p, 10.0);
            onA.add("0_" + p);
        }
        loads.put("1_0", 0.0);
        state.client("A", 1, null, onA, Set.of()).client("B", 1, null, Set.of("1_0"), Set.of());
        LoadAwareTaskAssignor a = assignor(clock, loads, Map.of());
        Map<String, String> before = new HashMap<>();
        onA.forEach(t -> before.put(t, "A"));
        before.put("1_0", "B");

        TaskAssignment done = a.assign(state);
        Validity.check(state, done);
        Map<String, String> placed = actives(state, done);
        assertEquals(LoadAwareTaskAssignor.DEFAULT_MAX_MOVES, moved(before, placed), a.lastDecision());
        assertEquals(Optional.of(NOW.plus(LoadAwareTaskAssignor.DEFAULT_COOLDOWN)), followup(done), a.lastDecision());
        assertTrue(a.lastDecision().contains("placed by load: busiest instance 100.0 -> 60.0 records/s (50.0 reachable with 5 tasks moved, at most 4"),
            a.lastDecision());
        assertTrue(a.lastDecision().contains("4 tasks moved for load"), a.lastDecision());

        // The follow-up: the cool-down is over, the last move is made and nothing more is asked for.
        clock.now = NOW.plus(LoadAwareTaskAssignor.DEFAULT_COOLDOWN);
        FakeState next = new FakeState().task("1_0", false);
        Set<String> stillOnA = new HashSet<>();
        Set<String> nowOnB = new HashSet<>();
        placed.forEach((t, i) -> (i.equals("A") ? stillOnA : nowOnB).add(t));
        loads.keySet().forEach(t -> next.task(t, false));
        next.client("A", 1, null, stillOnA, Set.of()).client("B", 1, null, nowOnB, Set.of());
        TaskAssignment second = a.assign(next);
        assertEquals(1, moved(placed, actives(next, second)), a.lastDecision());
        assertEquals(Optional.empty(), followup(second), a.lastDecision());
        assertTrue(a.lastDecision().contains("-> 50.0 records/s"), a.lastDecision());
    }

    @Test
    void aSmallerMoveCapIsHonoured() {
        ManualClock clock = ManualClock.at(NOW);
        FakeState state = new FakeState()
            .task("0_0", false).task("0_1", false).task("0_2", false).task("0_3", false).task("0_4", false).task("0_5", false)
            .client("A", 1, null, Set.of("0_0", "0_1", "0_2", "0_3"), Set.of())
            .client("B", 1, null, Set.of("0_4"), Set.of())
            .client("C", 1, null, Set.of("0_5"), Set.of());
        Map<String, Double> loads = Map.of("0_0", 30.0, "0_1", 30.0, "0_2", 30.0, "0_3", 30.0, "0_4", 1.0, "0_5", 1.0);
        LoadAwareTaskAssignor a = assignor(clock, loads, Map.of(LoadAwareTaskAssignor.MAX_MOVES_CONFIG, "1",
            LoadAwareTaskAssignor.COOLDOWN_CONFIG, "60000"));
        Map<String, String> before = Map.of("0_0", "A", "0_1", "A", "0_2", "A", "0_3", "A", "0_4", "B", "0_5", "C");
        TaskAssignment done = a.assign(state);
        assertEquals(1, moved(before, actives(state, done)), a.lastDecision());
        assertEquals(Optional.of(NOW.plusSeconds(60)), followup(done), a.lastDecision());
    }

    @Test
    void withinTheCooldownNoLoadMovesHappenAndTheFollowupIsAtItsEnd() {
        ManualClock clock = ManualClock.at(NOW);
        LoadAwareTaskAssignor a = assignor(clock, HOT, Map.of());
        FakeState state = twoHotOnA(false);
        Map<String, String> first = actives(state, a.assign(state));
        assertEquals(1, moved(TWO_HOT_ON_A, first), a.lastDecision());

        // A minute later both hot tasks are on A again (say an instance restarted): held by the cool-down.
        clock.now = NOW.plus(Duration.ofMinutes(1));
        FakeState again = twoHotOnA(false);
        TaskAssignment done = a.assign(again);
        Validity.check(again, done);
        assertEquals(TWO_HOT_ON_A, actives(again, done), a.lastDecision());
        Instant end = NOW.plus(LoadAwareTaskAssignor.DEFAULT_COOLDOWN);
        assertEquals(Optional.of(end), followup(done), a.lastDecision());
        assertTrue(a.lastDecision().contains("kept the placement for load (cool-down after the load-driven moves at "
            + NOW + " until " + end + ")"), a.lastDecision());
        assertTrue(a.lastDecision().endsWith("follow-up at " + end), a.lastDecision());

        // At the follow-up, the cool-down is over: the move is made.
        clock.now = end;
        TaskAssignment later = a.assign(twoHotOnA(false));
        assertEquals(1, moved(TWO_HOT_ON_A, actives(again, later)), a.lastDecision());
        assertEquals(Optional.empty(), followup(later), a.lastDecision());
    }

    @Test
    void aGainBelowTheMinimumImprovementKeepsThePlacement() {
        // Swapping 0_1 and 0_3 would lower the busiest instance from 110 to 100: 9 %, under 10 %.
        Map<String, Double> loads = Map.of("0_0", 60.0, "0_1", 50.0, "0_2", 50.0, "0_3", 40.0);
        FakeState state = twoHotOnA(false);
        LoadAwareTaskAssignor a = assignor(ManualClock.at(NOW), loads, Map.of());
        TaskAssignment done = a.assign(state);
        assertEquals(TWO_HOT_ON_A, actives(state, done), a.lastDecision());
        assertEquals(Optional.empty(), followup(done), a.lastDecision());
        assertTrue(a.lastDecision().contains("lowers the busiest instance by only 9 %, below the minimum improvement of 10 %"),
            a.lastDecision());

        LoadAwareTaskAssignor eager = assignor(ManualClock.at(NOW), loads, Map.of(LoadAwareTaskAssignor.MIN_IMPROVEMENT_CONFIG, "0.05"));
        TaskAssignment moved = eager.assign(state);
        assertTrue(moved(TWO_HOT_ON_A, actives(state, moved)) > 0, eager.lastDecision());
        assertTrue(eager.lastDecision().startsWith("load-aware: placed by load: busiest instance 110.0 -> 100.0"), eager.lastDecision());
    }

    @Test
    void restoringTasksHoldLoadMovesBackUntilTheRecheck() {
        FakeState state = twoHotOnA(true).lag("B", "0_2", 500);
        LoadAwareTaskAssignor a = assignor(ManualClock.at(NOW), HOT, Map.of());
        TaskAssignment done = a.assign(state);
        Validity.check(state, done);
        assertEquals(TWO_HOT_ON_A, actives(state, done), a.lastDecision());
        assertTrue(a.lastDecision().contains("kept the placement for load (tasks restoring: 0_2 on " + FakeState.pid("B")
            + " (lag 500))"), a.lastDecision());
        assertEquals(Optional.of(NOW.plus(LoadAwareTaskAssignor.DEFAULT_RECHECK_INTERVAL)), followup(done), a.lastDecision());

        // A lag Kafka Streams does not know counts as not caught up; with the re-check off, no follow-up.
        FakeState unknown = twoHotOnA(true).lag("A", "0_0", -3);
        LoadAwareTaskAssignor never = assignor(ManualClock.at(NOW), HOT, Map.of(LoadAwareTaskAssignor.RECHECK_INTERVAL_CONFIG, "0"));
        TaskAssignment held = never.assign(unknown);
        assertEquals(TWO_HOT_ON_A, actives(unknown, held), never.lastDecision());
        assertTrue(never.lastDecision().contains("(lag unknown)"), never.lastDecision());
        assertEquals(Optional.empty(), followup(held), never.lastDecision());

        // Running tasks (lag -2, as Kafka Streams reports them) are caught up: the move is made.
        FakeState running = twoHotOnA(true).lag("A", "0_0", -2).lag("A", "0_1", -2);
        LoadAwareTaskAssignor b = assignor(ManualClock.at(NOW), HOT, Map.of());
        assertEquals(1, moved(TWO_HOT_ON_A, actives(running, b.assign(running))), b.lastDecision());
    }

    @Test
    void membershipChangesAssignEveryTaskWhateverTheGuardRails() {
        ManualClock clock = ManualClock.at(NOW);
        LoadAwareTaskAssignor a = assignor(clock, HOT, Map.of(LoadAwareTaskAssignor.MAX_MOVES_CONFIG, "1"));
        a.assign(twoHotOnA(false));
        clock.now = NOW.plus(Duration.ofMinutes(1));

        // B is gone and C is new, within the cool-down: B's tasks still go somewhere, exactly once.
        FakeState gone = new FakeState()
            .task("0_0", false).task("0_1", false).task("0_2", false).task("0_3", false)
            .client("A", 1, null, Set.of("0_0", "0_1"), Set.of())
            .client("C", 1, null, Set.of(), Set.of());
        TaskAssignment done = a.assign(gone);
        Validity.check(gone, done);
        Map<String, String> placed = actives(gone, done);
        assertEquals(Map.of("0_0", "A", "0_1", "A", "0_2", "C", "0_3", "C"), placed, a.lastDecision());
        assertTrue(a.lastDecision().contains("cool-down"), a.lastDecision());
        assertTrue(a.lastDecision().contains("2 tasks placed for membership"), a.lastDecision());

        // A new client with nothing takes its share by count, more than the move cap, during the cool-down.
        FakeState joined = new FakeState()
            .task("0_0", true).task("0_1", true).task("0_2", true).task("0_3", true)
            .client("A", 1, null, Set.of("0_0", "0_1", "0_2", "0_3"), Set.of())
            .client("C", 1, null, Set.of(), Set.of());
        TaskAssignment shared = a.assign(joined);
        Validity.check(joined, shared);
        Map<String, String> split = actives(joined, shared);
        assertEquals(Map.of("0_0", "C", "0_1", "A", "0_2", "C", "0_3", "A"), split, a.lastDecision());
        assertTrue(a.lastDecision().contains("0 tasks moved for load, 2 tasks placed for membership"), a.lastDecision());
    }

    @Test
    void theFallbackPathsNeverScheduleAFollowup() {
        for (LoadAwareTaskAssignor falling : new LoadAwareTaskAssignor[] {
            LoadAwareTaskAssignorTest.assignor(new FakeLoads(null, NOW, Map.of())),
            LoadAwareTaskAssignorTest.assignor(new FakeLoads("app", NOW.minus(Duration.ofHours(1)), HOT)),
            LoadAwareTaskAssignorTest.assignor(new FakeLoads("other", NOW, HOT)),
            LoadAwareTaskAssignorTest.assignor(null),
        }) {
            FakeState state = twoHotOnA(true).lag("A", "0_0", 500);
            TaskAssignment done = falling.assign(state);
            assertTrue(falling.lastDecision().startsWith("fallback: "), falling.lastDecision());
            assertEquals(Optional.empty(), followup(done), falling.lastDecision());
        }
        // Loads that stop being trusted during the cool-down that held moves back: no follow-up either.
        ManualClock clock = ManualClock.at(NOW);
        Map<String, Double> loads = new HashMap<>(HOT);
        LoadAwareTaskAssignor a = assignor(clock, loads, Map.of());
        a.assign(twoHotOnA(false));
        clock.now = NOW.plus(Duration.ofMinutes(1));
        assertTrue(followup(a.assign(twoHotOnA(false))).isPresent(), a.lastDecision());
        loads.remove("0_3");
        TaskAssignment done = a.assign(twoHotOnA(false));
        assertTrue(a.lastDecision().startsWith("fallback: no load measured for task 0_3"), a.lastDecision());
        assertEquals(Optional.empty(), followup(done), a.lastDecision());
    }

    @Test
    void theNewSettingsAreValidatedAndNamed() {
        Map<String, String> bad = Map.of(
            LoadAwareTaskAssignor.MIN_IMPROVEMENT_CONFIG, "1.5",
            LoadAwareTaskAssignor.COOLDOWN_CONFIG, "-1",
            LoadAwareTaskAssignor.MAX_MOVES_CONFIG, "0",
            LoadAwareTaskAssignor.RECHECK_INTERVAL_CONFIG, "ten minutes");
        for (Map.Entry<String, String> e : bad.entrySet()) {
            for (String value : new String[] {e.getValue(), "lots", "-0.5"}) {
                LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(null, ManualClock.at(NOW));
                ConfigException thrown = assertThrows(ConfigException.class, () -> a.configure(Map.of(e.getKey(), value)),
                    e.getKey() + "=" + value);
                assertTrue(thrown.getMessage().contains(e.getKey()), thrown.getMessage());
            }
        }
        LoadAwareTaskAssignor a = new LoadAwareTaskAssignor(null, ManualClock.at(NOW));
        a.configure(Map.of(LoadAwareTaskAssignor.MIN_IMPROVEMENT_CONFIG, "0",
            LoadAwareTaskAssignor.COOLDOWN_CONFIG, "0",
            LoadAwareTaskAssignor.MAX_MOVES_CONFIG, "1",
            LoadAwareTaskAssignor.RECHECK_INTERVAL_CONFIG, "0"));
    }
}
