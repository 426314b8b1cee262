"""The aggregation job: snapshots in, findings and metrics out (PySpark).

Data flow, one module per step: ``source`` (snapshot topic, spool directory
or recorded files) -> ``parse`` (JSON -> typed rows, bad ones quarantined)
-> ``history`` (a bounded recent-history table under the checkpoint
directory) -> ``tables`` (typed tables: groups, members, units, partitions,
changelogs, sidecar) -> ``rates`` and ``detectors`` (pure DataFrame -> DataFrame
functions over those tables, evaluated at given event times) -> ``evaluate``
(one call that runs them all, the code path shared by streaming and replay)
-> ``hysteresis`` (open/close findings, no Spark) -> ``exposition`` (the
job's /metrics) and ``findings_topic``. ``job`` and ``replay`` are the edges
that run it.

Everything here but ``hysteresis``, ``state``, ``exposition`` and
``findings_topic`` (and ``commands``, which imports Spark only when a job
starts) imports pyspark; the agent daemon never imports this package, and
``ksmon explain`` only its Spark-free findings-topic reader.
"""
