package dev.ksmon.assignor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.Map;

import org.apache.kafka.streams.processor.TaskId;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class LoadsRecordTest {

    @Test
    void aSchemaVersionOneRecordIsRead() throws Exception {
        TaskLoads.Measurement m = LoadsRecord.parse(
            "{\"schema_version\": 1, \"application_id\": \"app\", \"measured_at\": \"2026-01-01T00:00:00Z\","
                + " \"tasks\": {\"0_1\": 12.5, \"1_0\": 0}}");
        assertEquals("app", m.applicationId());
        assertEquals(Instant.parse("2026-01-01T00:00:00Z"), m.measuredAt());
        assertEquals(Map.of(new TaskId(0, 1), 12.5, new TaskId(1, 0), 0.0), m.loads());
        assertEquals("prod/app", LoadsRecord.key("prod", "app"));
    }

    // Each row: a record the reader must refuse, and the words its reason names.
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "not json at all|not JSON",
        "[1]|not a JSON object",
        "{\"schema_version\":2}|loads record has schema_version 2, expected 1",
        "{\"schema_version\":\"1\"}|schema_version \"1\", expected 1",
        "{\"version\":1,\"application_id\":\"a\",\"measured_at\":\"2026-01-01T00:00:00Z\",\"tasks\":{}}|no schema_version, expected 1",
        "{\"schema_version\":1,\"measured_at\":\"2026-01-01T00:00:00Z\",\"tasks\":{}}|application_id",
        "{\"schema_version\":1,\"application_id\":\"a\",\"measured_at\":\"yesterday\",\"tasks\":{}}|ISO-8601",
        "{\"schema_version\":1,\"application_id\":\"a\",\"measured_at\":\"2026-01-01T00:00:00Z\"}|no tasks",
        "{\"schema_version\":1,\"application_id\":\"a\",\"measured_at\":\"2026-01-01T00:00:00Z\",\"tasks\":{\"x\":1}}|task id x",
        "{\"schema_version\":1,\"application_id\":\"a\",\"measured_at\":\"2026-01-01T00:00:00Z\",\"tasks\":{\"0_0\":-1}}|>= 0",
        "{\"schema_version\":1,\"application_id\":\"a\",\"measured_at\":\"2026-01-01T00:00:00Z\",\"tasks\":{\"0_0\":\"5\"}}|>= 0",
    })
    void aMalformedRecordIsRefusedWithItsReason(String json, String reason) {
        LoadsRecord.MalformedException e = assertThrows(LoadsRecord.MalformedException.class, () -> LoadsRecord.parse(json));
        assertTrue(e.getMessage().contains(reason), e.getMessage());
    }
}
