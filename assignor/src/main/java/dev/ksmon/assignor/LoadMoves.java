package dev.ksmon.assignor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The two halves of a rebalance's active placement, apart from the balancer itself: the placement
 * membership forces (what any assignor would have to do, never held back by the guard rails), and
 * the load-driven moves taken from the balancer's placement when only some of them may be made.
 * Placements map task names to instance names. Pure.
 */
final class LoadMoves {

    private LoadMoves() {
    }

    /**
     * The placement that membership alone calls for: each task stays on the live instance that ran
     * it; tasks without one (their instance is gone, or the task is new), the busiest first, each go
     * to the instance with the least load (then the fewest tasks); then each instance that ran no task (a new one)
     * takes tasks until it holds its share by count (the total over the instances, rounded down),
     * each from the instance holding the most tasks, the task that evens their two loads best
     * (stateless ones first on a tie).
     *
     * @param previous task to the live instance that ran it (absent: no live instance did)
     */
    static Map<String, String> membership(Map<String, Double> loads, List<String> instances,
                                          Map<String, String> previous, Set<String> stateful) {
        List<String> fresh = new ArrayList<>();
        for (String i : instances.stream().sorted().toList()) {
            if (!previous.containsValue(i)) {
                fresh.add(i);
            }
        }
        Map<String, String> placement = new HashMap<>(previous);
        Map<String, Double> load = new HashMap<>();
        Map<String, Integer> count = new HashMap<>();
        for (String i : instances) {
            load.put(i, 0.0);
            count.put(i, 0);
        }
        placement.forEach((t, i) -> {
            load.merge(i, loads.get(t), Double::sum);
            count.merge(i, 1, Integer::sum);
        });
        List<String> homeless = loads.keySet().stream()
            .filter(t -> !previous.containsKey(t))
            .sorted(Comparator.comparingDouble((String t) -> -loads.get(t)).thenComparing(t -> t))
            .toList();
        for (String t : homeless) {
            String target = instances.stream()
                .min(Comparator.comparingDouble((String i) -> load.get(i))
                    .thenComparing(i -> count.get(i))
                    .thenComparing(i -> i))
                .orElseThrow();
            placement.put(t, target);
            load.merge(target, loads.get(t), Double::sum);
            count.merge(target, 1, Integer::sum);
        }
        int share = loads.size() / instances.size();
        for (String taker : fresh) {
            while (count.get(taker) < share) {
                String donor = instances.stream()
                    .filter(i -> count.get(i) > share)
                    .min(Comparator.comparing((String i) -> -count.get(i))
                        .thenComparing(i -> -load.get(i))
                        .thenComparing(i -> i))
                    .orElseThrow();
                double from = load.get(donor);
                double to = load.get(taker);
                String task = placement.entrySet().stream()
                    .filter(e -> e.getValue().equals(donor))
                    .map(Map.Entry::getKey)
                    .min(Comparator.comparingDouble((String t) -> Balancer.rounded(Math.max(from - loads.get(t), to + loads.get(t))))
                        .thenComparing(stateful::contains)
                        .thenComparing(t -> t))
                    .orElseThrow();
                placement.put(task, taker);
                load.merge(donor, -loads.get(task), Double::sum);
                load.merge(taker, loads.get(task), Double::sum);
                count.merge(donor, -1, Integer::sum);
                count.merge(taker, 1, Integer::sum);
            }
        }
        return placement;
    }

    /** The tasks {@code target} places elsewhere than {@code from}, by name. */
    static List<String> moves(Map<String, String> from, Map<String, String> target) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, String> e : target.entrySet()) {
            if (!e.getValue().equals(from.get(e.getKey()))) {
                out.add(e.getKey());
            }
        }
        out.sort(Comparator.naturalOrder());
        return out;
    }

    /**
     * {@code from} with at most {@code budget} of the moves that lead to {@code target}, the most
     * useful first: each step makes the move that leaves the lowest busiest-instance load, then the
     * lowest sum of squared instance loads (the closest to even), then the first task by name.
     */
    static Map<String, String> firstMoves(Map<String, Double> loads, List<String> instances,
                                          Map<String, String> from, Map<String, String> target, int budget) {
        Map<String, String> placement = new HashMap<>(from);
        List<String> left = moves(from, target);
        for (int n = 0; n < budget && !left.isEmpty(); n++) {
            String pick = null;
            double[] pickKey = null;
            for (String t : left) {
                Map<String, String> tried = new HashMap<>(placement);
                tried.put(t, target.get(t));
                double[] key = spread(loads, instances, tried);
                if (pickKey == null || key[0] < pickKey[0] || (key[0] == pickKey[0] && key[1] < pickKey[1])) {
                    pick = t;
                    pickKey = key;
                }
            }
            placement.put(pick, target.get(pick));
            left.remove(pick);
        }
        return placement;
    }

    /** The busiest instance's load and the sum of the squared instance loads, rounded. */
    private static double[] spread(Map<String, Double> loads, List<String> instances, Map<String, String> placement) {
        Map<String, Double> by = new HashMap<>();
        for (String i : instances) {
            by.put(i, 0.0);
        }
        placement.forEach((t, i) -> by.merge(i, loads.get(t), Double::sum));
        double max = 0;
        double squares = 0;
        for (double v : by.values()) {
            max = Math.max(max, v);
            squares += v * v;
        }
        return new double[] {Balancer.rounded(max), Balancer.rounded(squares)};
    }

    /** How much lower {@code after} is than {@code before}, relative to {@code before} (0 when it is not lower). */
    static double drop(double before, double after) {
        return before > 0 && after < before ? (before - after) / before : 0;
    }
}
