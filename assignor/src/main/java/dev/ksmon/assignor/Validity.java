package dev.ksmon.assignor;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;

/** The rules every assignment this assignor returns obeys; a breach is a bug, reported as one. */
final class Validity {

    private Validity() {
    }

    static void check(ApplicationState state, TaskAssignment assignment) {
        Set<ProcessId> known = state.kafkaStreamsStates(false).keySet();
        Map<TaskId, Integer> actives = new HashMap<>();
        for (KafkaStreamsAssignment a : assignment.assignment()) {
            if (!known.contains(a.processId())) {
                throw new IllegalStateException("assignment names unknown client " + a.processId());
            }
            for (AssignedTask t : a.tasks().values()) {
                if (!state.allTasks().containsKey(t.id())) {
                    throw new IllegalStateException("assignment names unknown task " + t.id());
                }
                if (t.type() == AssignedTask.Type.ACTIVE) {
                    actives.merge(t.id(), 1, Integer::sum);
                }
            }
        }
        for (TaskId t : state.allTasks().keySet()) {
            if (actives.getOrDefault(t, 0) != 1) {
                throw new IllegalStateException("task " + t + " has " + actives.getOrDefault(t, 0) + " active copies");
            }
        }
    }
}
