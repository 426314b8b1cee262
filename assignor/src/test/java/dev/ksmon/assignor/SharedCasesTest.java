package dev.ksmon.assignor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** The cases ksmon explain's advice is also tested against (tests/data/balance-cases.json). */
class SharedCasesTest {

    @TestFactory
    @SuppressWarnings("unchecked")
    Stream<DynamicTest> theBalancerMeetsEveryCase() throws Exception {
        Path file = Path.of(System.getProperty("ksmon.cases", "../tests/data/balance-cases.json"));
        Map<String, Object> top = (Map<String, Object>) new Json(Files.readString(file)).document();
        List<Object> cases = (List<Object>) top.get("cases");
        assertTrue(cases.size() >= 3, "the shared cases file has cases");
        return cases.stream().map(c -> (Map<String, Object>) c).map(c -> DynamicTest.dynamicTest((String) c.get("name"), () -> {
            Map<String, Double> loads = new HashMap<>();
            ((Map<String, Object>) c.get("tasks")).forEach((k, v) -> loads.put(k, (Double) v));
            Map<String, String> current = new HashMap<>();
            ((Map<String, Object>) c.get("current")).forEach((k, v) -> current.put(k, (String) v));
            List<String> instances = new ArrayList<>(((Map<String, Object>) c.get("instances")).keySet());
            Balancer balancer = new Balancer(loads, instances, current, Map.of());
            Map<String, String> placed = balancer.solve();
            assertEquals((Double) c.get("expect_busiest_instance"), balancer.busiest(placed), 1e-6, (String) c.get("proves"));
            assertTrue(balancer.moves(placed) <= ((Double) c.get("max_moves")), (String) c.get("proves"));
            assertEquals(loads.keySet(), placed.keySet());
        }));
    }
}
