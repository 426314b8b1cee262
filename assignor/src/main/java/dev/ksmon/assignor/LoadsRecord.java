package dev.ksmon.assignor;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.streams.processor.TaskId;

/**
 * Reads the loads record, schema version 1 (documented in the README): key
 * {@code <cluster>/<application id>}, value
 * {@code {"schema_version":1,"application_id":"..","measured_at":"<ISO-8601>","tasks":{"0_1":12.5}}}.
 * {@code schema_version} is a positive integer, as in every ksmon record; this reader understands 1.
 * Anything else is rejected with a one-line reason.
 */
public final class LoadsRecord {

    private LoadsRecord() {
    }

    /** Raised for a record this reader cannot trust; the message names what is wrong. */
    public static final class MalformedException extends Exception {
        private static final long serialVersionUID = 1L;

        MalformedException(String message) {
            super(message);
        }
    }

    public static TaskLoads.Measurement parse(String json) throws MalformedException {
        Object value;
        try {
            value = new Json(json).document();
        } catch (IllegalArgumentException e) {
            throw new MalformedException("loads record is not JSON: " + e.getMessage());
        }
        if (!(value instanceof Map<?, ?> top)) {
            throw new MalformedException("loads record is not a JSON object");
        }
        Object version = top.get("schema_version");
        if (!(version instanceof Double v) || v != 1.0) {
            throw new MalformedException("loads record has " + shown(version) + ", expected 1");
        }
        if (!(top.get("application_id") instanceof String app) || app.isEmpty()) {
            throw new MalformedException("loads record has no application_id string");
        }
        Instant measuredAt;
        try {
            measuredAt = Instant.parse(String.valueOf(top.get("measured_at")));
        } catch (DateTimeParseException e) {
            throw new MalformedException("loads record measured_at is not an ISO-8601 instant: " + top.get("measured_at"));
        }
        if (!(top.get("tasks") instanceof Map<?, ?> tasks)) {
            throw new MalformedException("loads record has no tasks object");
        }
        Map<TaskId, Double> loads = new HashMap<>();
        for (Map.Entry<?, ?> e : tasks.entrySet()) {
            TaskId id;
            try {
                id = TaskId.parse(String.valueOf(e.getKey()));
            } catch (RuntimeException bad) {
                throw new MalformedException("loads record task id " + e.getKey() + " is not <subtopology>_<partition>");
            }
            if (!(e.getValue() instanceof Double load) || load.isNaN() || load.isInfinite() || load < 0) {
                throw new MalformedException("loads record load of " + e.getKey() + " is not a number >= 0: " + e.getValue());
            }
            loads.put(id, load);
        }
        return new TaskLoads.Measurement(app, measuredAt, loads);
    }

    /** How a wrong schema_version reads in a message: 2 rather than 2.0, a string in quotes. */
    private static String shown(Object version) {
        if (version == null) {
            return "no schema_version";
        }
        if (version instanceof Double d && d == Math.rint(d) && !d.isInfinite()) {
            return "schema_version " + d.longValue();
        }
        if (version instanceof String text) {
            return "schema_version \"" + text + "\"";
        }
        return "schema_version " + version;
    }

    /** The record's key: which cluster and application the loads are for. */
    public static String key(String cluster, String applicationId) {
        return cluster + "/" + applicationId;
    }
}
