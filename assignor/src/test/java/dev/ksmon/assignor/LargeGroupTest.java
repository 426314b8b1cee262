package dev.ksmon.assignor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

class LargeGroupTest {

    @Test
    void theHeuristicKeepsTheGreedyGuaranteeOnAManyTaskGroup() {
        // 400 tasks on 8 instances, all on one: far beyond the exact search.
        Random random = new Random(3);
        Map<String, Double> loads = new HashMap<>();
        Map<String, String> current = new HashMap<>();
        List<String> instances = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            instances.add("i" + i);
        }
        double total = 0;
        double largest = 0;
        for (int t = 0; t < 400; t++) {
            double load = t < 20 ? 200 + random.nextInt(100) : random.nextInt(10);
            loads.put((t % 4) + "_" + t, load);
            current.put((t % 4) + "_" + t, "i0");
            total += load;
            largest = Math.max(largest, load);
        }
        Balancer balancer = new Balancer(loads, instances, current, Map.of());
        assertFalse(balancer.exactSearchFits());
        Map<String, String> placed = balancer.solve();
        // Largest-first placement never exceeds the mean plus the largest task, and moves are
        // only taken back within the tolerance: a bound that holds whatever the optimum is.
        double bound = total / instances.size() + largest;
        assertEquals(loads.keySet(), placed.keySet());
        assertTrue(balancer.busiest(placed) <= bound * (1 + Balancer.TOLERANCE),
            balancer.busiest(placed) + " vs guarantee " + bound);
    }
}
