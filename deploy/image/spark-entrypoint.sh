#!/bin/bash
# The job image's entrypoint. Spark on Kubernetes starts its pods with the image's
# entrypoint and the first argument "driver" or "executor" (the contract Spark's
# own images implement); this turns those into spark-submit in client mode inside
# the driver pod, or the executor backend. Anything else runs as given, so
# `ksmon aggregate --config ...` or a shell work too.
set -euo pipefail

case "${1:-}" in
  driver)
    shift
    exec "${SPARK_HOME}/bin/spark-submit" \
      --deploy-mode client \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}" \
      "$@"
    ;;
  executor)
    shift
    # The driver passes the executor's JVM options as SPARK_JAVA_OPT_0, _1, ... in order.
    java_options=()
    while IFS= read -r option; do
      java_options+=("${option}")
    done < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
    exec "${JAVA_HOME}/bin/java" \
      "${java_options[@]}" \
      "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" \
      -cp "${SPARK_CONF_DIR:-${SPARK_HOME}/conf}:${SPARK_HOME}/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" \
      --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" \
      --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
      --podName "${SPARK_EXECUTOR_POD_NAME}"
    ;;
  *)
    exec "$@"
    ;;
esac
