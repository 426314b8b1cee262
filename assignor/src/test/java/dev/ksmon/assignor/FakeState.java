package dev.ksmon.assignor;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;
import org.apache.kafka.streams.state.HostInfo;

/** An ApplicationState built by hand, as Kafka Streams would hand it to an assignor. */
final class FakeState implements ApplicationState {

    final Map<ProcessId, KafkaStreamsState> clients = new TreeMap<>();
    final Map<TaskId, TaskInfo> tasks = new TreeMap<>();
    final Map<String, ProcessId> names = new HashMap<>();
    int standbys;

    static ProcessId pid(String name) {
        return new ProcessId(UUID.nameUUIDFromBytes(name.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }

    FakeState task(String id, boolean stateful) {
        TaskId t = TaskId.parse(id);
        tasks.put(t, new Info(t, stateful));
        return this;
    }

    FakeState client(String name, int threads, String rack, Set<String> active, Set<String> standby) {
        ProcessId p = pid(name);
        names.put(name, p);
        clients.put(p, new Client(p, threads, Optional.ofNullable(rack), ids(active), ids(standby), new HashMap<>()));
        return this;
    }

    /** The client reports {@code lag} for {@code task} (a lag above 0: the task is restoring there). */
    FakeState lag(String client, String task, long lag) {
        ((Client) clients.get(pid(client))).lags().put(TaskId.parse(task), lag);
        return this;
    }

    FakeState clientWithoutProcessId(String name) {
        clients.put(pid(name), new Client(null, 1, Optional.empty(), new TreeSet<>(), new TreeSet<>(), new HashMap<>()));
        return this;
    }

    private static SortedSet<TaskId> ids(Set<String> names) {
        SortedSet<TaskId> out = new TreeSet<>();
        names.forEach(n -> out.add(TaskId.parse(n)));
        return out;
    }

    @Override
    public Map<ProcessId, KafkaStreamsState> kafkaStreamsStates(boolean computeTaskLags) {
        return clients;
    }

    @Override
    public AssignmentConfigs assignmentConfigs() {
        return new AssignmentConfigs(0L, 2, standbys, 600_000L, List.of());
    }

    @Override
    public Map<TaskId, TaskInfo> allTasks() {
        return tasks;
    }

    record Info(TaskId id, boolean isStateful) implements TaskInfo {
        @Override
        public Set<String> stateStoreNames() {
            return isStateful ? Set.of("store") : Set.of();
        }

        @Override
        public Set<TaskTopicPartition> topicPartitions() {
            return Set.of();
        }
    }

    record Client(ProcessId processId, int numProcessingThreads, Optional<String> rackId,
                  SortedSet<TaskId> previousActiveTasks, SortedSet<TaskId> previousStandbyTasks,
                  Map<TaskId, Long> lags)
        implements KafkaStreamsState {
        @Override
        public SortedSet<String> consumerClientIds() {
            SortedSet<String> ids = new TreeSet<>();
            for (int n = 0; n < numProcessingThreads; n++) {
                ids.add(processId + "-StreamThread-" + (n + 1) + "-consumer");
            }
            return ids;
        }

        @Override
        public long lagFor(TaskId task) {
            if (lags.containsKey(task)) {
                return lags.get(task);
            }
            return previousActiveTasks.contains(task) ? 0 : 100;
        }

        @Override
        public SortedSet<TaskId> prevTasksByLag(String consumerClientId) {
            return new TreeSet<>(previousActiveTasks);
        }

        @Override
        public Map<TaskId, Long> statefulTasksToLagSums() {
            return Map.of();
        }

        @Override
        public Optional<HostInfo> hostInfo() {
            return Optional.empty();
        }

        @Override
        public Map<String, String> clientTags() {
            return Map.of();
        }
    }
}
