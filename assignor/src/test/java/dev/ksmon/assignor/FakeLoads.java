package dev.ksmon.assignor;

import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.streams.processor.TaskId;

/** Loads held in memory, for unit tests. */
final class FakeLoads implements TaskLoads {
    private final Measurement measurement;

    FakeLoads(String applicationId, Instant measuredAt, Map<String, Double> loads) {
        Map<TaskId, Double> byId = new HashMap<>();
        loads.forEach((k, v) -> byId.put(TaskId.parse(k), v));
        this.measurement = applicationId == null ? null : new Measurement(applicationId, measuredAt, byId);
    }

    @Override
    public Optional<Measurement> latest(String applicationId) {
        return Optional.ofNullable(measurement);
    }
}
