package dev.ksmon.assignor;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.streams.processor.TaskId;

/** Where the assignor learns each task's load (records/s), as ksmon measured it. */
public interface TaskLoads {

    /** One measurement of an application's tasks. */
    record Measurement(String applicationId, Instant measuredAt, Map<TaskId, Double> loads) {
        public Measurement {
            loads = Map.copyOf(loads);
        }
    }

    /** The latest measurement for {@code applicationId}, or empty when there is none. */
    Optional<Measurement> latest(String applicationId);
}
