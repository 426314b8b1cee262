package dev.ksmon.assignor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Places active tasks on instances for the lowest busiest-instance load, then the fewest moves
 * among the placements within {@link #TOLERANCE} of it: the objective of ksmon explain's balance
 * advice (agent/explain/balance.py), at instance level. Small groups are searched exactly (branch
 * and bound, tasks in decreasing load); larger ones placed greedily, improved by single moves and
 * swaps, then moves taken back while the balance stays within the tolerance. Pure.
 */
final class Balancer {

    /** Beyond this many placements to consider, the exact search gives way to the heuristic. */
    static final long EXACT_SEARCH_LIMIT = 200_000;
    /** How far above the best balance a placement may be and still win for moving fewer tasks. */
    static final double TOLERANCE = 0.05;

    private final Map<String, Double> loads;
    private final List<String> instances;
    private final Map<String, String> current;
    private final Map<String, String> pinned;
    private final List<String> tasks;

    /**
     * @param current task to the instance holding it now (absent: a new task)
     * @param pinned  tasks that must stay on the given instance
     */
    Balancer(Map<String, Double> loads, List<String> instances, Map<String, String> current, Map<String, String> pinned) {
        if (instances.isEmpty()) {
            throw new IllegalArgumentException("no instances to assign tasks to");
        }
        this.loads = loads;
        this.instances = instances.stream().sorted().toList();
        this.current = current;
        this.pinned = pinned;
        this.tasks = loads.keySet().stream()
            .sorted(Comparator.comparingDouble((String t) -> -loads.get(t)).thenComparing(t -> t))
            .toList();
    }

    static double rounded(double value) {
        return Math.round(value * 1e6) / 1e6;
    }

    double busiest(Map<String, String> placement) {
        Map<String, Double> by = new HashMap<>();
        for (String i : instances) {
            by.put(i, 0.0);
        }
        placement.forEach((t, i) -> by.merge(i, loads.get(t), Double::sum));
        return rounded(by.values().stream().mapToDouble(Double::doubleValue).max().orElse(0));
    }

    int moves(Map<String, String> placement) {
        int n = 0;
        for (Map.Entry<String, String> e : placement.entrySet()) {
            String home = current.get(e.getKey());
            if (home != null && !home.equals(e.getValue())) {
                n++;
            }
        }
        return n;
    }

    boolean exactSearchFits() {
        double size = Math.pow(instances.size(), tasks.size());
        return size <= EXACT_SEARCH_LIMIT;
    }

    Map<String, String> solve() {
        if (exactSearchFits()) {
            Map<String, String> balanced = search(false, Double.MAX_VALUE);
            double cap = rounded(busiest(balanced) * (1 + TOLERANCE));
            return search(true, cap);
        }
        Map<String, String> start = greedy();
        Map<String, String> asIs = asIs();
        if (busiest(asIs) < busiest(start) || (busiest(asIs) == busiest(start) && moves(asIs) <= moves(start))) {
            start = asIs;
        }
        Map<String, String> balanced = improve(start);
        return fewerMoves(balanced, rounded(busiest(balanced) * (1 + TOLERANCE)));
    }

    Map<String, String> asIs() {
        Map<String, String> out = new HashMap<>();
        for (String t : tasks) {
            out.put(t, allowed(t).contains(current.get(t)) ? current.get(t) : allowed(t).get(0));
        }
        return out;
    }

    private List<String> allowed(String task) {
        String pin = pinned.get(task);
        return pin != null ? List.of(pin) : instances;
    }

    /** Branch and bound; {@code movesFirst}: key (moves, max) within {@code cap}, else (max, moves). */
    private Map<String, String> search(boolean movesFirst, double cap) {
        Map<String, Double> by = new HashMap<>();
        for (String i : instances) {
            by.put(i, 0.0);
        }
        Map<String, String> chosen = new HashMap<>();
        Object[] best = {null, null};
        searchFrom(0, 0, by, chosen, movesFirst, cap, best);
        @SuppressWarnings("unchecked")
        Map<String, String> found = (Map<String, String>) best[1];
        return found;
    }

    private void searchFrom(int index, int moved, Map<String, Double> by, Map<String, String> chosen,
                            boolean movesFirst, double cap, Object[] best) {
        double max = rounded(by.values().stream().mapToDouble(Double::doubleValue).max().orElse(0));
        if (max > cap) {
            return;
        }
        double[] key = movesFirst ? new double[] {moved, max} : new double[] {max, moved};
        if (best[0] != null && compare(key, (double[]) best[0]) >= 0) {
            return;
        }
        if (index == tasks.size()) {
            best[0] = key;
            best[1] = new HashMap<>(chosen);
            return;
        }
        String task = tasks.get(index);
        double load = loads.get(task);
        String home = current.get(task);
        List<String> order = new ArrayList<>(allowed(task));
        order.sort(Comparator.comparing((String i) -> !i.equals(home)));
        for (String i : order) {
            by.merge(i, load, Double::sum);
            chosen.put(task, i);
            searchFrom(index + 1, moved + (home != null && !home.equals(i) ? 1 : 0), by, chosen, movesFirst, cap, best);
            by.merge(i, -load, Double::sum);
            chosen.remove(task);
        }
    }

    private static int compare(double[] a, double[] b) {
        for (int k = 0; k < a.length; k++) {
            int c = Double.compare(a[k], b[k]);
            if (c != 0) {
                return c;
            }
        }
        return 0;
    }

    private Map<String, String> greedy() {
        Map<String, Double> by = new HashMap<>();
        for (String i : instances) {
            by.put(i, 0.0);
        }
        Map<String, String> out = new HashMap<>();
        for (String t : tasks) {
            double load = loads.get(t);
            String home = current.get(t);
            String target = allowed(t).stream()
                .min(Comparator.comparingDouble((String i) -> rounded(by.get(i) + load))
                    .thenComparing(i -> !i.equals(home))
                    .thenComparing(i -> i))
                .orElseThrow();
            out.put(t, target);
            by.merge(target, load, Double::sum);
        }
        return out;
    }

    /** Single moves off the busiest instance and swaps with the idlest while either improves. */
    private Map<String, String> improve(Map<String, String> start) {
        Map<String, String> placement = new HashMap<>(start);
        double[] best = {busiest(placement), moves(placement)};
        while (true) {
            Map<String, Double> by = new HashMap<>();
            for (String i : instances) {
                by.put(i, 0.0);
            }
            placement.forEach((t, i) -> by.merge(i, loads.get(t), Double::sum));
            String hottest = instances.stream().max(Comparator.comparingDouble(by::get)).orElseThrow();
            String idlest = instances.stream().min(Comparator.comparingDouble(by::get)).orElseThrow();
            Map<String, String> step = null;
            double[] stepKey = best;
            for (String t : tasks) {
                if (!placement.get(t).equals(hottest) || pinned.containsKey(t)) {
                    continue;
                }
                for (String target : instances) {
                    if (target.equals(hottest)) {
                        continue;
                    }
                    Map<String, String> change = Map.of(t, target);
                    double[] key = keyAfter(placement, by, best[1], change);
                    if (compare(key, stepKey) < 0) {
                        step = change;
                        stepKey = key;
                    }
                }
                for (String other : tasks) {
                    if (!placement.get(other).equals(idlest) || pinned.containsKey(other) || idlest.equals(hottest)) {
                        continue;
                    }
                    Map<String, String> change = Map.of(t, idlest, other, hottest);
                    double[] key = keyAfter(placement, by, best[1], change);
                    if (compare(key, stepKey) < 0) {
                        step = change;
                        stepKey = key;
                    }
                }
            }
            if (step == null) {
                return placement;
            }
            placement.putAll(step);
            best = stepKey;
        }
    }

    /** The key once {@code change} applies, from the per-instance loads rather than from scratch. */
    private double[] keyAfter(Map<String, String> placement, Map<String, Double> by, double moved,
                              Map<String, String> change) {
        Map<String, Double> delta = new HashMap<>();
        double steps = moved;
        for (Map.Entry<String, String> e : change.entrySet()) {
            String task = e.getKey();
            String source = placement.get(task);
            String target = e.getValue();
            double load = loads.get(task);
            delta.merge(source, -load, Double::sum);
            delta.merge(target, load, Double::sum);
            String home = current.get(task);
            if (home != null) {
                steps += (target.equals(home) ? 0 : 1) - (source.equals(home) ? 0 : 1);
            }
        }
        double max = 0;
        for (Map.Entry<String, Double> e : by.entrySet()) {
            max = Math.max(max, e.getValue() + delta.getOrDefault(e.getKey(), 0.0));
        }
        return new double[] {rounded(max), steps};
    }

    private Map<String, String> fewerMoves(Map<String, String> placement, double cap) {
        Map<String, String> asIs = asIs();
        if (busiest(asIs) <= cap) {
            return asIs;
        }
        Map<String, String> out = new HashMap<>(placement);
        List<String> smallestFirst = new ArrayList<>(tasks);
        smallestFirst.sort(Comparator.comparingDouble((String t) -> loads.get(t)).thenComparing(t -> t));
        for (String t : smallestFirst) {
            String home = current.get(t);
            if (home == null || home.equals(out.get(t)) || !allowed(t).contains(home)) {
                continue;
            }
            Map<String, String> reverted = new HashMap<>(out);
            reverted.put(t, home);
            if (busiest(reverted) <= cap) {
                out = reverted;
            }
        }
        return out;
    }
}
